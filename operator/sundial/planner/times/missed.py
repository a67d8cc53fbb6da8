"""Missed nominal times in one pass (DESIGN §4 catch-up): fired but not run, past the catch-up window.

A missed time is counted (``counters.missed``) and announced with a Warning ``MissedSchedule`` Event (one per
time, up to :data:`MAX_MISSED_EVENTS`, then one summary that also counts the times that came due while the
dead-letter circuit was open and says when the enumeration bound left older ones uncounted). A one-off whose
time was missed completes as ``Missed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sundial import schedule
from sundial.model.enums import CompleteReason
from sundial.model.status import StatusCounter
from sundial.planner.actions import EventReason
from sundial.planner.runs.attempts import when
from sundial.planner.status.drafts import Draft

MAX_MISSED_EVENTS = 10
"""``MissedSchedule`` Events per pass, one per missed time; beyond this one summary Event."""


def record(draft: Draft, missed: Sequence[datetime], *, unlisted: bool, dropped: int) -> None:
    """Count missed runs, one ``MissedSchedule`` Event each up to :data:`MAX_MISSED_EVENTS`."""
    draft.count(StatusCounter.MISSED, len(missed) + dropped)
    spec = draft.spec
    window = "unbounded" if spec.catch_up.window is None else schedule.format_duration(spec.catch_up.window)
    for nominal in missed[:MAX_MISSED_EVENTS]:
        draft.emit(
            EventReason.MISSED_SCHEDULE,
            f"Missed run {when(nominal)}: not run under catch-up window {window}, policy {spec.catch_up.policy}",
            warning=True,
        )
    more = len(missed) - MAX_MISSED_EVENTS
    if more > 0 or unlisted or dropped:
        parts = []
        if more > 0:
            parts.append(f"{more} more run(s) missed")
        if dropped:
            parts.append(f"{dropped} run(s) came due while the dead-letter circuit was open")
        if unlisted:
            parts.append(
                f"more than {draft.context.max_enumerated_runs} nominal times were due: older ones were "
                "missed without being counted"
            )
        draft.emit(EventReason.MISSED_SCHEDULE, "; ".join(parts), warning=True)
    if draft.when.finite and missed:
        draft.one_off_outcome = CompleteReason.MISSED
