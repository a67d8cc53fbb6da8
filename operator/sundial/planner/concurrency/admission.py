"""Admission of new runs (schedule, catch-up, manual, backfill) under ``concurrencyPolicy`` (DESIGN §4, §4.1, §4.2).

Every policy is one case of :func:`admit`'s ``match``, as the CronJob controller keeps them side by side:

* ``Allow``: all start - at most ``Context.creates_per_pass`` Job creates in one pass (DESIGN §11.1); the
  others wait in ``status.buffered`` (not counted as buffered, no Event) and start in the next passes, which
  come at once, oldest first (:func:`.buffers.release`, :func:`.buffers.deferred`).
* ``Forbid``: a run is skipped (``counters.skipped``, Event ``RunSkipped``) while any run is active or
  waiting for a retry, including one started earlier in the same pass - so of several new runs in one
  pass only the first starts.
* ``Replace``: every active Job is deleted and every pending retry cancelled (their runs end as
  ``Replaced``, Event ``RunReplaced``); of several new runs in one pass only the newest starts and the
  older ones are recorded as ``Replaced`` with 0 attempts (never started) and counted as skipped
  (:mod:`.replacements`).
* ``BufferOne`` / ``BufferAll``: a run due while another is active or waiting for a retry, or while
  runs are buffered, waits in ``status.buffered`` (:mod:`.buffers`).

Under every policy a run that is already active, pending or buffered (a second trigger within the same
second), one that already ran (in ``recentRuns`` with an attempt: a time a backfill ran before the schedule
reached it) and one that would exceed ``MAX_ACTIVE`` are skipped too.

Under every policy a catch-up or backfill run that would start when ``Context.backlog_creates`` is used up
(the namespace's budget, DESIGN §11.1) waits in ``status.buffered`` instead (not counted, no Event) and is
handed to the policy again in a later pass, when the budget has a create for it: delayed, never dropped by
the budget. The runs after it in the pass are admitted as if it were not there - so a run that needs no
budget (the scheduled run, or the catch-up run late by one period: ``Draft.draws``) is not held back by it
(under ``Forbid`` the first such run starts, and the waiting catch-up runs are skipped when they come back
while it is active, as any overlapping run is). Under ``BufferOne`` and
``BufferAll`` the waiting run stands where the active one would, so the buffer still holds its full count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from sundial.model.enums import ConcurrencyPolicy
from sundial.model.status import MAX_ACTIVE, StatusCounter
from sundial.planner.actions import EventReason
from sundial.planner.concurrency import buffers, replacements
from sundial.planner.observed import ObservedJob
from sundial.planner.runs.attempts import start_run, when
from sundial.planner.status.drafts import Draft, NewRun, RunKey

_FORBIDDEN = "another run is active or waiting for a retry (concurrencyPolicy Forbid)"


def admit(draft: Draft, new_runs: Sequence[NewRun], observed: dict[str, ObservedJob]) -> None:
    """Start, skip, replace with or buffer each of ``new_runs`` under ``concurrencyPolicy`` (the module docstring)."""
    policy = draft.spec.concurrency_policy
    match policy:
        case ConcurrencyPolicy.ALLOW:
            ran = _ran(draft)
            for run in new_runs:
                _start(draft, run, ran, defer=True)
        case ConcurrencyPolicy.FORBID:
            ran = _ran(draft)
            for run in new_runs:
                if draft.busy:
                    _skip(draft, run, _FORBIDDEN)
                else:
                    _start(draft, run, ran)
        case ConcurrencyPolicy.REPLACE:
            if new_runs:
                newest = replacements.replace(draft, new_runs, observed)
                _start(draft, newest, _ran(draft))
        case ConcurrencyPolicy.BUFFER_ONE | ConcurrencyPolicy.BUFFER_ALL:
            ran = _ran(draft)
            for run in new_runs:
                nominal, trigger, manual = run
                if why := _duplicate(draft, run, ran):
                    _skip(draft, run, why)
                elif draft.busy or draft.buffered:
                    buffers.buffer(draft, scheduled_time=nominal, trigger=trigger, manual=manual)
                else:
                    _start(draft, run, ran)
        case _:
            assert_never(policy)


def _ran(draft: Draft) -> set[RunKey]:
    """The runs that already ran (in ``recentRuns`` with an attempt)."""
    return {(r.scheduled_time, r.manual) for r in draft.recent if r.attempts}


def _duplicate(draft: Draft, run: NewRun, ran: set[RunKey]) -> str:
    """Why ``run`` is not new ("" when it is): it already ran, or it is active, pending or buffered."""
    nominal, _, manual = run
    key = (nominal, manual)
    if key in ran:
        return "it already ran"
    return "it is already running or waiting" if key in draft.keys_in_flight() else ""


def _start(draft: Draft, run: NewRun, ran: set[RunKey], *, defer: bool = False) -> None:
    """Start ``run`` unless it is a duplicate or too many runs are active; ``defer``: once this pass's Job
    creates are used up, keep it for the next pass (runs kept so count as active for the bound). A catch-up
    or backfill run the namespace's budget has no create for is kept for a later pass under every policy."""
    kept = len(draft.buffered) if defer else 0
    why = _duplicate(draft, run, ran) or ("too many active runs" if len(draft.active) + kept >= MAX_ACTIVE else "")
    if why:
        _skip(draft, run, why)
        return
    nominal, trigger, manual = run
    if (defer and draft.creates_left() <= 0) or not draft.may_start(trigger, nominal):
        buffers.defer(draft, scheduled_time=nominal, trigger=trigger, manual=manual)
        return
    start_run(draft, scheduled_time=nominal, trigger=trigger, manual=manual)
    draft.started(trigger, nominal)


def _skip(draft: Draft, run: NewRun, why: str) -> None:
    nominal, _, manual = run
    draft.count(StatusCounter.SKIPPED)
    label = f"{'manual run' if manual else 'run'} {when(nominal)}"
    draft.emit(EventReason.RUN_SKIPPED, f"Skipped {label}: {why}", warning=True)
