"""RFC 3339 timestamps: UTC with a trailing ``Z`` out, an explicit offset required in."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sundial.schedule.errors import ScheduleError
from sundial.schedule.zones import require_utc

_RFC3339 = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[Tt ](?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d+))?"
    r"(?P<offset>[Zz]|[+-]\d{2}:\d{2})"
)


def format_rfc3339(value: datetime) -> str:
    """Format an aware datetime as UTC ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` (no fraction when zero)."""
    utc = require_utc(value, field="time")
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}"
    return text + "Z"


def parse_rfc3339(text: str, *, field: str) -> datetime:
    """Parse an RFC 3339 timestamp with an offset (``Z`` or ``±HH:MM``) into a UTC-aware datetime.

    Fractions finer than a microsecond are truncated.
    """
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        raise ScheduleError(
            field, f"{text!r} is not an RFC 3339 timestamp with an offset, e.g. 2026-12-24T18:00:00+01:00"
        )
    fraction = (match["fraction"] or "")[:6].ljust(6, "0")
    offset = match["offset"].upper().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(f"{match['date']}T{match['time']}.{fraction}{offset}")
        # In UTC a time near year 1 or 9999 may fall outside the years a datetime holds (OverflowError).
        return parsed.astimezone(UTC)
    except (ValueError, OverflowError) as exc:
        raise ScheduleError(field, f"{text!r} is not a valid timestamp: {exc}") from None
