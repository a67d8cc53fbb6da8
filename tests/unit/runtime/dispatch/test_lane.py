"""The dispatcher's low-priority lane (DESIGN §7.5): the status writes a pass left owed wait until the due keys
of the moment are served, a Job event leaves them there, anything else (or waiting too long) serves them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.dispatcher import LANE_MAX_WAIT, Dispatcher

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Key = tuple[str, str]


class Passes:
    """A reconcile function: records each pass; a key's first pass leaves a write owed (a prepared run)."""

    def __init__(self, *, done: Callable[[list[Key]], bool]) -> None:
        self.order: list[Key] = []
        self.owed: set[Key] = set()
        self.stopping = asyncio.Event()
        self.done = done

    async def __call__(self, key: Key) -> datetime | None:
        self.order.append(key)
        first = self.order.count(key) == 1
        if first:
            self.owed.add(key)
        else:
            self.owed.discard(key)  # the lane's pass wrote
        await asyncio.sleep(0)
        if self.done(self.order):
            self.stopping.set()
        return T0 + timedelta(minutes=1)

    def owes(self, key: Key) -> bool:
        return key in self.owed


async def test_owed_writes_wait_until_every_due_key_was_served() -> None:
    due = [(f"ns-{i % 3}", f"sj-{i}") for i in range(12)]
    passes = Passes(done=lambda order: len(order) == 2 * len(due))
    dispatcher = Dispatcher(reconcile=passes, max_concurrency=8, clock=lambda: T0, owes_write=passes.owes)
    for key in due:
        dispatcher.touch(key)
    await asyncio.wait_for(dispatcher.run(passes.stopping), timeout=2)
    first, second = passes.order[: len(due)], passes.order[len(due) :]
    assert sorted(first) == sorted(due), "every due key was served before any owed write"
    assert sorted(second) == sorted(due)
    assert passes.owed == set()


async def test_the_lane_uses_at_most_half_the_concurrency() -> None:
    running = peak = 0
    stopping = asyncio.Event()
    keys = [("ns", f"sj-{i}") for i in range(20)]
    lane_passes = 0

    async def reconcile(key: Key) -> datetime | None:
        nonlocal running, peak, lane_passes
        lane = key in owed
        owed.add(key)
        if lane:
            owed.discard(key)
            lane_passes += 1
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            if lane_passes == len(keys):
                stopping.set()
        return None

    owed: set[Key] = set()
    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=8, clock=lambda: T0, owes_write=owed.__contains__)
    for key in keys:
        dispatcher.touch(key)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    assert lane_passes == len(keys)
    assert peak <= 4


async def test_a_job_event_leaves_a_key_in_the_lane_and_another_change_serves_it() -> None:
    order: list[Key] = []
    owed: set[Key] = set()
    stopping, release = asyncio.Event(), asyncio.Event()
    a, busy = ("ns", "a"), ("busy", "x")
    dispatcher: Dispatcher

    async def reconcile(key: Key) -> datetime | None:
        order.append(key)
        if key == busy:  # a due pass holding the only slot: the lane stays closed
            await release.wait()
        elif order.count(a) == 1:
            owed.add(a)
            dispatcher.touch(busy)
        else:
            owed.discard(a)
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0, owes_write=owed.__contains__)
    dispatcher.touch(a)
    run = asyncio.create_task(dispatcher.run(stopping))
    await _until(lambda: order == [a, busy])
    assert a in dispatcher._lane
    dispatcher.touch(a, soft=True)  # one of its Jobs changed: it stays in the lane
    assert a in dispatcher._lane and a not in dispatcher.index
    dispatcher.touch(a)  # the object itself changed: served with the due keys
    assert a in dispatcher.index
    release.set()
    await asyncio.wait_for(run, timeout=2)
    assert order == [a, busy, a]
    assert a not in dispatcher._lane


async def test_a_key_that_waited_too_long_in_the_lane_is_served_with_the_due_keys() -> None:
    clock = [T0]
    passes = Passes(done=lambda order: False)
    dispatcher = Dispatcher(reconcile=passes, max_concurrency=4, clock=lambda: clock[0], owes_write=passes.owes)
    dispatcher._lane[("ns", "late")] = T0
    passes.owed.add(("ns", "late"))
    passes.order.append(("ns", "late"))  # as if its first pass ran
    for i in range(3):  # due work keeps coming: the lane never opens on its own
        dispatcher.queue.push(("other", f"k{i}"))
    clock[0] = T0 + LANE_MAX_WAIT
    run = asyncio.create_task(dispatcher.run(passes.stopping))
    await _until(lambda: passes.order.count(("ns", "late")) == 2)
    passes.stopping.set()
    await asyncio.wait_for(run, timeout=2)


async def test_a_failed_pass_backs_off_instead_of_entering_the_lane() -> None:
    stopping = asyncio.Event()

    async def reconcile(key: Key) -> datetime | None:
        stopping.set()
        raise RuntimeError("boom")

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0, owes_write=lambda key: True)
    dispatcher.touch(("ns", "a"))
    await asyncio.wait_for(dispatcher.run(stopping), timeout=2)
    await asyncio.sleep(0)
    assert ("ns", "a") not in dispatcher._lane
    assert dispatcher.index.next_due() == T0 + timedelta(seconds=1)


async def test_a_forgotten_key_leaves_the_lane() -> None:
    dispatcher = Dispatcher(reconcile=Passes(done=lambda order: True), max_concurrency=1, clock=lambda: T0)
    dispatcher._lane[("ns", "a")] = T0
    dispatcher.forget(("ns", "a"))
    assert ("ns", "a") not in dispatcher._lane


async def _until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


async def test_the_lane_waits_for_the_last_due_pass_of_the_moment() -> None:
    """One due pass still running (its Job POST waits for the API server) keeps every owed write back, however
    much concurrency is free: the lane's status writes never compete with a herd's tail."""
    order: list[Key] = []
    owed: set[Key] = set()
    stopping, release = asyncio.Event(), asyncio.Event()
    owing, slow = [("ns", f"owes-{i}") for i in range(4)], ("ns", "slow")

    async def reconcile(key: Key) -> datetime | None:
        order.append(key)
        if key == slow:
            await release.wait()
        elif order.count(key) == 1:
            owed.add(key)
        else:
            owed.discard(key)
            if not owed:
                stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=64, clock=lambda: T0, owes_write=owed.__contains__)
    for key in owing:
        dispatcher.touch(key)
    dispatcher.touch(slow)
    run = asyncio.create_task(dispatcher.run(stopping))
    await _until(lambda: len(order) == 5 and all(key in dispatcher._lane for key in owing))
    for _ in range(20):  # the loop turns while the slow pass runs: the lane stays shut
        dispatcher._wakeup.set()
        await asyncio.sleep(0.001)
    assert [key for key in order if key in owing] == owing, "no lane pass while a due pass runs"
    release.set()
    await asyncio.wait_for(run, timeout=2)
    assert sorted(order[5:]) == sorted(owing)


async def test_a_held_write_waits_for_a_job_event_or_its_holds_end_and_another_change_serves_it() -> None:
    """A prepared run's start (``held_until``) is not written while its Job runs: the key is held, not in the lane,
    however idle the dispatcher is. A Job event moves it to the lane; so does the end of its hold; anything else
    serves it at once."""
    clock = [T0]
    order: list[Key] = []
    holds: dict[Key, datetime] = {}
    stopping = asyncio.Event()
    a, b, c = ("ns", "a"), ("ns", "b"), ("ns", "c")

    async def reconcile(key: Key) -> datetime | None:
        order.append(key)
        if order.count(key) == 1:
            holds[key] = T0 + timedelta(minutes=5)  # its first pass created the Job; the start's write may wait
        else:
            holds.pop(key, None)  # the write went out
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=4, clock=lambda: clock[0],
                            owes_write=holds.__contains__, held_until=holds.get)  # fmt: skip
    for key in (a, b, c):
        dispatcher.touch(key)
    run = asyncio.create_task(dispatcher.run(stopping))
    await _until(lambda: len(order) == 3)
    for _ in range(20):  # the loop turns, nothing is due: held keys stay held
        dispatcher._wakeup.set()
        await asyncio.sleep(0.001)
    assert order == [a, b, c] and not dispatcher._lane
    assert all(key in dispatcher._holds for key in (a, b, c))

    dispatcher.touch(a, soft=True)  # its Job ended: the lane serves it
    await _until(lambda: order.count(a) == 2)
    dispatcher.touch(b)  # the object itself changed: served at once
    await _until(lambda: order.count(b) == 2)
    assert order.count(c) == 1 and c in dispatcher._holds
    clock[0] = T0 + timedelta(minutes=5)  # c's hold ends: the lane serves it
    dispatcher._wakeup.set()
    await _until(lambda: order.count(c) == 2)
    assert not holds and not dispatcher._lane and not dispatcher._holds
    stopping.set()
    await asyncio.wait_for(run, timeout=2)


async def test_a_job_event_during_the_pass_that_holds_puts_the_key_in_the_lane() -> None:
    """The Job's own first event (its ADDED) can arrive while the instant's pass still runs: the key then goes to
    the lane, whose pass looks at the Job (and holds again if it still runs)."""
    stopping = asyncio.Event()
    a = ("ns", "a")
    holds: dict[Key, datetime] = {}
    dispatcher: Dispatcher

    async def reconcile(key: Key) -> datetime | None:
        holds[key] = T0 + timedelta(minutes=5)
        dispatcher.touch(key, soft=True)
        stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0,
                            owes_write=holds.__contains__, held_until=holds.get)  # fmt: skip
    dispatcher.touch(a)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=2)
    await asyncio.sleep(0)
    assert a in dispatcher._lane and a not in dispatcher._holds


async def test_a_forgotten_key_leaves_its_hold() -> None:
    dispatcher = Dispatcher(reconcile=Passes(done=lambda order: True), max_concurrency=1, clock=lambda: T0)
    dispatcher._holds.set(("ns", "a"), T0)
    dispatcher.forget(("ns", "a"))
    assert ("ns", "a") not in dispatcher._holds
