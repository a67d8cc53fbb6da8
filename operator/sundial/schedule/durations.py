"""Go-style durations (``30s``, ``1h30m``, ``500ms``, ``1.5h``, ``0``), as used across the spec."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from sundial.schedule.errors import ScheduleError

# Nanoseconds per unit; "us" is the ASCII spelling of microseconds, "µs"/"μs" are accepted as in Go.
_UNITS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_MAX_NS = timedelta.max // timedelta(microseconds=1) * 1_000


def parse_duration(text: str, *, field: str) -> timedelta:
    """Parse a non-negative Go duration string.

    A sequence of decimal numbers with a unit each (``ns``, ``us``/``µs``, ``ms``, ``s``, ``m``, ``h``);
    a bare ``0`` is allowed. Negative, empty, unit-less or sub-microsecond values raise
    :class:`ScheduleError` naming ``field``.
    """
    raw = text.strip()
    if raw.startswith("-"):
        raise ScheduleError(field, f"duration {text!r} must not be negative")
    body = raw[1:] if raw.startswith("+") else raw
    if body == "0":
        return timedelta(0)
    if not body:
        raise ScheduleError(field, f"{text!r} is not a duration such as 30s, 1h30m or 500ms")
    total = Decimal(0)
    position = 0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        position = match.end()
        try:
            total += Decimal(match[1]) * _UNITS[match[2]]
        except InvalidOperation:  # pragma: no cover - the regex only admits decimals
            break
    if position != len(body):
        raise ScheduleError(field, f"{text!r} is not a duration such as 30s, 1h30m or 500ms")
    if total > _MAX_NS:
        raise ScheduleError(field, f"duration {text!r} is too large")
    if total % 1_000:
        raise ScheduleError(field, f"duration {text!r} is finer than the supported resolution of 1us")
    return timedelta(microseconds=int(total // 1_000))


def format_duration(value: timedelta) -> str:
    """Format like Go's ``Duration.String()``: ``1h30m0s``, ``2m0.5s``, ``500ms``, ``1.5us``... ``0s``.

    Microseconds are written ``us``; the result parses back to ``value`` with :func:`parse_duration`
    (negative values get a leading ``-`` and do not parse back).
    """
    micros = value // timedelta(microseconds=1)
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000:
        return f"{sign}{micros}us"
    if micros < 1_000_000:
        return f"{sign}{_decimal(micros, 1_000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    text = f"{hours}h" if hours else ""
    if hours or minutes:
        text += f"{minutes}m"
    return f"{sign}{text}{_decimal(rest, 1_000_000)}s"


def _decimal(amount: int, unit: int) -> str:
    whole, fraction = divmod(amount, unit)
    if not fraction:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{fraction:0{digits}d}".rstrip("0")
