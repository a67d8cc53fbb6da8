"""A ready queue served round-robin across namespaces.

10,000 objects of one namespace due at midnight wait their turn behind one object of each other
namespace, instead of in front of all of them. Within a namespace, keys keep arrival order; a key is
queued at most once.
"""

from __future__ import annotations

from collections import deque


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
