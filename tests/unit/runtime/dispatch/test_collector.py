"""The cyclic garbage collector is paused from before a crowded instant until its due passes are done (never
longer than MAX_PAUSE), left running at a quiet one, and never re-enabled when the process had disabled it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sundial.runtime.dispatch.collector import MAX_PAUSE, Collector
from sundial.runtime.dispatch.dispatcher import WARM_MIN, Dispatcher

T0 = datetime(2026, 1, 1, tzinfo=UTC)
Key = tuple[str, str]


class FakeGc:
    """The ``gc`` module's switch, recording each change."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.changes: list[str] = []
        self.collected: list[int] = []
        """The generations collected explicitly (``gc.collect``)."""

    def collector(self) -> Collector:
        return Collector(enabled=lambda: self.enabled, disable=self.disable, enable=self.enable, collect=self.collect)

    def collect(self, generation: int) -> int:
        self.collected.append(generation)
        return 0

    def disable(self) -> None:
        self.enabled = False
        self.changes.append("disable")

    def enable(self) -> None:
        self.enabled = True
        self.changes.append("enable")


def test_a_pause_disables_once_extends_to_the_latest_instant_and_ends_on_resume() -> None:
    gc = FakeGc()
    collector = gc.collector()
    collector.pause(T0, until=T0 + timedelta(seconds=5))
    collector.pause(T0 + timedelta(seconds=1), until=T0 + timedelta(seconds=3))
    assert gc.changes == ["disable"] and collector.until == T0 + timedelta(seconds=5)
    assert not collector.overdue(T0 + MAX_PAUSE - timedelta(seconds=1))
    assert collector.overdue(T0 + MAX_PAUSE), "bounded from the pause's start, however it was extended"
    collector.resume()
    collector.resume()
    assert gc.changes == ["disable", "enable"] and not collector.paused and gc.enabled


def test_each_pause_ends_with_a_collection_of_what_it_allocated() -> None:
    """However often crowded instants come (a tenant picks them), the cycles a pause left are reclaimed at its
    end: the young generations, where everything allocated during the pause is."""
    gc = FakeGc()
    collector = gc.collector()
    for i in range(3):
        collector.pause(T0 + timedelta(seconds=10 * i), until=T0 + timedelta(seconds=10 * i + 5))
        collector.resume()
    assert gc.collected == [1, 1, 1]


def test_a_collector_the_process_disabled_stays_disabled() -> None:
    gc = FakeGc(enabled=False)
    collector = gc.collector()
    collector.pause(T0, until=T0 + timedelta(seconds=5))
    collector.resume()
    assert gc.changes == [] and not gc.enabled


async def _instant(size: int) -> tuple[FakeGc, list[tuple[str, bool]]]:
    """SIZE keys due 1.2 s from now (the clock follows the event loop's): whether the collector ran at each pass,
    and its changes."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    def clock() -> datetime:
        return T0 + timedelta(seconds=loop.time() - start)

    gc = FakeGc()
    seen: list[tuple[str, bool]] = []
    stopping = asyncio.Event()
    passes = 0

    async def reconcile(key: Key) -> datetime | None:
        nonlocal passes
        seen.append((key[1], gc.enabled))
        await asyncio.sleep(0.01)
        passes += 1
        if passes == size:
            loop.call_later(0.1, stopping.set)  # a loop turn after the last pass
        return None

    async def warm(count: int) -> None:
        return None

    dispatcher = Dispatcher(
        reconcile=reconcile, max_concurrency=8, clock=clock, warm=warm, collector=gc.collector(),
        prepare=lambda key, at: True,
    )  # fmt: skip
    for i in range(size):
        dispatcher.index.set(("ns", f"k{i}"), T0 + timedelta(seconds=1.2))
    await asyncio.wait_for(dispatcher.run(stopping), timeout=5)
    return gc, seen


async def test_a_crowded_instant_runs_its_passes_with_the_collector_paused_and_resumes_it_after() -> None:
    gc, seen = await _instant(40)
    assert len(seen) == 40 and not any(enabled for _, enabled in seen), "no pass of the instant with it running"
    assert gc.changes == ["disable", "enable"], "paused once, resumed once the passes were done"


async def test_a_quiet_instant_leaves_the_collector_running() -> None:
    gc, seen = await _instant(WARM_MIN - 1)
    assert gc.changes == [] and all(enabled for _, enabled in seen)
