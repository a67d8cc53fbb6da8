"""``assembly.build``: the parts are made from the settings and wired to each other, without a cluster;
``process.follow_leases`` applies what the lease thread reports; ``process.run`` stops on the first
SIGTERM/SIGINT (exit code 0) or a failed part (exit code 1), and a further signal during the shutdown changes
nothing.

``build`` only reads a kubeconfig (here: one naming an address nothing listens on) and sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from sundial.runtime import assembly, fencing, process
from sundial.runtime.settings import (
    ApiSettings,
    DispatchSettings,
    EventSettings,
    LeaseSettings,
    ProbeSettings,
    Settings,
)
from sundial.runtime.watch.store import Key

KEY: Key = ("team-a", "nightly")
UID = "0b7c6c1e-2f7e-4c55-9d2e-5b1b4f3a9a10"
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:9", insecure-skip-tls-verify: true}}]
users: [{name: someone, user: {token: not-a-real-token}}]
contexts: [{name: here, context: {cluster: nowhere, user: someone}}]
current-context: here
"""


def never_plans(*_: Any) -> Any:
    raise AssertionError("no pass plans in these tests")


def scheduled_job() -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"namespace": KEY[0], "name": KEY[1], "uid": UID, "resourceVersion": "1"},
        "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {}}},
    }


def settings(tmp_path: Path, *, qps: float = 50.0, burst: int = 100, **groups: Any) -> Settings:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG, encoding="utf-8")
    return Settings(identity="replica-1", api=ApiSettings(qps=qps, burst=burst, kubeconfig=kubeconfig), **groups)


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[assembly.Parts]:
    built = await assembly.build(settings(tmp_path, leases=LeaseSettings(shards=3)), planner=never_plans)
    yield built
    await built.client.close()


async def test_the_settings_reach_the_parts(tmp_path: Path) -> None:
    chosen = settings(
        tmp_path,
        qps=7,
        burst=9,
        leases=LeaseSettings(shards=4),
        events=EventSettings(qps=3, burst=4, series_interval=30),
        dispatch=DispatchSettings(max_concurrency=5),
        probes=ProbeSettings(health_port=18081, metrics_port=0),
    )
    built = await assembly.build(chosen, planner=never_plans)
    try:
        assert built.settings is chosen
        assert built.leadership.shards == 4
        assert (built.api._req._bucket._rate, built.api._req._bucket.available) == (7, pytest.approx(9))
        assert built.recorder._api._req._bucket._rate == 3
        assert built.recorder._interval == 30
        assert built.dispatcher._slots._value == 5
        assert built.apps == []  # /metrics off; the probes are served on their own thread
        assert built.probes is not None and built.probes.port == 18081
        assert built.webhook is None  # --webhook-port 0
        assert [informer.plural for informer in built.informers] == [
            "scheduledjobs", "jobs", "schedulecalendars",
            "validatingadmissionpolicies", "validatingadmissionpolicybindings",  # --fencing-policy sundial-fencing
        ]  # fmt: skip
        assert [i.plural for i in built.readiness._informers] == ["scheduledjobs", "jobs", "schedulecalendars"]
        assert built.lease_changes.empty()
        assert not built.stopping.is_set()
    finally:
        await built.client.close()


async def test_watch_events_go_into_the_store_and_wake_the_dispatcher(parts: assembly.Parts) -> None:
    parts.informers[0].sink.apply("ADDED", scheduled_job())
    assert parts.store.uid(KEY) == UID
    assert KEY in parts.dispatcher.index
    parts.informers[0].sink.apply("DELETED", scheduled_job())
    assert parts.store.scheduled_job(KEY) is None
    assert KEY not in parts.dispatcher.index


async def test_the_dispatcher_runs_passes_of_the_reconciler_counted_in_flight_for_their_shard(
    parts: assembly.Parts, monkeypatch: pytest.MonkeyPatch
) -> None:
    shard = fencing.shard_of(UID, 3)
    seen: list[tuple[Key, bool]] = []

    async def reconcile(key: Key) -> datetime | None:
        drained = asyncio.ensure_future(parts.in_flight.drained(shard))
        await asyncio.sleep(0)
        seen.append((key, drained.done()))
        drained.cancel()
        parts.stopping.set()
        return None

    monkeypatch.setattr(parts.reconciler, "reconcile", reconcile)
    parts.informers[0].sink.apply("ADDED", scheduled_job())
    await asyncio.wait_for(parts.dispatcher.run(parts.stopping), timeout=10)
    assert seen == [(KEY, False)]  # in flight during the pass: the shard had not drained
    await asyncio.wait_for(parts.in_flight.drained(shard), timeout=1)


