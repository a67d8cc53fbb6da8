"""What acting on a shard means to the code that writes: the shard of an object, and the "may I act?" seam.

This module owns the vocabulary shared by every wing that writes to the API server on a shard's behalf:
:func:`shard_of` (objects map to shards by a stable hash of their UID, the same on every replica and Python
run), :class:`NotActingError` (raised by a guard right before a write this replica may no longer make) and
the :class:`Acting` protocol the reconciler and the Event sender depend on instead of the concrete
:class:`sundial.runtime.coordination.leadership.Leadership`. It imports nothing from the rest of the runtime.
"""

from __future__ import annotations

import hashlib
from typing import Protocol


class NotActingError(Exception):
    """This replica does not (or no longer) hold the shard's Lease within its renew deadline."""


class Acting(Protocol):
    """What a writer asks of coordination: how many shards, may I act on one now, with which token."""

    @property
    def shards(self) -> int:
        """The number of shards (1 when unsharded)."""
        ...

    def acting(self, shard: int) -> bool:
        """True while this replica holds the shard's Lease and renewed it within the renew deadline."""
        ...

    def check(self, shard: int) -> None:
        """Raise :class:`NotActingError` unless :meth:`acting`; called right before every write."""
        ...

    def fencing_token(self, shard: int) -> str:
        """``<shard>-<leaseTransitions>-<lease uid>`` of the Lease this replica holds for the shard."""
        ...

    def fenced(self, shard: int) -> None:
        """The API server refused a write under this shard's token: stop acting on it until it is held again."""
        ...


def shard_of(uid: str, shards: int) -> int:
    """``sha256(uid) mod shards`` (Python's ``hash()`` is salted per process, so it is not used)."""
    if shards <= 1:
        return 0
    digest = hashlib.sha256(uid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards
