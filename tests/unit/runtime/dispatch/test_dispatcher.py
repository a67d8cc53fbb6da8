"""The dispatcher: bounded concurrency, round-robin across namespaces, re-runs after in-flight changes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.dispatcher import Dispatcher

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_serves_namespaces_round_robin_with_bounded_concurrency() -> None:
    order: list[tuple[str, str]] = []
    running = peak = 0
    stopping = asyncio.Event()
    total = 0

    async def reconcile(key: tuple[str, str]) -> datetime | None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        order.append(key)
        await asyncio.sleep(0)
        running -= 1
        if len(order) == total:
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=2, clock=lambda: T0)
    keys = [("flood", f"sj-{i}") for i in range(50)] + [("quiet", "a"), ("other", "b")]
    total = len(keys)
    for key in keys:
        dispatcher.touch(key)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=2)
    assert peak <= 2
    assert ("quiet", "a") in order[:4] and ("other", "b") in order[:4]
    assert len(order) == total


async def test_a_change_during_a_pass_runs_the_key_again_and_wake_times_are_kept() -> None:
    calls: list[tuple[str, str]] = []
    stopping = asyncio.Event()
    release = asyncio.Event()
    dispatcher: Dispatcher

    async def reconcile(key: tuple[str, str]) -> datetime | None:
        calls.append(key)
        if len(calls) == 1:
            dispatcher.touch(key)  # an event arrives while the pass runs
            release.set()
            return T0 + timedelta(hours=1)
        stopping.set()
        return T0 + timedelta(hours=2)

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0)
    dispatcher.touch(("ns", "a"))
    await asyncio.wait_for(dispatcher.run(stopping), timeout=2)
    await asyncio.sleep(0)
    assert calls == [("ns", "a"), ("ns", "a")]
    assert dispatcher.index.next_due() == T0 + timedelta(hours=2)  # ("ns", "a"), the only key


async def test_a_failing_pass_is_retried_with_backoff() -> None:
    stopping = asyncio.Event()

    async def reconcile(key: tuple[str, str]) -> datetime | None:
        stopping.set()
        raise RuntimeError("boom")

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0)
    dispatcher.touch(("ns", "a"))
    await asyncio.wait_for(dispatcher.run(stopping), timeout=2)
    await asyncio.sleep(0)
    assert dispatcher.index.next_due() == T0 + timedelta(seconds=1)  # ("ns", "a"), the only key


async def test_priority_does_not_buy_a_namespace_more_than_its_turn() -> None:
    order: list[tuple[str, str]] = []
    stopping = asyncio.Event()
    keys = [("flood", f"sj-{i}") for i in range(200)] + [("quiet", "a")]

    async def reconcile(key: tuple[str, str]) -> datetime | None:
        order.append(key)
        if len(order) == len(keys):
            stopping.set()
        return None

    dispatcher = Dispatcher(
        reconcile=reconcile,
        max_concurrency=1,
        clock=lambda: T0,
        priority_of=lambda key: 100 if key[0] == "flood" else 0,
    )
    for key in keys:
        dispatcher.touch(key)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    assert ("quiet", "a") in order[:2]


async def test_a_pass_that_comes_back_at_once_yields_its_turn_to_other_namespaces() -> None:
    """A capped catch-up or backfill pass returns "now": the other namespaces are served in between."""
    order: list[tuple[str, str]] = []
    stopping = asyncio.Event()
    others = [(f"ns-{i}", "victim") for i in range(5)]

    async def reconcile(key: tuple[str, str]) -> datetime | None:
        order.append(key)
        if key[0] == "noisy" and order.count(key) < 4:
            return T0  # more creates to go: plan again at once
        if all(o in order for o in others) and order.count(("noisy", "backfill")) == 4:
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=1, clock=lambda: T0)
    dispatcher.touch(("noisy", "backfill"))
    for key in others:
        dispatcher.touch(key)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    second = [i for i, key in enumerate(order) if key == ("noisy", "backfill")][1]
    assert set(others) <= set(order[:second])
