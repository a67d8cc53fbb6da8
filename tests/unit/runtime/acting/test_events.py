"""EventRecorder: Events off the critical path, aggregated into series, on a budget of their own.

Clocks are injected and the sender is driven with ``step()``: no test waits for real time to pass.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial import model
from sundial.kube import errors, requests, results
from sundial.runtime.acting import events
from sundial.runtime.acting.events import EventRecorder
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings

T0 = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)
INTERVAL = 60.0


def meta(name: str = "nightly", uid: str | None = None) -> model.ObjectMeta:
    return model.ObjectMeta(name=name, namespace="team-a", uid=uid or f"uid-{name}", resource_version="7")


class Clock:
    def __init__(self) -> None:
        self.seconds = 1000.0
        self.wall = T0

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.seconds += seconds
        self.wall += timedelta(seconds=seconds)


@dataclass
class Call:
    verb: str
    reason_or_name: str
    count: int
    message: str
    first: datetime | None = None
    last: datetime | None = None


def _send_guard() -> None:
    """What the real requester does right before a request goes out."""
    guard = requests.SEND_GUARD.get()
    if guard is not None:
        guard()


@dataclass
class FakeApi:
    calls: list[Call] = field(default_factory=list)
    create_errors: list[BaseException] = field(default_factory=list)
    patch_results: list[results.PatchResult | BaseException] = field(default_factory=list)
    created: int = 0

    async def create_event(
        self,
        *,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        first: datetime,
        last: datetime,
        count: int,
        instance: str,
    ) -> str:
        assert instance == "replica-1"
        _send_guard()
        self.calls.append(Call("create", reason, count, message, first, last))
        if self.create_errors:
            raise self.create_errors.pop(0)
        self.created += 1
        return f"{involved.name}.{self.created}"

    async def patch_event(
        self, *, namespace: str, name: str, count: int, last_timestamp: datetime, message: str
    ) -> results.PatchResult:
        _send_guard()
        self.calls.append(Call("patch", name, count, message, last=last_timestamp))
        if self.patch_results:
            result = self.patch_results.pop(0)
            if isinstance(result, BaseException):
                raise result
            return result
        return results.Done()


def recorder(api: Any, clock: Clock, metrics: Metrics | None = None, **kwargs: Any) -> EventRecorder:
    return EventRecorder(
        api=api,
        metrics=metrics or Metrics(),
        identity="replica-1",
        series_interval=INTERVAL,
        clock=clock.now,
        monotonic=clock.monotonic,
        **kwargs,
    )


def counted(metrics: Metrics, result: str) -> float:
    return metrics.registry.get_sample_value("sundial_events_total", {"result": result}) or 0.0


async def test_the_first_occurrence_creates_an_event() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics)
    assert rec.record(meta(), "Normal", "SuccessfulCreate", "Created job nightly-1") is None  # synchronous
    assert api.calls == []  # nothing is sent by record() itself
    assert await rec.step() is None
    assert api.calls == [Call("create", "SuccessfulCreate", 1, "Created job nightly-1", T0, T0)]
    assert counted(metrics, "created") == 1


async def test_occurrences_before_the_create_is_sent_ride_on_it() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    for i in range(3):
        rec.record(meta(), "Warning", "MissedSchedule", f"missed {i}")
        clock.advance(1)
    await rec.step()
    assert api.calls == [Call("create", "MissedSchedule", 3, "missed 2", T0, T0 + timedelta(seconds=2))]


async def test_repeats_within_the_interval_make_no_call_then_one_patch_with_the_summed_count() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics)
    rec.record(meta(), "Normal", "SawCompletedJob", "run 1")
    await rec.step()
    for i in range(2, 6):
        clock.advance(10)
        rec.record(meta(), "Normal", "SawCompletedJob", f"run {i}")
        assert await rec.step() == pytest.approx(INTERVAL - 10 * (i - 1))
    assert [call.verb for call in api.calls] == ["create"]
    assert counted(metrics, "aggregated") == 4

    clock.advance(20)  # the interval since the create has passed
    assert await rec.step() is None
    assert api.calls[1:] == [Call("patch", "nightly.1", 5, "run 5", last=T0 + timedelta(seconds=40))]
    assert counted(metrics, "patched") == 1
    assert await rec.step() is None
    assert len(api.calls) == 2

    clock.advance(5)  # the next repeat waits for the interval since the PATCH
    rec.record(meta(), "Normal", "SawCompletedJob", "run 6")
    assert await rec.step() == pytest.approx(INTERVAL - 5)
    clock.advance(INTERVAL)
    await rec.step()
    assert api.calls[2] == Call("patch", "nightly.1", 6, "run 6", last=T0 + timedelta(seconds=65))


async def test_a_repeat_after_a_quiet_interval_is_written_at_once() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    rec.record(meta(), "Normal", "SuccessfulCreate", "a")
    await rec.step()
    clock.advance(3600 * 24)
    rec.record(meta(), "Normal", "SuccessfulCreate", "b")
    await rec.step()
    assert [(call.verb, call.count) for call in api.calls] == [("create", 1), ("patch", 2)]


async def test_series_are_per_object_type_and_reason() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    rec.record(meta("b"), "Normal", "SuccessfulCreate", "m")
    rec.record(meta("a", uid="uid-a2"), "Normal", "SuccessfulCreate", "same name, new object")
    rec.record(meta("a"), "Normal", "SawCompletedJob", "m")
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "again")
    await rec.step()
    assert [(call.reason_or_name, call.count) for call in api.calls] == [
        ("SuccessfulCreate", 2),
        ("SuccessfulCreate", 1),
        ("SuccessfulCreate", 1),
        ("SawCompletedJob", 1),
    ]


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


async def test_a_full_queue_drops_new_series_and_counts_them() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics, max_queue=2)
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    rec.record(meta("b"), "Normal", "SuccessfulCreate", "m")
    rec.record(meta("c"), "Warning", "DeadLettered", "m")  # dropped
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")  # a queued series still counts up
    assert rec.queued == 2
    assert counted(metrics, "dropped") == 1
    assert counted(metrics, "aggregated") == 1
    await rec.step()
    assert [(call.count, call.verb) for call in api.calls] == [(2, "create"), (1, "create")]
    rec.record(meta("c"), "Warning", "DeadLettered", "m")  # room again
    await rec.step()
    assert len(api.calls) == 3


async def test_a_warning_is_created_before_queued_normal_events() -> None:
    api, clock = FakeApi(), Clock()
    rec = recorder(api, clock)
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    rec.record(meta("b"), "Normal", "SawCompletedJob", "m")
    rec.record(meta("c"), "Warning", "DeadLettered", "m")
    await rec.step()
    assert [call.reason_or_name for call in api.calls] == ["DeadLettered", "SuccessfulCreate", "SawCompletedJob"]


async def test_an_evicted_series_drops_its_pending_count_and_starts_over() -> None:
    api, clock, metrics = FakeApi(), Clock(), Metrics()
    rec = recorder(api, clock, metrics, max_series=1)
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    await rec.step()
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")  # pending, not due
    rec.record(meta("b"), "Normal", "SuccessfulCreate", "m")
    await rec.step()  # b's create evicts a
    assert counted(metrics, "dropped") == 1
    rec.record(meta("a"), "Normal", "SuccessfulCreate", "m")
    clock.advance(INTERVAL)
    await rec.step()
    assert [(call.verb, call.reason_or_name, call.count) for call in api.calls][-1] == ("create", "SuccessfulCreate", 1)
    assert [call.verb for call in api.calls] == ["create", "create", "create"]


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
    monkeypatch.setattr(events, "SHUTDOWN_FLUSH", 0.01)
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
    settings = Settings(identity="replica-1", qps=1, burst=1, event_qps=7, event_burst=3)
    metrics = Metrics()
    api = events.events_api(api_client=object(), settings=settings, metrics=metrics)
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
        ({"event_qps": 0}, "--event-qps"),
        ({"event_burst": 0}, "--event-burst"),
        ({"event_series_interval": 0}, "--event-series-interval"),
        ({"event_series_interval": 7200}, "--event-series-interval"),
    ],
)
def test_event_settings_are_validated(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings(identity="me", **flags)


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
