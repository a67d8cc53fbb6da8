"""Documented policy enums (values are the spellings used in the ScheduledJob spec)."""

from __future__ import annotations

from enum import StrEnum


class SkippedTime(StrEnum):
    """What to do with a local wall-clock time that does not exist (spring forward)."""

    AUTO = "Auto"
    """``Skip`` for wildcard schedules, ``RunAfterChange`` for the others."""
    SKIP = "Skip"
    """No run."""
    RUN_AFTER_CHANGE = "RunAfterChange"
    """One run at the first instant after the change (skipped times collapse into that one run)."""


class RepeatedTime(StrEnum):
    """What to do with a local wall-clock time that happens twice (fall back)."""

    AUTO = "Auto"
    """``Twice`` for wildcard schedules, ``Once`` for the others."""
    ONCE = "Once"
    """Only the first occurrence."""
    TWICE = "Twice"
    """Both occurrences."""


class CatchUpPolicy(StrEnum):
    """Which of the due (not missed) runs a catch-up pass fires."""

    LATEST = "Latest"
    """Only the newest; the others count as missed."""
    ALL = "All"
    """Oldest first, up to ``maxRuns``; the rest count as missed."""
