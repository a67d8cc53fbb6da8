"""The default clock: the one place that reads the wall-clock time.

Nothing in :mod:`sundial.schedule` calls it (``now`` is always an argument there); the layers above pass it
as the default of their injectable ``clock`` / ``wallclock`` parameters, and tests pass their own.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time, an aware UTC datetime."""
    return datetime.now(UTC)
