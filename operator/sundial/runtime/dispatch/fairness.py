"""The ready queue: higher ``spec.priority`` first (with ageing), round-robin across namespaces within one.

10,000 objects of one namespace due at midnight wait their turn behind one object of each other
namespace, instead of in front of all of them. Within a namespace, keys keep arrival order; a key is
queued at most once. :class:`PriorityQueue` puts a :class:`FairQueue` per priority behind an ageing
choice between priorities (DESIGN §4.3).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta


class FairQueue:
    def __init__(self) -> None:
        self._queues: dict[str, deque[tuple[str, str]]] = {}
        self._turns: deque[str] = deque()
        self._members: set[tuple[str, str]] = set()

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def push(self, key: tuple[str, str]) -> None:
        if key in self._members:
            return
        self._members.add(key)
        namespace = key[0]
        queue = self._queues.get(namespace)
        if queue is None:
            queue = self._queues[namespace] = deque()
            self._turns.append(namespace)
        queue.append(key)

    def pop(self) -> tuple[str, str] | None:
        """The next key: the head of the namespace whose turn it is; that namespace goes to the back."""
        if not self._turns:
            return None
        namespace = self._turns.popleft()
        queue = self._queues[namespace]
        key = queue.popleft()
        if queue:
            self._turns.append(namespace)
        else:
            del self._queues[namespace]
        self._members.discard(key)
        return key


AGEING_STEP = timedelta(seconds=1)
"""Waiting this long raises a queued key's effective priority by one (DESIGN §4.3: nothing starves)."""


class PriorityQueue:
    """Due keys by ``spec.priority``, higher first, with ageing; round-robin across namespaces within a priority.

    Keys of one priority share a :class:`FairQueue`. ``pop`` serves the priority whose longest-waiting key
    has the highest *effective* priority: its priority plus one per :data:`AGEING_STEP` it has waited
    (ties: the higher priority). So a key of priority 0 that waited 10 s goes before a key of priority 10
    that just arrived, and under sustained contention a low priority is still served - its wait, and so
    its effective priority, grows until it wins. The clock is injected (the dispatcher's): tests step it.
    """

    def __init__(self, *, clock: Callable[[], datetime], ageing_step: timedelta = AGEING_STEP) -> None:
        self._clock = clock
        self._step = ageing_step.total_seconds()
        self._levels: dict[int, FairQueue] = {}
        self._arrivals: dict[int, deque[tuple[datetime, tuple[str, str]]]] = {}
        self._queued: dict[tuple[str, str], tuple[int, datetime]] = {}

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, key: object) -> bool:
        return key in self._queued

    def push(self, key: tuple[str, str], *, priority: int = 0) -> None:
        if key in self._queued:
            return
        now = self._clock()
        self._queued[key] = (priority, now)
        self._levels.setdefault(priority, FairQueue()).push(key)
        self._arrivals.setdefault(priority, deque()).append((now, key))

    def effective(self, priority: int, *, waited_since: datetime) -> float:
        """A priority raised by the time waited since ``waited_since``."""
        waited = max((self._clock() - waited_since).total_seconds(), 0.0)
        return priority + (waited / self._step if self._step > 0 else 0.0)

    def pop(self) -> tuple[str, str] | None:
        """The next key (see the class docstring), or None when nothing is queued."""
        best: tuple[float, int] | None = None
        for priority in list(self._levels):
            oldest = self._oldest(priority)
            if oldest is None:
                continue
            rank = (self.effective(priority, waited_since=oldest), priority)
            if best is None or rank > best:
                best = rank
        if best is None:
            return None
        priority = best[1]
        key = self._levels[priority].pop()
        if key is None:  # unreachable: a level with an arrival has a key
            return None
        del self._queued[key]
        if not len(self._levels[priority]):
            del self._levels[priority]
            del self._arrivals[priority]
        return key

    def _oldest(self, priority: int) -> datetime | None:
        """When the longest-waiting key of ``priority`` was queued (stale arrivals are dropped here)."""
        arrivals = self._arrivals.get(priority)
        while arrivals:
            at, key = arrivals[0]
            if self._queued.get(key) == (priority, at):
                return at
            arrivals.popleft()
        return None
