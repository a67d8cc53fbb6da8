"""A failed attempt: a retry with backoff, or a dead letter (DESIGN §4).

A failed attempt is counted (``lastFailureTime``) and the run waits for its next attempt in
``status.pendingRetries`` (Event ``Retrying``, ``notBefore`` from the backoff) - unless its attempts ran out
(``MaxAttemptsExceeded``), the next one would start after ``retry.maxRunAge`` (``MaxRunAgeExceeded``), or the
API server rejected the Job (``InvalidJobTemplate``, at once): then the run is dead-lettered (bounded
``deadLetters``, Event ``DeadLettered``), and ``deadLetter.suspendAfter`` consecutive dead letters open the
circuit (Event ``CircuitOpen``). Pending retries whose ``notBefore`` has come start their next attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
from sundial.planner.actions import EventReason
from sundial.planner.observed import FailureReason
from sundial.planner.runs.attempts import AGELESS, describe, note_one_off, start_attempt, when
from sundial.planner.status.drafts import Draft


@dataclass(frozen=True)
class Failure:
    """Why an attempt failed."""

    reason: str
    message: str
    at: datetime
    """When it failed (the Job's finish time, else now)."""


def fail_attempt(draft: Draft, run: ActiveRun, failure: Failure) -> None:
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
