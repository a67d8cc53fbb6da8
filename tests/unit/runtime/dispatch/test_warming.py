"""Connections are warmed once, WARM_AHEAD before an instant at which many keys are due, as many as passes will
run at once; a quiet instant warms nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.dispatcher import WARM_AHEAD, WARM_MIN, Dispatcher

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Key = tuple[str, str]


async def _herd(size: int, *, max_concurrency: int) -> tuple[list[tuple[str, object]], list[datetime]]:
    """SIZE keys due 1.2 s from now (the clock follows the event loop's): what happened, in order, and when
    each warm-up was asked for."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    def clock() -> datetime:
        return T0 + timedelta(seconds=loop.time() - start)

    due = T0 + WARM_AHEAD + timedelta(seconds=0.2)
    order: list[tuple[str, object]] = []
    warmed_at: list[datetime] = []
    stopping = asyncio.Event()

    async def warm(count: int) -> None:
        warmed_at.append(clock())
        order.append(("warm", count))

    async def reconcile(key: Key) -> datetime | None:
        order.append(("pass", key))
        if sum(kind == "pass" for kind, _ in order) == size:
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=max_concurrency, clock=clock, warm=warm)
    for i in range(size):
        dispatcher.index.set(("ns", f"k{i}"), due)
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    assert all(moment < due for moment in warmed_at), "warmed before the instant"
    return order, warmed_at


async def test_a_crowded_instant_warms_as_many_connections_as_passes_run_at_once() -> None:
    order, warmed_at = await _herd(40, max_concurrency=32)
    assert order[0] == ("warm", 32), "one warm-up, before any pass"
    assert [kind for kind, _ in order].count("warm") == 1
    assert len(warmed_at) == 1


async def test_a_quiet_instant_warms_nothing() -> None:
    order, _ = await _herd(WARM_MIN - 1, max_concurrency=32)
    assert all(kind == "pass" for kind, _ in order)


async def test_crowded_instants_close_together_warm_once() -> None:
    """The warm-ups bypass the rate limiter: however many crowded instants a tenant's objects pick, at most one
    warm-up per WARM_EVERY."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    def clock() -> datetime:
        return T0 + timedelta(seconds=loop.time() - start)

    warmed: list[int] = []
    passes = 0
    stopping = asyncio.Event()

    async def warm(count: int) -> None:
        warmed.append(count)

    async def reconcile(key: Key) -> datetime | None:
        nonlocal passes
        passes += 1
        if passes == 40:
            stopping.set()
        return None

    dispatcher = Dispatcher(reconcile=reconcile, max_concurrency=32, clock=clock, warm=warm)
    for i in range(40):  # two crowded instants, 0.5 s apart
        dispatcher.index.set(("ns", f"k{i}"), T0 + timedelta(seconds=1.2 + 0.5 * (i % 2)))
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    assert len(warmed) == 1, warmed
