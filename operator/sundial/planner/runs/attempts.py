"""Attempts of runs: resolving claimed attempts against observed Jobs, retries and dead letters (DESIGN §4).

Outcomes of an attempt, by what the Job's observation says:

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
from dataclasses import dataclass
from datetime import datetime, timedelta

from sundial import schedule
from sundial.model.enums import CompleteReason, DeadLetterReason, RunResult, Trigger
from sundial.model.status import (
    MAX_ACTIVE,
    MAX_PENDING_RETRIES,
    ActiveRun,
    DeadLetter,
    PendingRetry,
    RunRecord,
    StatusCounter,
)
from sundial.planner import manifests
from sundial.planner.actions import CreateJob, DeleteJob, DeleteReason, EventReason
from sundial.planner.observed import FailureReason, JobPhase, ObservedJob
from sundial.planner.status.drafts import Draft

#: How long after an attempt's ``maxRunAge`` deadline the planner wakes up (the age must be *exceeded*).
OVERDUE_MARGIN = timedelta(milliseconds=1)
AGELESS = frozenset({Trigger.REDRIVE, Trigger.BACKFILL})
"""Runs whose nominal time does not count against ``retry.maxRunAge`` (asked for explicitly, however old);
their retries keep the trigger, so the next attempts are exempt too."""


@dataclass(frozen=True)
class Failure:
    """Why an attempt failed."""

    reason: str
    message: str
    at: datetime
    """When it failed (the Job's finish time, else now)."""


def when(time: datetime) -> str:
    return schedule.format_rfc3339(time)


def describe(run: ActiveRun | PendingRetry | DeadLetter) -> str:
    prefix = "manual run" if run.manual else "run"
    return f"{prefix} {when(run.scheduled_time)}"


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
            _end_attempt(draft, run, Failure(FailureReason.UNEXPECTED_JOB, "Job owned by another object", draft.now))
        elif job is None or job.phase is JobPhase.DELETED:
            if job is not None or run.job_seen:
                draft.emit(
                    EventReason.JOB_LOST,
                    f"Job {run.job} of {describe(run)} (attempt {run.attempt}) disappeared before finishing",
                    warning=True,
                )
                _end_attempt(
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
            _end_attempt(draft, run, failure)
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
    draft.actions.append(_create(draft, run, reissue=True))


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


def run_record(run: ActiveRun, result: RunResult, finished: datetime) -> RunRecord:
    return RunRecord(
        scheduled_time=run.scheduled_time,
        attempts=run.attempt,
        result=result,
        job=run.job,
        trigger=run.trigger,
        started_at=run.claimed_at,
        finished_at=finished,
        manual=run.manual,
    )


def note_one_off(draft: Draft, run: ActiveRun | PendingRetry | DeadLetter, outcome: CompleteReason) -> None:
    if draft.when.finite and not run.manual:
        draft.one_off_outcome = outcome


def _end_attempt(draft: Draft, run: ActiveRun, failure: Failure) -> None:
    """A claimed attempt failed: retry it, or dead-letter the run."""
    draft.active.remove(run)
    draft.count(StatusCounter.FAILED)
    draft.last_failure_time = max(filter(None, (draft.last_failure_time, failure.at)))
    retry = draft.spec.retry
    limit = run.attempt_limit or retry.max_attempts
    ages = run.trigger not in AGELESS and retry.max_run_age is not None
    detail = f"attempt {run.attempt} of {limit} failed: {failure.reason}" + (
        f": {failure.message}" if failure.message else ""
    )
    if failure.reason == FailureReason.INVALID_JOB_TEMPLATE:
        dead_letter(draft, run, DeadLetterReason.INVALID_JOB_TEMPLATE, detail, attempts=run.attempt)
        return
    if run.attempt >= limit:
        dead_letter(draft, run, DeadLetterReason.MAX_ATTEMPTS_EXCEEDED, detail, attempts=run.attempt)
        return
    key = manifests.idempotency_key(uid=draft.uid, scheduled_time=run.scheduled_time, manual=run.manual)
    delay = schedule.backoff_delay(
        failed_attempts=run.attempt,
        initial=retry.backoff.initial,
        factor=retry.backoff.factor,
        maximum=retry.backoff.max,
        seed=key,
    )
    not_before = failure.at + delay
    if ages and retry.max_run_age is not None and not_before > run.scheduled_time + retry.max_run_age:
        dead_letter(
            draft,
            run,
            DeadLetterReason.MAX_RUN_AGE_EXCEEDED,
            f"{detail}; the next attempt would start after maxRunAge",
            attempts=run.attempt,
        )
        return
    if len(draft.pending) >= MAX_PENDING_RETRIES:
        dead_letter(
            draft,
            run,
            DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,
            f"{detail}; too many runs are waiting for a retry",
            attempts=run.attempt,
        )
        return
    draft.pending.append(
        PendingRetry(
            scheduled_time=run.scheduled_time,
            attempt=run.attempt + 1,
            not_before=not_before,
            trigger=run.trigger,
            last_job=run.job,
            last_failure=failure.reason,
            attempt_limit=run.attempt_limit,
            manual=run.manual,
        )
    )
    draft.emit(
        EventReason.RETRYING,
        f"Job {run.job} of {describe(run)}: {detail}; attempt {run.attempt + 1} not before {when(not_before)}",
        warning=True,
    )


def dead_letter(
    draft: Draft,
    run: ActiveRun | PendingRetry,
    reason: DeadLetterReason,
    message: str,
    *,
    attempts: int,
) -> None:
    """Dead-letter a run: bounded ``deadLetters``, counters, Event, and maybe open the circuit."""
    job = run.job if isinstance(run, ActiveRun) else run.last_job or None
    letter = DeadLetter(
        scheduled_time=run.scheduled_time,
        attempts=attempts,
        last_job=job,
        reason=reason,
        message=message,
        trigger=run.trigger,
        dead_lettered_at=draft.now,
        manual=run.manual,
    )
    keep = draft.spec.dead_letter.keep
    draft.dead_letters.append(letter)
    del draft.dead_letters[: max(len(draft.dead_letters) - keep, 0)]
    draft.record(
        RunRecord(
            scheduled_time=run.scheduled_time,
            attempts=attempts,
            result=RunResult.DEAD_LETTERED,
            job=job,
            trigger=run.trigger,
            started_at=run.claimed_at if isinstance(run, ActiveRun) else None,
            finished_at=draft.now,
            manual=run.manual,
        )
    )
    draft.count(StatusCounter.DEAD_LETTERED)
    draft.consecutive_dead_letters += 1
    note_one_off(draft, run, CompleteReason.DEAD_LETTERED)
    draft.emit(EventReason.DEAD_LETTERED, f"{describe(run)} dead-lettered ({reason}): {message}", warning=True)
    threshold = draft.spec.dead_letter.suspend_after
    if threshold and draft.consecutive_dead_letters >= threshold and not draft.circuit_open:
        draft.circuit_generation = draft.generation
        draft.emit(
            EventReason.CIRCUIT_OPEN,
            f"{draft.consecutive_dead_letters} consecutive dead-lettered runs (suspendAfter {threshold}): "
            "no new runs until the spec changes or the dead letters are redriven",
            warning=True,
        )


def start_due_retries(draft: Draft) -> None:
    """Start every pending retry whose ``notBefore`` has come (unless the circuit is open).

    A pending retry whose ``maxRunAge`` has passed (not for redriven runs) is dead-lettered
    ``MaxRunAgeExceeded`` instead.
    """
    for retry in sorted(draft.pending, key=lambda p: (p.not_before, p.scheduled_time)):
        if retry.not_before > draft.now:
            continue
        age = draft.spec.retry.max_run_age
        if retry.trigger not in AGELESS and age is not None and draft.now - retry.scheduled_time > age:
            draft.pending.remove(retry)
            dead_letter(
                draft,
                retry,
                DeadLetterReason.MAX_RUN_AGE_EXCEEDED,
                f"attempt {retry.attempt} was due after maxRunAge ({schedule.format_duration(age)})",
                attempts=retry.attempt - 1,
            )
            continue
        if draft.circuit_open or draft.closing or len(draft.active) >= MAX_ACTIVE:
            continue
        draft.pending.remove(retry)
        trigger = retry.trigger if retry.trigger in AGELESS else Trigger.RETRY
        draft.count(StatusCounter.RETRIED)
        start_attempt(
            draft,
            scheduled_time=retry.scheduled_time,
            attempt=retry.attempt,
            trigger=trigger,
            manual=retry.manual,
            attempt_limit=retry.attempt_limit,
        )


def start_run(draft: Draft, *, scheduled_time: datetime, trigger: Trigger, manual: bool) -> None:
    """Start a new run (its first attempt): counted in ``runs``, ``lastScheduleTime`` moves forward."""
    draft.count(StatusCounter.RUNS)
    draft.last_schedule_time = max(filter(None, (draft.last_schedule_time, scheduled_time)))
    start_attempt(draft, scheduled_time=scheduled_time, attempt=1, trigger=trigger, manual=manual)


def start_attempt(
    draft: Draft,
    *,
    scheduled_time: datetime,
    attempt: int,
    trigger: Trigger,
    manual: bool,
    attempt_limit: int | None = None,
) -> None:
    """Claim an attempt (``status.active``) and create its Job."""
    name = manifests.job_name(
        scheduled_job=draft.obj.metadata.name, scheduled_time=scheduled_time, attempt=attempt, manual=manual
    )
    run = ActiveRun(
        scheduled_time=scheduled_time,
        attempt=attempt,
        job=name,
        trigger=trigger,
        claimed_at=draft.now,
        attempt_limit=attempt_limit,
        manual=manual,
    )
    draft.active.append(run)
    draft.actions.append(_create(draft, run, reissue=False))
    draft.emit(
        EventReason.SUCCESSFUL_CREATE,
        f"Created Job {name} for {describe(run)} (attempt {attempt}, trigger {trigger})",
    )


def _create(draft: Draft, run: ActiveRun, *, reissue: bool) -> CreateJob:
    manifest = manifests.build_job(
        obj=draft.obj,
        scheduled_time=run.scheduled_time,
        attempt=run.attempt,
        trigger=run.trigger,
        fencing_token=draft.context.fencing_token,
        manual=run.manual,
        name=run.job,
    )
    return CreateJob(manifest=manifest, scheduled_time=run.scheduled_time, attempt=run.attempt, reissue=reissue)
