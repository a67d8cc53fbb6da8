"""Before an instant the dispatcher has the keys due then planned ahead (``prepare``), each once and before its
pass, stopping when the instant comes; the lane's owed writes wait for the operator's own watch to have seen the
Jobs it created (``awaiting_watch``). The clock follows the event loop's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.dispatcher import PREPARE_AHEAD, Dispatcher

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Key = tuple[str, str]


def loop_clock() -> Callable[[], datetime]:
    loop = asyncio.get_running_loop()
    start = loop.time()
    return lambda: T0 + timedelta(seconds=loop.time() - start)


async def test_the_keys_due_within_prepare_ahead_are_planned_ahead_once_each_before_their_pass() -> None:
    clock = loop_clock()
    due, later = T0 + timedelta(seconds=0.3), T0 + PREPARE_AHEAD + timedelta(seconds=30)
    keys = [("ns", f"k{i}") for i in range(20)]
    events: list[tuple[str, Key, datetime]] = []
    stopping = asyncio.Event()

    def prepare(key: Key, at: datetime) -> bool:
        events.append(("prepare", key, at))
        assert clock() < at, "planned ahead, before its time"
        return True

    async def reconcile(key: Key) -> datetime | None:
        events.append(("pass", key, clock()))
        if sum(kind == "pass" for kind, _, _ in events) == len(keys):
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=4, clock=clock, prepare=prepare)
    for key in keys:
        dispatcher.index.set(key, due)
    dispatcher.index.set(("ns", "later"), later)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    prepared = [(key, at) for kind, key, at in events if kind == "prepare"]
    assert sorted(prepared) == sorted((key, due) for key in keys), "each due key once, as of its due time"
    for key in keys:
        kinds = [kind for kind, k, _ in events if k == key]
        assert kinds == ["prepare", "pass"]
    assert all(when >= due for kind, _, when in events if kind == "pass")


async def test_planning_ahead_stops_when_the_instant_comes() -> None:
    clock = loop_clock()
    due = T0 + timedelta(seconds=0.2)
    keys = [("ns", f"k{i}") for i in range(200)]
    prepared_at: list[datetime] = []
    passes: list[Key] = []
    stopping = asyncio.Event()

    def prepare(key: Key, at: datetime) -> bool:
        time.sleep(0.005)  # a slow plan: 200 of them take longer than the time left
        prepared_at.append(clock())
        return True

    async def reconcile(key: Key) -> datetime | None:
        passes.append(key)
        if len(passes) == len(keys):
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=8, clock=clock, prepare=prepare)
    for key in keys:
        dispatcher.index.set(key, due)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=10)
    assert 0 < len(prepared_at) < len(keys), "some planned ahead, the rest left to their passes"
    assert all(moment < due + timedelta(milliseconds=50) for moment in prepared_at), "none planned after the instant"
    assert sorted(passes) == sorted(keys)


async def test_owed_writes_wait_until_the_watch_has_seen_the_created_jobs() -> None:
    key = ("ns", "k")
    order: list[str] = []
    owed: set[Key] = set()
    awaited = [True]
    stopping = asyncio.Event()

    async def reconcile(k: Key) -> datetime | None:
        if k in owed:
            owed.discard(k)
            order.append("lane pass")
            stopping.set()
        else:
            owed.add(k)
            order.append("due pass")
        return None

    def awaiting_watch() -> float:
        return 60.0 if awaited[0] else 0.0

    dispatcher = Dispatcher(
        reconcile=reconcile, max_concurrency=4, clock=loop_clock(), owes_write=owed.__contains__,
        awaiting_watch=awaiting_watch,
    )  # fmt: skip
    dispatcher.touch(key)
    running = asyncio.ensure_future(dispatcher.run(stopping))
    for _ in range(50):
        await asyncio.sleep(0.002)
    assert order == ["due pass"], "the owed write waits while a created Job is unseen"
    awaited[0] = False
    dispatcher.touch(key, soft=True)  # the watch's event of its Job
    await asyncio.wait_for(running, timeout=2)
    assert order == ["due pass", "lane pass"]
