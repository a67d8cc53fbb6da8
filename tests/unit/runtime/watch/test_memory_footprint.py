"""What keeps the operator's memory flat at scale: heap trims, no per-object entries for idle objects."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from sundial.model.enums import Trigger
from sundial.model.status import ActiveRun, ScheduledJobStatus
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.coordination import electors
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.serving import heap
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.watch.store import Store


def body(uid: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "ns"}}


def test_trim_works_on_this_c_library() -> None:
    if not heap.available():
        pytest.skip("no malloc_trim in this C library")
    assert heap.trim() is True


async def test_trims_run_periodically_until_stopping(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def fake_trim(pad: int) -> int:
        calls.append(pad)
        return 1

    monkeypatch.setattr(heap, "_TRIM", fake_trim)
    stopping = asyncio.Event()
    task = asyncio.create_task(heap.trim_periodically(stopping, interval=0.01))
    await asyncio.sleep(0.1)
    stopping.set()
    await asyncio.wait_for(task, timeout=1)
    assert len(calls) >= 2 and set(calls) == {0}


async def test_without_malloc_trim_nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_TRIM", None)
    assert heap.trim() is False
    await asyncio.wait_for(heap.trim_periodically(asyncio.Event(), interval=0.01), timeout=1)


def one_shard(elector: Any) -> Leadership:
    """A one-shard Leadership made as ``sundial run`` makes it (never run here: its member Lease is unused)."""
    sharding = Sharding(api=cast(Any, None), member=cast(electors.LeaseElector, object()), prefix="s", retry_period=1.0)
    return Leadership([cast(electors.LeaseElector, elector)], sharding=sharding)


def test_active_runs_are_counted_without_an_entry_per_idle_object() -> None:
    class Elector:
        holding, transitions, record = True, 1, None

    now = datetime(2026, 11, 29, tzinfo=UTC)
    metrics = Metrics()
    rec = Reconciler(
        store=Store(), api=cast(Any, None), leadership=one_shard(Elector()),
        planner=cast(Any, None), events=cast(Any, None), metrics=metrics, clock=lambda: now,
    )  # fmt: skip

    def run(job: str) -> ActiveRun:
        return ActiveRun(scheduled_time=now, attempt=1, job=job, trigger=Trigger.SCHEDULE, claimed_at=now)

    def gauge() -> float:
        value = metrics.registry.get_sample_value("sundial_active_runs")
        assert value is not None
        return value

    for i in range(100):
        rec._settle(("ns", f"idle-{i}"), ScheduledJobStatus())
    rec._settle(("ns", "a"), ScheduledJobStatus(active=(run("a-1"), run("a-2"))))
    rec._settle(("ns", "b"), ScheduledJobStatus(active=(run("b-1"),)))
    assert gauge() == 3
    assert len(rec._active) == 2  # no entry for the 100 idle objects
    rec._settle(("ns", "a"), ScheduledJobStatus(active=(run("a-2"),)))
    assert gauge() == 2
    rec.forget(("ns", "b"))
    rec.forget(("ns", "idle-1"))
    assert gauge() == 1
    rec._settle(("ns", "a"), ScheduledJobStatus())
    assert gauge() == 0 and rec._active == {}
