"""The Jobs this replica created whose event its own Job watch has not delivered yet (DESIGN §7.5).

The dispatcher's low-priority lane (deferred status writes) opens only once the watch has seen every Job of the
instant: a create's answer comes before the watch event of the same Job, and the status writes sent in between
would still compete with the herd's last Jobs at the API server (the window a client waiting for those Jobs
sees). A Job the watch never reports (deleted at once, a relist that skips it, a broken watch) is waited for at
most :data:`WAIT`; entries are dropped when seen or when their wait is over, so what is kept is bounded by the
creates of that long.
"""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT = 5.0
"""Seconds a created Job is waited for before the lane opens without its watch event."""


class Unseen:
    def __init__(self, *, wait: float = WAIT, clock: Callable[[], float] = time.monotonic) -> None:
        self._wait = wait
        self._clock = clock
        self._since: dict[tuple[str, str], float] = {}  # insertion order = creation order: the oldest first

    def created(self, namespace: str, name: str) -> None:
        """This replica's create of Job NAMESPACE/NAME was answered."""
        self._since.pop((namespace, name), None)
        self._since[(namespace, name)] = self._clock()

    def seen(self, namespace: str, name: str) -> None:
        """The Job watch delivered NAMESPACE/NAME (any event)."""
        self._since.pop((namespace, name), None)

    def waiting(self) -> float:
        """Seconds until the oldest Job still awaited is waited for no longer; 0: none is awaited."""
        now = self._clock()
        while self._since:
            identity, since = next(iter(self._since.items()))
            left = since + self._wait - now
            if left > 0:
                return left
            del self._since[identity]
        return 0.0

    def __len__(self) -> int:
        return len(self._since)
