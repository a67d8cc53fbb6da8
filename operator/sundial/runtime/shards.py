"""Objects map to shards by a stable hash of their UID (the same on every replica and Python run)."""

from __future__ import annotations

import hashlib


def shard_of(uid: str, shards: int) -> int:
    """``sha256(uid) mod shards`` (Python's ``hash()`` is salted per process, so it is not used)."""
    if shards <= 1:
        return 0
    digest = hashlib.sha256(uid.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards
