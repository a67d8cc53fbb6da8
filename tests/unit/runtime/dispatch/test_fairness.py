"""Round-robin across namespaces: a flood in one namespace cannot starve another."""

from __future__ import annotations

from sundial.runtime.dispatch.fairness import FairQueue


def test_alternates_between_namespaces() -> None:
    queue = FairQueue()
    for i in range(10_000):
        queue.push(("flood", f"sj-{i}"))
    queue.push(("quiet", "one"))
    queue.push(("other", "two"))
    first = [queue.pop() for _ in range(3)]
    assert first == [("flood", "sj-0"), ("quiet", "one"), ("other", "two")]
    assert queue.pop() == ("flood", "sj-1")
    assert len(queue) == 9_998


def test_keeps_arrival_order_within_a_namespace_and_queues_a_key_once() -> None:
    queue = FairQueue()
    queue.push(("a", "x"))
    queue.push(("a", "y"))
    queue.push(("a", "x"))
    assert len(queue) == 2
    assert [queue.pop(), queue.pop(), queue.pop()] == [("a", "x"), ("a", "y"), None]


def test_a_namespace_that_empties_rejoins_at_the_back() -> None:
    queue = FairQueue()
    queue.push(("a", "1"))
    queue.push(("b", "1"))
    queue.push(("b", "2"))
    assert queue.pop() == ("a", "1")
    queue.push(("a", "2"))
    assert [queue.pop(), queue.pop(), queue.pop()] == [("b", "1"), ("a", "2"), ("b", "2")]
