"""Rules 3 and 9: claimed attempts meet their Jobs; retries start; re-issues; unexpected Jobs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial import schedule
from sundial.model import ActiveRun, DeadLetterReason, PendingRetry, Trigger
from sundial.planner import manifests
from sundial.planner.actions import CreateJob
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import RESERVE_AHEAD

from .builders import (
    UID,
    active_run,
    context,
    counters,
    creates,
    events,
    job,
    make_obj,
    name_at,
    pending_retry,
    raw_spec,
    seconds_after,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()
FIVE_MINUTES_IN = seconds_after(300)


def hours_after_one() -> datetime:
    return T + timedelta(hours=1)


RETRY3 = {"maxAttempts": 3, "backoff": {"initial": "30s", "factor": 2, "max": "1h"}}


def backoff(attempts: int, when: datetime = T) -> timedelta:
    return schedule.backoff_delay(
        failed_attempts=attempts,
        initial=timedelta(seconds=30),
        factor=2,
        maximum=timedelta(hours=1),
        seed=manifests.idempotency_key(uid=UID, scheduled_time=when),
    )


@dataclass(frozen=True)
class Case:
    id: str
    # spec
    retry: dict[str, Any] = field(default_factory=lambda: dict(RETRY3))
    # status
    active: tuple[ActiveRun, ...] = ()
    pending: tuple[PendingRetry, ...] = ()
    consecutive: int = 0
    # environment
    jobs: tuple[ObservedJob, ...] = ()
    now: datetime = FIVE_MINUTES_IN
    # expectations
    expect_events: tuple[str, ...] = ()
    expect_creates: tuple[str, ...] = ()
    expect_active: tuple[tuple[str, Trigger, bool], ...] = ()
    """(job, trigger, seen)"""
    expect_pending: tuple[tuple[int, datetime], ...] = ()
    """(attempt, not before)"""
    expect_dead: tuple[DeadLetterReason, ...] = ()
    expect_counters: dict[str, int] = field(default_factory=dict)
    expect_write: bool = True
    expect_wake: datetime | None = None


FAILED_AT = seconds_after(240)
CASES = [
    Case(
        id="a succeeded job ends the run and resets the consecutive dead letters",
        active=(active_run(T),),
        consecutive=2,
        jobs=(job(name_at(T), JobPhase.SUCCEEDED, finished=seconds_after(200)),),
        expect_events=("Normal SawCompletedJob",),
        expect_counters={"succeeded": 1},
    ),
    Case(
        id="a failed job with attempts left waits for its backoff",
        active=(active_run(T),),
        jobs=(job(name_at(T), JobPhase.FAILED, finished=FAILED_AT, reason="BackoffLimitExceeded"),),
        now=FAILED_AT + timedelta(seconds=1),
        expect_events=("Warning Retrying",),
        expect_pending=((2, FAILED_AT + backoff(1)),),
        expect_counters={"failed": 1},
        expect_wake=FAILED_AT + backoff(1),
    ),
    Case(
        id="a failed job whose backoff already passed starts its next attempt at once",
        active=(active_run(T),),
        jobs=(job(name_at(T), JobPhase.FAILED, finished=FAILED_AT, reason="DeadlineExceeded"),),
        now=FAILED_AT + timedelta(minutes=5),
        expect_events=("Warning Retrying", "Normal SuccessfulCreate"),
        expect_creates=(name_at(T, 2),),
        expect_active=((name_at(T, 2), Trigger.RETRY, False),),
        expect_counters={"failed": 1, "retried": 1},
        expect_wake=FAILED_AT + timedelta(minutes=5, seconds=15),
    ),
    Case(
        id="a failed job on the last attempt is dead-lettered for max attempts",
        active=(active_run(T, 3, trigger=Trigger.RETRY),),
        jobs=(job(name_at(T, 3), JobPhase.FAILED, finished=FAILED_AT, reason="BackoffLimitExceeded"),),
        expect_events=("Warning DeadLettered",),
        expect_dead=(DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,),
        expect_counters={"failed": 1, "dead_lettered": 1},
    ),
    Case(
        id="an invalid job template is dead-lettered at once without a retry",
        active=(active_run(T, seen=False),),
        jobs=(job(name_at(T), JobPhase.FAILED, reason="InvalidJobTemplate"),),
        expect_events=("Warning DeadLettered",),
        expect_dead=(DeadLetterReason.INVALID_JOB_TEMPLATE,),
        expect_counters={"failed": 1, "dead_lettered": 1},
    ),
    Case(
        id="a run older than maxRunAge gets no further attempt",
        retry={**RETRY3, "maxRunAge": "3m"},
        active=(active_run(T),),
        jobs=(job(name_at(T), JobPhase.FAILED, finished=FAILED_AT),),
        expect_events=("Warning DeadLettered",),
        expect_dead=(DeadLetterReason.MAX_RUN_AGE_EXCEEDED,),
        expect_counters={"failed": 1, "dead_lettered": 1},
    ),
    Case(
        id="a retry whose backoff would end after maxRunAge is dead-lettered for run age",
        retry={**RETRY3, "maxRunAge": "4m10s"},
        active=(active_run(T),),
        jobs=(job(name_at(T), JobPhase.FAILED, finished=FAILED_AT),),
        now=FAILED_AT,
        expect_events=("Warning DeadLettered",),
        expect_dead=(DeadLetterReason.MAX_RUN_AGE_EXCEEDED,),
        expect_counters={"failed": 1, "dead_lettered": 1},
    ),
    Case(
        id="a redriven run ignores maxRunAge and keeps its redrive trigger",
        retry={**RETRY3, "maxRunAge": "1m"},
        active=(active_run(T, 2, trigger=Trigger.REDRIVE, limit=4),),
        jobs=(job(name_at(T, 2), JobPhase.FAILED, finished=FAILED_AT),),
        now=FAILED_AT + timedelta(seconds=1),
        expect_events=("Warning Retrying",),
        expect_pending=((3, FAILED_AT + backoff(2)),),
        expect_counters={"failed": 1},
        expect_wake=FAILED_AT + backoff(2),
    ),
    Case(
        id="an active job is marked seen without a status write",
        active=(active_run(T, seen=False, claimed=seconds_after(1)),),
        jobs=(job(name_at(T)),),
        expect_active=((name_at(T), Trigger.SCHEDULE, True),),
        expect_write=False,
        # Nothing reserved the next run yet: the object wakes to reserve it ahead of its instant (DESIGN §7.5).
        expect_wake=hours_after_one() - RESERVE_AHEAD,
    ),
    Case(
        id="a deleted job's tombstone means the job was lost and the attempt failed",
        active=(active_run(T),),
        jobs=(job(name_at(T), JobPhase.DELETED),),
        now=seconds_after(301),
        expect_events=("Warning JobLost", "Warning Retrying"),
        expect_pending=((2, seconds_after(301) + backoff(1)),),
        expect_counters={"failed": 1},
        expect_wake=seconds_after(301) + backoff(1),
    ),
    Case(
        id="a seen job that disappeared was lost",
        retry={"maxAttempts": 1},
        active=(active_run(T),),
        expect_events=("Warning JobLost", "Warning DeadLettered"),
        expect_dead=(DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,),
        expect_counters={"failed": 1, "dead_lettered": 1},
    ),
    Case(
        id="an unseen claim younger than the re-issue delay waits for its job",
        active=(active_run(T, seen=False, claimed=seconds_after(290)),),
        expect_active=((name_at(T), Trigger.SCHEDULE, False),),
        expect_write=False,
        expect_wake=seconds_after(305),
    ),
    Case(
        id="an unseen claim older than the re-issue delay re-issues the same create",
        active=(active_run(T, seen=False, claimed=seconds_after(10)),),
        expect_creates=(name_at(T),),
        expect_active=((name_at(T), Trigger.SCHEDULE, False),),
        expect_wake=seconds_after(315),
    ),
    Case(
        id="a job owned by another object is reported and the attempt counts as failed",
        active=(active_run(T),),
        jobs=(job(name_at(T), owner="someone-else"),),
        now=seconds_after(301),
        expect_events=("Warning UnexpectedJob", "Warning Retrying"),
        expect_pending=((2, seconds_after(301) + backoff(1)),),
        expect_counters={"failed": 1},
        expect_wake=seconds_after(301) + backoff(1),
    ),
    Case(
        id="a due pending retry starts the next attempt with trigger retry",
        pending=(pending_retry(T, 2, not_before=seconds_after(299)),),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(T, 2),),
        expect_active=((name_at(T, 2), Trigger.RETRY, False),),
        expect_counters={"retried": 1},
        expect_wake=seconds_after(315),
    ),
    Case(
        id="a pending retry that is not due yet waits",
        pending=(pending_retry(T, 2, not_before=seconds_after(400)),),
        expect_pending=((2, seconds_after(400)),),
        expect_write=False,
        expect_wake=seconds_after(400),
    ),
    Case(
        id="a pending retry past maxRunAge is dead-lettered instead of starting",
        retry={**RETRY3, "maxRunAge": "2m"},
        pending=(pending_retry(T, 2, not_before=seconds_after(299)),),
        expect_events=("Warning DeadLettered",),
        expect_dead=(DeadLetterReason.MAX_RUN_AGE_EXCEEDED,),
        expect_counters={"dead_lettered": 1},
    ),
    Case(
        id="a redriven pending retry ignores maxRunAge and starts with trigger redrive",
        retry={**RETRY3, "maxRunAge": "2m"},
        pending=(pending_retry(T, 2, not_before=seconds_after(299), trigger=Trigger.REDRIVE, limit=4),),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(T, 2),),
        expect_active=((name_at(T, 2), Trigger.REDRIVE, False),),
        expect_counters={"retried": 1},
        expect_wake=seconds_after(315),
    ),
    Case(
        id="the retry of a manual run keeps the manual job name",
        pending=(pending_retry(T, 2, not_before=seconds_after(299), trigger=Trigger.MANUAL, manual=True),),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(T, 2, manual=True),),
        expect_active=((name_at(T, 2, manual=True), Trigger.RETRY, False),),
        expect_counters={"retried": 1},
        expect_wake=seconds_after(315),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_attempts(case: Case) -> None:
    obj = make_obj(
        raw_spec(retry=case.retry),
        status=status(
            active=case.active,
            pending_retries=case.pending,
            consecutive_dead_letters=case.consecutive,
        ),
    )
    result = plan(obj, case.jobs, context(case.now))

    assert events(result) == list(case.expect_events)
    assert creates(result) == list(case.expect_creates)
    assert [(a.job, a.trigger, a.job_seen) for a in result.status.active] == list(case.expect_active)
    assert [(p.attempt, p.not_before) for p in result.status.pending_retries] == list(case.expect_pending)
    assert [d.reason for d in result.status.dead_letters] == list(case.expect_dead)
    assert counters(result) == case.expect_counters
    assert result.write_status is case.expect_write
    wake = case.expect_wake or hours_after_one()
    assert result.wake_at == min(wake, hours_after_one())


def test_a_success_records_the_run_and_its_finish_time() -> None:
    finished = seconds_after(200)
    obj = make_obj(raw_spec(), status=status(active=(active_run(T),), consecutive_dead_letters=2))
    result = plan(obj, [job(name_at(T), JobPhase.SUCCEEDED, finished=finished)], context(seconds_after(300)))
    assert result.status.last_successful_time == finished
    assert result.status.consecutive_dead_letters == 0
    (record,) = result.status.recent_runs
    assert (record.result, record.attempts, record.job, record.finished_at) == ("Succeeded", 1, name_at(T), finished)


def test_a_failure_records_the_failure_time_and_the_retry_keeps_its_trigger() -> None:
    obj = make_obj(raw_spec(retry=RETRY3), status=status(active=(active_run(T, trigger=Trigger.CATCH_UP),)))
    result = plan(obj, [job(name_at(T), JobPhase.FAILED, finished=FAILED_AT)], context(FAILED_AT))
    assert result.status.last_failure_time == FAILED_AT
    (retry,) = result.status.pending_retries
    assert (retry.trigger, retry.last_job, retry.last_failure) == (Trigger.CATCH_UP, name_at(T), "Failed")


def test_a_reissued_create_is_marked_and_refreshes_the_claim() -> None:
    obj = make_obj(raw_spec(), status=status(active=(active_run(T, seen=False, claimed=seconds_after(10)),)))
    result = plan(obj, [], context(seconds_after(300)))
    (create,) = [a for a in result.actions if isinstance(a, CreateJob)]
    assert create.reissue
    assert result.status.active[0].claimed_at == seconds_after(300)


def test_a_new_attempt_is_claimed_with_the_claim_time_and_attempt_limit() -> None:
    obj = make_obj(
        raw_spec(retry=RETRY3),
        status=status(pending_retries=(pending_retry(T, 3, not_before=T, trigger=Trigger.REDRIVE, limit=5),)),
    )
    result = plan(obj, [], context(seconds_after(300)))
    (run,) = result.status.active
    assert (run.attempt, run.claimed_at, run.attempt_limit, run.job_seen) == (3, seconds_after(300), 5, False)
    (create,) = [a for a in result.actions if isinstance(a, CreateJob)]
    assert (create.scheduled_time, create.attempt, create.reissue) == (T, 3, False)
