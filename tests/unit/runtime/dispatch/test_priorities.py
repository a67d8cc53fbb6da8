"""The ready queue under contention: namespaces take turns first, spec.priority (with ageing) within one.

The clock is a list the tests step by hand: no timing assertions. Every test uses the real queue.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.fairness import AGEING_STEP, FairQueue
from sundial.runtime.watch.store import Store, priority_of

MIDNIGHT = datetime(2026, 6, 1, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = MIDNIGHT

    def __call__(self) -> datetime:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def drain(queue: FairQueue) -> list[tuple[str, str]]:
    found = []
    while (key := queue.pop()) is not None:
        found.append(key)
    return found


def test_ten_thousand_high_priority_keys_of_one_namespace_do_not_go_before_another_namespace() -> None:
    queue = FairQueue(clock=Clock())
    for i in range(10_000):
        queue.push(("flood", f"sj-{i}"), priority=100)
    queue.push(("quiet", "one"), priority=0)
    queue.push(("other", "two"), priority=-100)
    assert [queue.pop() for _ in range(3)] == [("flood", "sj-0"), ("quiet", "one"), ("other", "two")]
    assert queue.pop() == ("flood", "sj-1")
    assert len(queue) == 9_998 and ("quiet", "one") not in queue


def test_many_namespaces_each_get_one_turn_per_round() -> None:
    queue = FairQueue(clock=Clock())
    for namespace in range(50):
        for i in range(4):
            queue.push((f"ns-{namespace:02d}", f"sj-{i}"), priority=namespace)  # a higher namespace, higher keys
    served = drain(queue)
    assert len(served) == 200
    for round_ in range(4):
        batch = served[50 * round_ : 50 * (round_ + 1)]
        assert [ns for ns, _ in batch] == [f"ns-{n:02d}" for n in range(50)]
        assert {name for _, name in batch} == {f"sj-{round_}"}


def test_within_a_namespace_higher_priority_goes_first_then_arrival_order() -> None:
    queue = FairQueue(clock=Clock())
    queue.push(("a", "low"), priority=-5)
    queue.push(("a", "normal-1"))
    queue.push(("a", "high"), priority=10)
    queue.push(("a", "normal-2"))
    assert drain(queue) == [("a", "high"), ("a", "normal-1"), ("a", "normal-2"), ("a", "low")]


def test_priority_orders_only_inside_each_namespace() -> None:
    queue = FairQueue(clock=Clock())
    queue.push(("a", "a-low"), priority=-1)
    queue.push(("a", "a-high"), priority=50)
    queue.push(("b", "b-low"), priority=-1)
    queue.push(("b", "b-high"), priority=1)
    assert drain(queue) == [("a", "a-high"), ("b", "b-high"), ("a", "a-low"), ("b", "b-low")]


def test_a_key_is_queued_once_with_its_first_priority() -> None:
    queue = FairQueue(clock=Clock())
    queue.push(("a", "x"), priority=3)
    queue.push(("a", "x"), priority=9)
    queue.push(("a", "y"), priority=5)
    assert len(queue) == 2 and ("a", "x") in queue
    assert drain(queue) == [("a", "y"), ("a", "x")] and len(queue) == 0


def test_a_namespace_that_empties_rejoins_at_the_back() -> None:
    queue = FairQueue(clock=Clock())
    queue.push(("a", "1"))
    queue.push(("b", "1"))
    queue.push(("b", "2"))
    assert queue.pop() == ("a", "1")
    queue.push(("a", "2"))
    assert drain(queue) == [("b", "1"), ("a", "2"), ("b", "2")]


def test_a_waiting_key_ages_past_a_higher_priority_that_just_arrived() -> None:
    clock = Clock()
    queue = FairQueue(clock=clock)
    queue.push(("a", "old-low"))
    clock.step(11 * AGEING_STEP.total_seconds())
    queue.push(("a", "new-high"), priority=10)
    assert queue.pop() == ("a", "old-low")


def test_a_higher_priority_still_wins_against_a_shorter_wait() -> None:
    clock = Clock()
    queue = FairQueue(clock=clock)
    queue.push(("a", "old-low"))
    clock.step(9 * AGEING_STEP.total_seconds())
    queue.push(("a", "new-high"), priority=10)
    assert queue.pop() == ("a", "new-high")


def test_no_starvation_inside_a_namespace_under_a_steady_stream_of_high_priority_keys() -> None:
    clock = Clock()
    queue = FairQueue(clock=clock)
    queue.push(("team", "low"), priority=-100)
    served: list[tuple[str, str]] = []
    for i in range(400):  # one high-priority key arrives and one key is served per ageing step
        queue.push(("team", f"high-{i}"), priority=100)
        served.append(queue.pop() or ("", ""))
        clock.step(AGEING_STEP.total_seconds())
        if ("team", "low") in served:
            break
    assert ("team", "low") in served
    # It waited about (100 - -100) ageing steps: its effective priority then passed the newcomers'.
    assert 190 <= served.index(("team", "low")) <= 210


def test_another_namespace_is_served_every_other_turn_under_a_stream_of_high_priority_keys() -> None:
    clock = Clock()
    queue = FairQueue(clock=clock)
    for i in range(100):
        queue.push(("flood", f"high-{i}"), priority=100)
    for i in range(5):
        queue.push(("quiet", f"low-{i}"), priority=-100)
    served = [queue.pop() for _ in range(10)]
    assert [key[0] for key in served if key] == ["flood", "quiet"] * 5


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
