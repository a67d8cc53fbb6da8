"""Event series: repeats of (object, type, reason) aggregated into one Event whose count grows.

The first tests drive :class:`SeriesBook` alone (no API, no sender); the others go through the recorder with a
fake API, its sender driven with ``step()``. Clocks are injected: no test waits for real time to pass.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from sundial.runtime.acting.series import SeriesBook
from sundial.runtime.serving.metrics import Metrics

from .eventfakes import INTERVAL, T0, Call, Clock, FakeApi, counted, meta, recorder


def book(clock: Clock, metrics: Metrics, **kwargs: int) -> SeriesBook:
    return SeriesBook(results=metrics.events.results, clock=clock.now, monotonic=clock.monotonic, **kwargs)


def test_the_book_counts_repeats_into_one_series_until_it_is_created() -> None:
    clock, metrics = Clock(), Metrics()
    series = book(clock, metrics)
    series.record(meta(), "Normal", "SawCompletedJob", "run 1", guard=None)
    clock.advance(5)
    series.record(meta(), "Normal", "SawCompletedJob", "run 2", guard=None)
    assert series.queued == 1
    assert series.wakeup.is_set()
    taken = series.next_create()
    assert taken is not None
    key, one = taken
    assert key == ("team-a", "uid-nightly", "Normal", "SawCompletedJob")
    assert (one.pending, one.message, one.first, one.last) == (2, "run 2", T0, T0 + timedelta(seconds=5))
    assert series.next_create() is None  # taken once
    assert counted(metrics, "aggregated") == 1


def test_the_book_owes_a_patch_once_per_interval_after_the_create() -> None:
    clock, metrics = Clock(), Metrics()
    series = book(clock, metrics)
    series.record(meta(), "Normal", "SuccessfulCreate", "a", guard=None)
    taken = series.next_create()
    assert taken is not None
    key, one = taken
    one.pending = 0  # what the sender does before it writes
    series.unqueue(key)
    series.created(key, one, name="nightly.1", count=1, interval=INTERVAL)
    assert series.next_due_in(clock.monotonic()) is None  # nothing pending
    series.record(meta(), "Normal", "SuccessfulCreate", "b", guard=None)
    assert series.next_due(clock.monotonic()) is None
    assert series.next_due_in(clock.monotonic()) == pytest.approx(INTERVAL)
    clock.advance(INTERVAL)
    assert series.next_due(clock.monotonic()) == (key, one)
    assert (one.name, one.count, one.pending) == ("nightly.1", 1, 1)


def test_an_expired_series_is_created_again_before_other_queued_creates() -> None:
    clock, metrics = Clock(), Metrics()
    series = book(clock, metrics)
    series.record(meta("a"), "Normal", "SuccessfulCreate", "m", guard=None)
    taken = series.next_create()
    assert taken is not None
    key, one = taken
    series.unqueue(key)
    series.created(key, one, name="a.1", count=1, interval=INTERVAL)
    series.record(meta("b"), "Normal", "SuccessfulCreate", "m", guard=None)
    series.gone(key, one)
    assert series.next_create() == (key, one)
    assert (one.name, one.count) == ("", 0)


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
