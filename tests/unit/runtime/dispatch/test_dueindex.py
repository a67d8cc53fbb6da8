"""The due index: one heap, earliest first, with lazy invalidation of rescheduled keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.dueindex import DueIndex

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_pops_due_keys_earliest_first_and_keeps_the_future() -> None:
    index: DueIndex[str] = DueIndex()
    index.set("c", at(30))
    index.set("a", at(10))
    index.set("b", at(20))
    assert index.next_due() == at(10)
    assert index.pop_due(at(20)) == ["a", "b"]
    assert len(index) == 1
    assert index.next_due() == at(30)


def test_rescheduling_invalidates_the_old_entry() -> None:
    index: DueIndex[str] = DueIndex()
    index.set("a", at(10))
    index.set("a", at(50))
    assert index.pop_due(at(20)) == []
    assert index.next_due() == at(50)
    assert index.pop_due(at(60)) == ["a"]
    assert index.pop_due(at(60)) == []


def test_advance_only_moves_earlier() -> None:
    index: DueIndex[str] = DueIndex()
    index.set("a", at(10))
    index.advance("a", at(30))
    assert index.next_due() == at(10)
    index.advance("a", at(5))
    assert index.next_due() == at(5)
    index.advance("new", at(7))
    assert index.pop_due(at(100)) == ["a", "new"]


def test_discarded_keys_never_surface() -> None:
    index: DueIndex[str] = DueIndex()
    index.set("a", at(1))
    index.set("b", at(2))
    index.discard("a")
    assert "a" not in index
    assert index.pop_due(at(10)) == ["b"]


def test_limit_bounds_one_pop() -> None:
    index: DueIndex[int] = DueIndex()
    for i in range(10):
        index.set(i, at(i))
    assert index.pop_due(at(100), limit=3) == [0, 1, 2]
    assert len(index) == 7


def test_many_reschedules_keep_the_heap_compact() -> None:
    index: DueIndex[str] = DueIndex()
    for i in range(10_000):
        index.set("hot", at(i))
    assert len(index._heap) < 200
    assert index.pop_due(at(10_000)) == ["hot"]


def test_count_until_counts_live_keys_due_by_then_up_to_a_limit() -> None:
    index: DueIndex[str] = DueIndex()
    for i in range(50):
        index.set(f"k{i}", T0 + timedelta(seconds=i % 10))
    index.set("k0", T0 + timedelta(hours=1))  # its old entry (due at T0) is stale now
    assert index.count_until(T0, limit=100) == 4  # k10, k20, k30, k40
    assert index.count_until(T0 + timedelta(seconds=4), limit=100) == 24
    assert index.count_until(T0 + timedelta(seconds=4), limit=7) == 7
    assert index.count_until(T0 - timedelta(seconds=1), limit=100) == 0
