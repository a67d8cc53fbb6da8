"""Stable hashes: the same inputs give the same number on every replica, process and Python version."""

from __future__ import annotations

import hashlib


def stable_int(*parts: str) -> int:
    """A non-negative 64-bit integer from the SHA-256 of ``parts`` (joined with NUL, so parts never blur)."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def spread(*, uid: str, position: int, size: int) -> int:
    """Jenkins ``H``: a stable value in ``[0, size)`` for one object (``uid``) and one cron field.

    ``position`` is the canonical field index (0 seconds, 1 minute, 2 hour, 3 day-of-month, 4 month,
    5 day-of-week), so adding a seconds field does not move the other fields' values.
    """
    return stable_int("sundial-cron-H", uid, str(position)) % size
