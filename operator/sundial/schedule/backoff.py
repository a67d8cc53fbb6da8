"""Retry backoff between attempts of one run: exponential, capped, with deterministic jitter."""

from __future__ import annotations

from datetime import timedelta

from sundial.schedule.errors import ScheduleError
from sundial.schedule.hashing import stable_int

JITTER_FRACTION = 0.1
"""The jitter added on top of the exponential delay is at most this fraction of it."""
_MICROSECOND = timedelta(microseconds=1)
_RESOLUTION = 1 << 32


def backoff_delay(
    *, failed_attempts: int, initial: timedelta, factor: float, maximum: timedelta, seed: str
) -> timedelta:
    """The delay before attempt ``failed_attempts + 1``, after ``failed_attempts`` failed ones.

    ``base = min(maximum, initial * factor ** (failed_attempts - 1))``; the result is
    ``min(maximum, base * (1 + 0.1 * u))`` where ``u`` in ``[0, 1)`` comes from the SHA-256 of ``seed``
    (use the run's idempotency key: replicas agree, runs spread out). ``u`` does not depend on the
    attempt, so delays never decrease from one attempt to the next. Zero failed attempts: no delay.
    """
    if failed_attempts < 0:
        raise ScheduleError("retry.attempts", f"failed attempts must not be negative, got {failed_attempts}")
    if initial < timedelta(0):
        raise ScheduleError("retry.backoff.initial", "must not be negative")
    if maximum < timedelta(0):
        raise ScheduleError("retry.backoff.max", "must not be negative")
    if not factor >= 1:  # also rejects NaN
        raise ScheduleError("retry.backoff.factor", f"must be at least 1, got {factor}")
    if failed_attempts == 0:
        return timedelta(0)
    cap = maximum // _MICROSECOND
    base = float(initial // _MICROSECOND)
    for _ in range(failed_attempts - 1):
        if base >= cap or factor == 1:
            break
        base *= factor
    base_micros = min(cap, int(min(float(cap), base)))
    fraction = stable_int("sundial-backoff", seed) % _RESOLUTION
    jitter_micros = int(base_micros * JITTER_FRACTION * fraction / _RESOLUTION)
    return timedelta(microseconds=min(cap, base_micros + jitter_micros))
