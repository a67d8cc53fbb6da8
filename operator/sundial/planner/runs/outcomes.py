"""Claimed attempts matched with the Jobs observed (DESIGN §4): what each Job's observation says.

* ``Succeeded`` - the run is done: ``RunRecord(Succeeded)``, ``lastSuccessfulTime``, the consecutive
  dead-letter count resets, Event ``SawCompletedJob``.
* ``Failed`` - the attempt failed: counted, ``lastFailureTime``; the run waits for its next attempt
  (``PendingRetry``, Event ``Retrying``) or is dead-lettered when attempts or ``maxRunAge`` ran out.
  Reason ``InvalidJobTemplate`` (the API server rejected the Job) dead-letters the run at once.
* ``Deleted`` tombstone, or gone after it had been seen - ``JobLost``: a failed attempt (Event ``JobLost``).
* Never seen - after ``Context.reissue_after`` the same (same-name, idempotent) CreateJob is issued again.
* Owned by another UID - ``UnexpectedJob``: left alone, the attempt counts as failed so that the next
  attempt gets a new name. (A create answered AlreadyExists by such a Job comes back from the runtime as a
  synthetic failed attempt with reason ``UnexpectedJob``: never re-issued under the squatted name.)
* ``Active`` (or never seen) for longer than ``spec.retry.maxRunAge`` (since its claim, or its nominal time if
  later; not for redriven runs) - the run is dead-lettered ``MaxRunAgeExceeded`` and its Job, if observed,
  deleted (UID precondition, reason ``MaxRunAgeExceeded``); a Job never observed is not deleted (never by
  name alone).
* ``Active`` - ``jobSeen`` is set (persisted with the next material status write only).

A claimed attempt is always matched, and re-issued, under the Job name its claim recorded
(``status.active[].job``), so a run claimed by an older version that named Jobs differently (5-digit name
hashes) keeps its Job across an upgrade.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from sundial import schedule
from sundial.model.enums import CompleteReason, DeadLetterReason, RunResult
from sundial.model.status import ActiveRun, StatusCounter
from sundial.planner.actions import DeleteJob, DeleteReason, EventReason
from sundial.planner.observed import FailureReason, JobPhase, ObservedJob
from sundial.planner.runs.attempts import AGELESS, create_job, describe, note_one_off, run_record
from sundial.planner.runs.retries import Failure, dead_letter, fail_attempt
from sundial.planner.status.drafts import Draft

#: How long after an attempt's ``maxRunAge`` deadline the planner wakes up (the age must be *exceeded*).
OVERDUE_MARGIN = timedelta(milliseconds=1)


def resolve_active(draft: Draft, jobs: Mapping[str, ObservedJob]) -> None:
    """Match every claimed attempt with its Job and apply the outcome."""
    for run in list(draft.active):
        job = jobs.get(run.job)
        if job is not None and job.owner_uid is not None and job.owner_uid != draft.uid:
            draft.emit(
                EventReason.UNEXPECTED_JOB,
                f"Job {run.job} of {describe(run)} is owned by another object (UID {job.owner_uid}); "
                "leaving it alone and counting the attempt as failed",
                warning=True,
            )
            fail_attempt(draft, run, Failure(FailureReason.UNEXPECTED_JOB, "Job owned by another object", draft.now))
        elif job is None or job.phase is JobPhase.DELETED:
            if job is not None or run.job_seen:
                draft.emit(
                    EventReason.JOB_LOST,
                    f"Job {run.job} of {describe(run)} (attempt {run.attempt}) disappeared before finishing",
                    warning=True,
                )
                fail_attempt(
                    draft, run, Failure(FailureReason.JOB_LOST, "the Job disappeared before finishing", draft.now)
                )
            elif _overdue(draft, run):
                _end_overdue(draft, run, None)
            elif draft.now - run.claimed_at >= draft.context.reissue_after:
                _reissue(draft, run)
        elif job.phase is JobPhase.SUCCEEDED:
            _succeed(draft, run, job)
        elif job.phase is not JobPhase.FAILED and _overdue(draft, run):
            _end_overdue(draft, run, job)
        elif job.phase is JobPhase.FAILED:
            failure = Failure(
                job.failure_reason or FailureReason.FAILED, job.failure_message, job.finished_at or draft.now
            )
            fail_attempt(draft, run, failure)
        elif not run.job_seen:
            draft.active[draft.active.index(run)] = run.model_copy(update={"job_seen": True})


def _overdue(draft: Draft, run: ActiveRun) -> bool:
    """The attempt has been active for longer than ``maxRunAge`` (:data:`AGELESS` runs have none), counted
    from its claim or its nominal time, whichever is later: a run started late (catch-up) still gets its
    whole ``maxRunAge``, and planning twice at one instant decides the same."""
    age = draft.spec.retry.max_run_age
    since = max(run.scheduled_time, run.claimed_at)
    return run.trigger not in AGELESS and age is not None and draft.now - since > age


def overdue_deadlines(draft: Draft) -> list[datetime]:
    """When each active attempt passes its ``maxRunAge`` (the planner wakes up then, see :func:`_overdue`)."""
    age = draft.spec.retry.max_run_age
    if age is None:
        return []
    return [
        max(run.scheduled_time, run.claimed_at) + age + OVERDUE_MARGIN
        for run in draft.active
        if run.trigger not in AGELESS
    ]


def _end_overdue(draft: Draft, run: ActiveRun, job: ObservedJob | None) -> None:
    """Dead-letter a run still active past ``maxRunAge``; delete its Job if it was observed (UID precondition)."""
    age = draft.spec.retry.max_run_age
    assert age is not None
    draft.active.remove(run)
    if job is not None and job.uid and job.owner_uid in (None, draft.uid):
        draft.actions.append(DeleteJob(name=run.job, uid=job.uid, reason=DeleteReason.MAX_RUN_AGE))
    state = "still running" if job is not None else "its Job never seen"
    dead_letter(
        draft,
        run,
        DeadLetterReason.MAX_RUN_AGE_EXCEEDED,
        f"attempt {run.attempt} {state} after maxRunAge ({schedule.format_duration(age)})",
        attempts=run.attempt,
    )


def _reissue(draft: Draft, run: ActiveRun) -> None:
    # The claim was written but the Job was never seen: the claiming replica may have died before its
    # create. Repeat the create (same name: AlreadyExists is adopted) and refresh the claim time so it
    # is not repeated on every pass (and so that planning twice at the same instant is idempotent).
    draft.active[draft.active.index(run)] = run.model_copy(update={"claimed_at": draft.now})
    draft.actions.append(create_job(draft, run, reissue=True))


def _succeed(draft: Draft, run: ActiveRun, job: ObservedJob) -> None:
    finished = job.finished_at or draft.now
    draft.active.remove(run)
    draft.count(StatusCounter.SUCCEEDED)
    draft.last_successful_time = max(filter(None, (draft.last_successful_time, finished)))
    draft.consecutive_dead_letters = 0
    draft.record(run_record(run, RunResult.SUCCEEDED, finished))
    note_one_off(draft, run, CompleteReason.SUCCEEDED)
    draft.emit(
        EventReason.SAW_COMPLETED_JOB,
        f"Saw completed Job {run.job} of {describe(run)} (attempt {run.attempt}): Succeeded",
    )
