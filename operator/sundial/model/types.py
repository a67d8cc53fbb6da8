"""Field types shared by spec and status: Go-style durations and RFC 3339 UTC timestamps."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, StringConstraints

from sundial import schedule

#: Longest free-text message kept in status (mirrors the CRD's maxLength); longer text is truncated.
MAX_MESSAGE_LENGTH = 1024
_ELLIPSIS = "..."
#: Longest token kept in status (``lastHandled*``, ``backfills[].token``; mirrors the CRD and
#: :data:`sundial.model.names.MAX_TOKEN_LENGTH`).
MAX_TOKEN_LENGTH = 253
INVALID_TOKEN_PREFIX = "invalid-"

#: Longest accepted duration: Go's ``time.Duration`` maximum (2^63-1 ns, ~292 years), truncated to whole
#: microseconds. The CRD pattern admits any number of digits ("9999999999h"); a longer value is not a Go duration
#: (CEL's ``duration()`` refuses it too) and would overflow ``datetime`` arithmetic in the planner.
MAX_DURATION = timedelta(microseconds=(2**63 - 1) // 1_000)


def _truncate_message(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_MESSAGE_LENGTH:
        return value[: MAX_MESSAGE_LENGTH - len(_ELLIPSIS)] + _ELLIPSIS
    return value


def invalid_token_marker(raw: str) -> str:
    """What status records for a token (or backfill annotation) that was not handled: ``invalid-`` and 12 hex
    digits of its SHA-256 (so the same value is refused once, and a new one again)."""
    return INVALID_TOKEN_PREFIX + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _bounded_token(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_TOKEN_LENGTH:
        return invalid_token_marker(value)  # written by an older version: never handled again, never re-echoed
    return value


def _to_duration(value: Any) -> Any:
    if isinstance(value, str):
        try:
            parsed = schedule.parse_duration(value, field="duration")
        except schedule.ScheduleError as error:
            raise ValueError(error.message) from None
        return _bounded(parsed, value)
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise ValueError("must not be negative")
        return _bounded(value, value)
    raise ValueError('must be a duration string such as "30s", "5m" or "1h30m"')


def _bounded(value: timedelta, given: Any) -> timedelta:
    if value > MAX_DURATION:
        raise ValueError(
            f"duration {given!r} is too large: at most {schedule.format_duration(MAX_DURATION)} (a Go duration)"
        )
    return value


def _to_timestamp(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return schedule.parse_rfc3339(value, field="timestamp")
        except schedule.ScheduleError as error:
            raise ValueError(error.message) from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("must carry a time zone offset (naive datetimes are refused)")
        return value
    raise ValueError('must be an RFC 3339 timestamp such as "2026-12-24T18:00:00+01:00"')


Duration = Annotated[
    timedelta,
    BeforeValidator(_to_duration),
    PlainSerializer(schedule.format_duration, return_type=str),
]
"""A non-negative Go-style duration ("30s", "1h30m"), serialized back to that form."""

Timestamp = Annotated[
    datetime,
    BeforeValidator(_to_timestamp),
    PlainSerializer(schedule.format_rfc3339, return_type=str),
]
"""A time-zone-aware instant, written as RFC 3339 in UTC ("2026-12-24T17:00:00Z")."""

Message = Annotated[str, StringConstraints(max_length=MAX_MESSAGE_LENGTH), BeforeValidator(_truncate_message)]
"""Free text for status (condition and failure messages): truncated to ``MAX_MESSAGE_LENGTH`` characters,
so a long Job failure message can never make a status write fail the CRD's ``maxLength``."""

Token = Annotated[str, StringConstraints(max_length=MAX_TOKEN_LENGTH), BeforeValidator(_bounded_token)]
"""A handled token in status: at most ``MAX_TOKEN_LENGTH`` characters; a longer one (from a status an older
version wrote) is read as its :func:`invalid_token_marker`, so a status write never fails the CRD's ``maxLength``."""
