"""IANA time zones and the UTC-only discipline for instants."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sundial.schedule.errors import ScheduleError


def load_zone(name: str, *, field: str = "timeZone") -> ZoneInfo:
    """Return the IANA zone ``name``; ``Local``, empty and unknown names raise :class:`ScheduleError`."""
    if not name or name.strip() != name:
        raise ScheduleError(field, f"{name!r} is not an IANA time zone name")
    if name == "Local":
        raise ScheduleError(field, "'Local' is not allowed: it depends on the machine; use an IANA name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(field, f"unknown time zone {name!r}") from None


def require_utc(value: datetime, *, field: str) -> datetime:
    """Return ``value`` converted to UTC; a naive datetime raises :class:`ScheduleError`."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ScheduleError(field, f"naive datetime {value.isoformat()} has no UTC offset")
    return value.astimezone(UTC)
