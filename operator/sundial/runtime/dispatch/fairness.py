"""The ready queue: round-robin across namespaces first, ``spec.priority`` (with ageing) within one.

Namespaces take turns (DESIGN §11.1 fair shares): each turn serves one key of the namespace whose turn
it is, which then goes to the back. So 10,000 objects of one namespace due at midnight - whatever their
priority - wait behind one object of each other namespace, instead of in front of all of them, and
no priority a tenant can write buys it more than its turn. Within a namespace the next key is the one
with the highest *effective* priority (:class:`NamespaceQueue`): ``spec.priority`` raised by one per
:data:`AGEING_STEP` waited, so nothing starves (DESIGN §4.3). A key is queued at most once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta

Key = tuple[str, str]

AGEING_STEP = timedelta(seconds=1)
"""Waiting this long raises a queued key's effective priority by one (DESIGN §4.3: nothing starves)."""


class NamespaceQueue:
    """One namespace's due keys by ``spec.priority``, higher first, with ageing; arrival order within one.

    ``pop`` serves the priority whose longest-waiting key has the highest *effective* priority: its
    priority plus one per ageing step it has waited (ties: the higher priority). So a key of priority 0
    that waited 10 s goes before a key of priority 10 that just arrived, and under sustained contention a
    low priority is still served - its wait, and so its effective priority, grows until it wins.
    """

    def __init__(self, *, clock: Callable[[], datetime], ageing_step: timedelta) -> None:
        self._clock = clock
        self._step = ageing_step.total_seconds()
        self._levels: dict[int, deque[tuple[datetime, Key]]] = {}
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def push(self, key: Key, *, priority: int) -> None:
        self._levels.setdefault(priority, deque()).append((self._clock(), key))
        self._size += 1

    def effective(self, priority: int, *, waited_since: datetime) -> float:
        """A priority raised by the time waited since ``waited_since``."""
        waited = max((self._clock() - waited_since).total_seconds(), 0.0)
        return priority + (waited / self._step if self._step > 0 else 0.0)

    def pop(self) -> Key | None:
        best: tuple[float, int] | None = None
        for priority, arrivals in self._levels.items():
            rank = (self.effective(priority, waited_since=arrivals[0][0]), priority)
            if best is None or rank > best:
                best = rank
        if best is None:
            return None
        level = self._levels[best[1]]
        _, key = level.popleft()
        if not level:
            del self._levels[best[1]]
        self._size -= 1
        return key


class FairQueue:
    """Due keys: namespaces take turns; within a namespace, :class:`NamespaceQueue` order.

    The clock is injected (the dispatcher's): tests step it.
    """

    def __init__(self, *, clock: Callable[[], datetime], ageing_step: timedelta = AGEING_STEP) -> None:
        self._clock = clock
        self._ageing_step = ageing_step
        self._namespaces: dict[str, NamespaceQueue] = {}
        self._turns: deque[str] = deque()
        self._members: set[Key] = set()

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, key: object) -> bool:
        return key in self._members

    def push(self, key: Key, *, priority: int = 0) -> None:
        """Queue ``key`` (a key already queued keeps its place and its first priority)."""
        if key in self._members:
            return
        self._members.add(key)
        namespace = key[0]
        queue = self._namespaces.get(namespace)
        if queue is None:
            queue = self._namespaces[namespace] = NamespaceQueue(clock=self._clock, ageing_step=self._ageing_step)
            self._turns.append(namespace)
        queue.push(key, priority=priority)

    def pop(self) -> Key | None:
        """The next key of the namespace whose turn it is (that namespace goes to the back), or None."""
        if not self._turns:
            return None
        namespace = self._turns.popleft()
        queue = self._namespaces[namespace]
        key = queue.pop()
        if len(queue):
            self._turns.append(namespace)
        else:
            del self._namespaces[namespace]
        if key is not None:
            self._members.discard(key)
        return key
