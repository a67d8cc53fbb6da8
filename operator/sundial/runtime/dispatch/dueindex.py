"""A time-ordered index of when each ScheduledJob must be reconciled next.

One heap for all objects (never one task or timer per object). Rescheduling a key pushes a new entry
and records the key's current due time; stale heap entries are skipped when they surface (lazy
invalidation) and the heap is rebuilt when stale entries outnumber live ones.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterator
from datetime import datetime
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class DueIndex(Generic[K]):
    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, K]] = []
        self._due: dict[K, datetime] = {}
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def set(self, key: K, at: datetime) -> None:
        """Due at ``at`` (replacing any earlier or later due time)."""
        if self._due.get(key) == at:
            return
        self._due[key] = at
        heapq.heappush(self._heap, (at, next(self._seq), key))
        self._compact()

    def advance(self, key: K, at: datetime) -> None:
        """Due at ``at`` unless it is already due earlier."""
        current = self._due.get(key)
        if current is None or at < current:
            self.set(key, at)

    def discard(self, key: K) -> None:
        self._due.pop(key, None)

    def _clean_head(self) -> None:
        while self._heap:
            at, _, key = self._heap[0]
            if self._due.get(key) == at:
                return
            heapq.heappop(self._heap)

    def next_due(self) -> datetime | None:
        """The earliest due time, if any."""
        self._clean_head()
        return self._heap[0][0] if self._heap else None

    def _until(self, at: datetime) -> Iterator[tuple[datetime, int, K]]:
        """The live heap entries due at or before ``at``, in no order (a walk of the heap's top, never of the whole
        index: below an entry due later nothing is due earlier)."""
        stack = [0]
        while stack:
            i = stack.pop()
            if i >= len(self._heap) or self._heap[i][0] > at:
                continue
            entry = self._heap[i]
            if self._due.get(entry[2]) == entry[0]:
                yield entry
            stack += (2 * i + 1, 2 * i + 2)

    def count_until(self, at: datetime, *, limit: int) -> int:
        """How many keys are due at or before ``at``, counting at most ``limit``."""
        return sum(1 for _ in itertools.islice(self._until(at), limit))

    def due_at(self, key: K) -> datetime | None:
        return self._due.get(key)

    def due_between(self, after: datetime | None, until: datetime, *, limit: int) -> list[tuple[K, datetime]]:
        """Up to ``limit`` keys due after ``after`` (None: any time) and at or before ``until``, with their due
        times, earliest first."""
        found = [entry for entry in self._until(until) if after is None or entry[0] > after]
        return [(key, at) for at, _, key in heapq.nsmallest(limit, found)]

    def pop_due(self, now: datetime, *, limit: int | None = None) -> list[K]:
        """Remove and return the keys due at or before ``now``, earliest first."""
        popped: list[K] = []
        while limit is None or len(popped) < limit:
            self._clean_head()
            if not self._heap or self._heap[0][0] > now:
                break
            _, _, key = heapq.heappop(self._heap)
            del self._due[key]
            popped.append(key)
        return popped

    def _compact(self) -> None:
        if len(self._heap) > 2 * len(self._due) + 64:
            self._heap = [(at, next(self._seq), key) for key, at in self._due.items()]
            heapq.heapify(self._heap)
