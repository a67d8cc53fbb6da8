"""Reconcile passes in flight per shard: a handoff stops acting, then waits here until the shard is quiet."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class InFlight:
    """Counts reconcile passes in flight per shard, so a handoff can wait until a shard is quiet."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self._quiet: dict[int, asyncio.Event] = {}

    @contextlib.contextmanager
    def track(self, shard: int) -> Iterator[None]:
        self._counts[shard] = self._counts.get(shard, 0) + 1
        self._event(shard).clear()
        try:
            yield
        finally:
            self._counts[shard] -= 1
            if self._counts[shard] == 0:
                self._event(shard).set()

    def _event(self, shard: int) -> asyncio.Event:
        event = self._quiet.get(shard)
        if event is None:
            event = self._quiet[shard] = asyncio.Event()
            event.set()
        return event

    async def drained(self, shard: int) -> None:
        await self._event(shard).wait()
