"""Deterministic start jitter: the same run is delayed by the same amount on every replica."""

from __future__ import annotations

from datetime import datetime, timedelta

from sundial.schedule.errors import ScheduleError
from sundial.schedule.hashing import stable_int
from sundial.schedule.rfc3339 import format_rfc3339

_MICROSECOND = timedelta(microseconds=1)


def jitter_offset(*, uid: str, nominal: datetime, jitter: timedelta) -> timedelta:
    """The delay of the run ``(uid, nominal)`` within ``[0, jitter)``, to microsecond resolution.

    Taken from the SHA-256 of ``uid`` and the RFC 3339 form of ``nominal`` (so it does not depend on
    the zone ``nominal`` is expressed in); zero when ``jitter`` is zero.
    """
    if jitter < timedelta(0):
        raise ScheduleError("jitter", "must not be negative")
    micros = jitter // _MICROSECOND
    if micros == 0:
        return timedelta(0)
    return timedelta(microseconds=stable_int("sundial-jitter", uid, format_rfc3339(nominal)) % micros)