async def test_a_shard_this_replica_starts_holding_wakes_its_objects(parts: assembly.Parts) -> None:
    parts.informers[0].sink.apply("ADDED", scheduled_job())
    parts.dispatcher.forget(KEY)
    shard = fencing.shard_of(UID, 3)
    following = asyncio.create_task(process.follow_leases(parts))
    try:
        for other in range(3):
            if other != shard:
                parts.lease_changes.put_nowait((other, True))
        parts.lease_changes.put_nowait((shard, False))
        await _drained(parts.lease_changes)
        assert KEY not in parts.dispatcher.index  # another shard, or a shard lost
        parts.lease_changes.put_nowait((shard, True))
        await _drained(parts.lease_changes)
        assert KEY in parts.dispatcher.index
        held = parts.metrics.registry.get_sample_value("sundial_leases_held")
        assert held == parts.leadership.held() == 0  # the gauge follows the Leadership (nothing held here)
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)


def offline(tmp_path: Path) -> Settings:
    """No port served and Leases renewed fast: a run that starts and stops quickly against nowhere."""
    return settings(
        tmp_path,
        leases=LeaseSettings(shards=1, duration=3.0, renew_deadline=2.0, retry_period=0.5),
        probes=ProbeSettings(health_port=0, metrics_port=0),
    )


async def _until(condition: Any, *, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_the_first_signal_stops_the_operator_which_shuts_down_and_exits_0(
    tmp_path: Path, signum: signal.Signals
) -> None:
    built = await assembly.build(offline(tmp_path), planner=never_plans)
    running = asyncio.create_task(process.run(built))
    await _until(built.lease_thread._thread.is_alive)  # started: the handlers are installed
    assert not built.stopping.is_set()
    os.kill(os.getpid(), signum)
    await _until(built.stopping.is_set)  # acting stops at once
    assert await asyncio.wait_for(running, timeout=30) == 0
    assert built.client.rest_client.pool_manager.closed  # the last step of the shutdown ran
    # Out of run, the loop's handlers are gone: the process's defaults are back.
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


async def test_a_second_signal_during_the_shutdown_is_logged_and_changes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stopping = asyncio.Event()
    with caplog.at_level(logging.INFO, logger=process.__name__), process.handle_signals(stopping):
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.wait_for(stopping.wait(), timeout=10)
        os.kill(os.getpid(), signal.SIGINT)  # the default SIGINT handler would raise KeyboardInterrupt here
        await _until(lambda: len(caplog.records) == 2)
        assert stopping.is_set()
    assert [record.getMessage() for record in caplog.records] == [
        "SIGTERM: stopping",
        "SIGINT during shutdown: already stopping; the shutdown ends on its own",
    ]
    assert caplog.records[1].levelno == logging.WARNING


async def test_a_failed_part_stops_the_operator_with_exit_code_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = await assembly.build(offline(tmp_path), planner=never_plans)

    async def broken() -> None:
        raise RuntimeError("the informer broke")

    monkeypatch.setattr(built.informers[1], "run", broken)
    assert await asyncio.wait_for(process.run(built), timeout=30) == 1
    assert built.stopping.is_set()


async def test_a_part_that_ends_without_failing_does_not_stop_the_operator() -> None:
    stopping = asyncio.Event()
    ended = asyncio.create_task(asyncio.sleep(0))
    waiting = asyncio.create_task(process._until_stopped(stopping, {ended}))
    await asyncio.wait_for(ended, timeout=10)
    await asyncio.sleep(0)
    assert not waiting.done()
    stopping.set()
    assert await asyncio.wait_for(waiting, timeout=10) == 0


async def _drained(queue: asyncio.Queue[assembly.LeaseChange]) -> None:
    """Until the follower took everything queued and handled it (it handles an item before it takes the next)."""
    async with asyncio.timeout(10):
        while not queue.empty():
            await asyncio.sleep(0)
        await asyncio.sleep(0)
