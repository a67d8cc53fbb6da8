"""spec.priority under contention: higher first, ageing so nothing starves, namespaces take turns within one.

The clock is a list the tests step by hand: no timing assertions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.fairness import AGEING_STEP, PriorityQueue
from sundial.runtime.watch.store import Store, priority_of

MIDNIGHT = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = MIDNIGHT

    def __call__(self) -> datetime:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def drain(queue: PriorityQueue) -> list[tuple[str, str]]:
    found = []
    while (key := queue.pop()) is not None:
        found.append(key)
    return found


def test_higher_priority_goes_first_when_keys_arrive_together() -> None:
    queue = PriorityQueue(clock=Clock())
    queue.push(("a", "low"), priority=-5)
    queue.push(("a", "normal"))
    queue.push(("a", "high"), priority=10)
    assert drain(queue) == [("a", "high"), ("a", "normal"), ("a", "low")]


def test_within_a_priority_namespaces_take_turns_and_arrival_order_holds() -> None:
    queue = PriorityQueue(clock=Clock())
    for i in range(3):
        queue.push(("flood", f"sj-{i}"), priority=5)
    queue.push(("quiet", "one"), priority=5)
    queue.push(("flood", "background"))
    assert drain(queue) == [
        ("flood", "sj-0"),
        ("quiet", "one"),
        ("flood", "sj-1"),
        ("flood", "sj-2"),
        ("flood", "background"),
    ]


def test_a_key_is_queued_once_with_its_first_priority() -> None:
    queue = PriorityQueue(clock=Clock())
    queue.push(("a", "x"), priority=3)
    queue.push(("a", "x"), priority=9)
    assert len(queue) == 1 and ("a", "x") in queue
    assert drain(queue) == [("a", "x")] and len(queue) == 0


def test_a_waiting_key_ages_past_a_higher_priority_that_just_arrived() -> None:
    clock = Clock()
    queue = PriorityQueue(clock=clock)
    queue.push(("a", "old-low"))
    clock.step(11 * AGEING_STEP.total_seconds())
    queue.push(("a", "new-high"), priority=10)
    assert queue.effective(0, waited_since=MIDNIGHT) == 11
    assert queue.pop() == ("a", "old-low")


def test_a_higher_priority_still_wins_against_a_shorter_wait() -> None:
    clock = Clock()
    queue = PriorityQueue(clock=clock)
    queue.push(("a", "old-low"))
    clock.step(9 * AGEING_STEP.total_seconds())
    queue.push(("a", "new-high"), priority=10)
    assert queue.pop() == ("a", "new-high")


def test_no_starvation_under_a_steady_stream_of_high_priority_keys() -> None:
    clock = Clock()
    queue = PriorityQueue(clock=clock)
    queue.push(("batch", "low"), priority=-100)
    served: list[tuple[str, str]] = []
    for i in range(400):  # one high-priority key arrives and one key is served per ageing step
        queue.push(("urgent", f"high-{i}"), priority=100)
        served.append(queue.pop() or ("", ""))
        clock.step(AGEING_STEP.total_seconds())
        if ("batch", "low") in served:
            break
    assert ("batch", "low") in served
    # It waited about (100 - -100) ageing steps: its effective priority then passed the newcomers'.
    assert 190 <= served.index(("batch", "low")) <= 210


def test_the_store_keeps_priority_beside_the_deflated_object() -> None:
    store = Store()
    body = {"metadata": {"name": "n", "namespace": "a", "uid": "u", "resourceVersion": "1"}, "spec": {"priority": 7}}
    key = store.put_scheduled_job(body)
    assert store.priority(key) == 7
    store.put_scheduled_job({**body, "spec": {}})
    assert store.priority(key) == 0
    store.put_scheduled_job(body)
    store.drop_scheduled_job(body)
    assert store.priority(key) == 0


def test_an_unusable_priority_orders_as_zero() -> None:
    for spec in ({"priority": "9"}, {"priority": True}, {"priority": 1000}, {"priority": 1.5}, {}):
        assert priority_of({"spec": spec}) == 0
    assert priority_of({"spec": {"priority": -100}}) == -100
