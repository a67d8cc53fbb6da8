"""The Event sender: one background task on a token bucket of its own, best effort, fenced, bounded at shutdown.

Clocks are injected and the sender is driven with ``step()``: no test waits for real time to pass.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest

from sundial.kube import errors, results
from sundial.runtime.acting import sender
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import ApiSettings, EventSettings, Settings

from .eventfakes import INTERVAL, T0, Call, Clock, FakeApi, counted, meta, recorder


async def test_a_patch_answered_404_creates_a_new_event_for_the_series() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics)
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 1")
    await rec.step()
    clock.advance(3700)  # past the API server's Event TTL
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 2")
    clock.advance(1)
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 3")
    api.patch_results = [results.Gone()]
    await rec.step()
    first = T0 + timedelta(seconds=3700)
    assert api.calls[1:] == [
        Call("patch", "nightly.1", 3, "run 3", last=first + timedelta(seconds=1)),
        Call("create", "SuccessfulCreate", 2, "run 3", first, first + timedelta(seconds=1)),
    ]
    clock.advance(INTERVAL)
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 4")
    await rec.step()
    assert api.calls[3] == Call("patch", "nightly.2", 3, "run 4", last=first + timedelta(seconds=61))
    assert counted(metrics, "created") == 2


async def test_api_errors_never_propagate_and_are_not_retried_in_a_loop() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics)
    api.create_errors = [errors.TransientError(code=503, reason="ServiceUnavailable", message="down")]
    rec.record(meta(), "Normal", "SuccessfulCreate", "lost")
    assert await rec.step() is None  # the failed create is forgotten
    assert counted(metrics, "failed") == 1
    rec.record(meta(), "Normal", "SuccessfulCreate", "next")  # the next occurrence tries again
    await rec.step()
    assert [call.message for call in api.calls] == ["lost", "next"]

    clock.advance(INTERVAL)
    rec.record(meta(), "Normal", "SuccessfulCreate", "kept")
    api.patch_results = [RuntimeError("a bug in the client")]
    assert await rec.step() == pytest.approx(INTERVAL)  # the count waits for the next interval
    assert await rec.step() == pytest.approx(INTERVAL)
    assert [call.verb for call in api.calls] == ["create", "create", "patch"]
    clock.advance(INTERVAL)
    await rec.step()
    assert api.calls[-1] == Call("patch", "nightly.1", 2, "kept", last=T0 + timedelta(seconds=INTERVAL))
    assert counted(metrics, "failed") == 2


async def test_shutdown_flushes_what_is_pending() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    await rec.step()
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")  # pending, not due for a minute
    rec.record(meta("b"), "Warning", "DeadLettered", "m")  # queued
    stopping = asyncio.Event()
    stopping.set()
    await rec.run(stopping)
    assert [(call.verb, call.reason_or_name, call.count) for call in api.calls[1:]] == [
        ("create", "DeadLettered", 1),
        ("patch", "a.1", 2),
    ]


class HangingApi(FakeApi):
    async def create_event(self, **kwargs: Any) -> str:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_shutdown_never_hangs_on_the_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sender, "SHUTDOWN_FLUSH", 0.01)
    rec = recorder(HangingApi(), Clock())
    rec.record(meta(), "Normal", "SuccessfulCreate", "m")
    stopping = asyncio.Event()
    stopping.set()
    await asyncio.wait_for(rec.run(stopping), timeout=5)


async def test_the_background_task_sends_as_events_are_recorded() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    stopping = asyncio.Event()
    task = asyncio.create_task(rec.run(stopping))
    rec.record(meta(), "Normal", "SuccessfulCreate", "m")
    for _ in range(20):
        await asyncio.sleep(0)  # yield to the sender; no time passes
    assert [call.verb for call in api.calls] == ["create"]
    stopping.set()
    await asyncio.wait_for(task, timeout=5)


# The Event API: a token bucket of its own --------------------------------------------------------------


class _Response:
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.reason, self._body = status, "", json.dumps(body).encode()
        self.headers: dict[str, str] = {}

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None


class _Core:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def create_namespaced_event(self, namespace: str, body: dict[str, Any], **_: Any) -> _Response:
        self.created.append(body)
        return _Response(201, {"metadata": {"name": f"ev-{len(self.created)}", "namespace": namespace}})


async def test_events_spend_a_token_bucket_of_their_own_and_are_observed() -> None:
    settings = Settings(identity="replica-1", api=ApiSettings(qps=1, burst=1), events=EventSettings(qps=7, burst=3))
    metrics = Metrics()
    api = sender.events_api(api_client=object(), settings=settings.events, metrics=metrics)
    core = _Core()
    api._core = core
    bucket = api._req._bucket
    assert bucket._rate == 7 and bucket.available == pytest.approx(3)  # not --qps/--burst
    rec = recorder(api, Clock(), metrics)
    for name in ("a", "b", "c"):
        rec.record(meta(name), "Normal", "SuccessfulCreate", "m")
    await asyncio.wait_for(rec.step(), timeout=5)  # the burst of 3 is there: no wait at --qps 1/--burst 1
    assert [body["count"] for body in core.created] == [1, 1, 1]
    assert bucket.available < 0.1
    sample = metrics.registry.get_sample_value(
        "sundial_api_requests_total", {"verb": "create", "resource": "events", "code": "201"}
    )
    assert sample == 3


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"qps": 0}, "--event-qps"),
        ({"burst": 0}, "--event-burst"),
        ({"series_interval": 0}, "--event-series-interval"),
        ({"series_interval": 7200}, "--event-series-interval"),
    ],
)
def test_event_settings_are_validated(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EventSettings(**flags)


async def test_a_replica_that_lost_the_shard_drops_its_queued_events_instead_of_writing() -> None:
    """A SIGSTOPped holder resumes with Events queued: the guard (the reconciler's Lease check) runs right
    before each send, so nothing is written - the fencing every other write has."""
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics)
    acting = [True]

    def guard() -> None:
        if not acting[0]:
            raise NotActingError("not holding shard 0")

    rec.record(meta(), "Normal", "SuccessfulCreate", "Created job nightly-1", guard=guard)
    await rec.step()
    assert [call.verb for call in api.calls] == ["create"]
    rec.record(meta(), "Normal", "SuccessfulCreate", "Created job nightly-2", guard=guard)
    rec.record(meta(uid="other"), "Warning", "MissedSchedule", "missed", guard=guard)
    acting[0] = False  # the Lease moved on while the occurrences waited
    clock.advance(INTERVAL + 1)
    await rec.step()
    await rec.step()
    assert [call.verb for call in api.calls] == ["create"]  # neither the patch nor the new create went out
    assert counted(metrics, "dropped") == 2


async def test_events_carry_the_latest_token_and_a_refusal_by_the_fencing_policy_gives_the_shard_up() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    lost: list[str] = []
    rec = recorder(api, clock, metrics, on_fenced=lost.append)
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 1", token="0-4")
    await rec.step()
    clock.advance(INTERVAL)
    rec.record(meta(), "Normal", "SuccessfulCreate", "run 2", token="0-5")  # the PATCH carries the newer token
    await rec.step()
    assert api.tokens == ["0-4", "0-5"]

    api.create_errors = [errors.FencedError(code=403, reason="Forbidden", message="sundial.dev/fenced: stale")]
    rec.record(meta(), "Warning", "MissedSchedule", "late", token="0-5")
    await rec.step()
    assert lost == ["0-5"]
    assert counted(metrics, "dropped") == 1
    assert metrics.fencing.fenced_writes.labels(kind="event")._value.get() == 1
