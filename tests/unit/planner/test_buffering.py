"""concurrencyPolicy BufferOne and BufferAll (DESIGN §4.1): overlapping runs wait in status, then start."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import ActiveRun, BufferedRun, PendingRetry, Trigger, names, parse_status
from sundial.model.resource import dump_status
from sundial.planner.actions import CreateJob
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan

from .builders import (
    active_run,
    context,
    counters,
    creates,
    events,
    hours_after,
    job,
    make_obj,
    name_at,
    pending_retry,
    raw_spec,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()
NEXT = hours_after(1)
AFTER_NEXT = hours_after(2)
JUST_AFTER_NEXT = NEXT + timedelta(seconds=3)
JUST_AFTER_AFTER_NEXT = AFTER_NEXT + timedelta(seconds=3)
ACTIVE_JOB_ENDS = NEXT + timedelta(minutes=20)


def waiting(when: datetime, *, trigger: Trigger = Trigger.SCHEDULE, manual: bool = False) -> BufferedRun:
    return BufferedRun(scheduled_time=when, trigger=trigger, buffered_at=when, manual=manual)


@dataclass(frozen=True)
class Case:
    id: str
    policy: str
    cursor: datetime = T
    active: tuple[ActiveRun, ...] = ()
    pending: tuple[PendingRetry, ...] = ()
    buffered: tuple[BufferedRun, ...] = ()
    jobs: tuple[ObservedJob, ...] = ()
    now: datetime = JUST_AFTER_NEXT
    spec: dict[str, Any] = field(default_factory=dict)
    expect_events: tuple[str, ...] = ()
    expect_creates: tuple[str, ...] = ()
    expect_counters: dict[str, int] = field(default_factory=dict)
    expect_buffered: tuple[datetime, ...] = ()


CASES = [
    Case(
        id="buffer one keeps a run due while another is active",
        policy="BufferOne",
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_events=("Normal RunBuffered",),
        expect_counters={"buffered": 1},
        expect_buffered=(NEXT,),
    ),
    Case(
        id="buffer one keeps a run due while another waits for a retry",
        policy="BufferOne",
        pending=(pending_retry(T, not_before=hours_after(3)),),
        expect_events=("Normal RunBuffered",),
        expect_counters={"buffered": 1},
        expect_buffered=(NEXT,),
    ),
    Case(
        id="buffer one skips a later run while one already waits",
        policy="BufferOne",
        cursor=NEXT,
        active=(active_run(T),),
        buffered=(waiting(NEXT),),
        jobs=(job(name_at(T)),),
        now=JUST_AFTER_AFTER_NEXT,
        expect_events=("Warning RunSkipped",),
        expect_counters={"skipped": 1},
        expect_buffered=(NEXT,),
    ),
    Case(
        id="buffer all keeps every later run, oldest first",
        policy="BufferAll",
        cursor=NEXT,
        active=(active_run(T),),
        buffered=(waiting(NEXT),),
        jobs=(job(name_at(T)),),
        now=JUST_AFTER_AFTER_NEXT,
        expect_events=("Normal RunBuffered",),
        expect_counters={"buffered": 1},
        expect_buffered=(NEXT, AFTER_NEXT),
    ),
    Case(
        id="the buffered run starts with its own nominal time's job name once the active run succeeded",
        policy="BufferOne",
        cursor=NEXT,
        active=(active_run(T),),
        buffered=(waiting(NEXT),),
        jobs=(job(name_at(T), JobPhase.SUCCEEDED, finished=ACTIVE_JOB_ENDS),),
        now=ACTIVE_JOB_ENDS,
        expect_events=("Normal SawCompletedJob", "Normal SuccessfulCreate"),
        expect_creates=(name_at(NEXT),),
        expect_counters={"succeeded": 1, "runs": 1},
    ),
    Case(
        id="buffer all starts one buffered run per pass and the next waits for it",
        policy="BufferAll",
        cursor=AFTER_NEXT,
        active=(active_run(T),),
        buffered=(waiting(NEXT), waiting(AFTER_NEXT)),
        jobs=(job(name_at(T), JobPhase.SUCCEEDED, finished=JUST_AFTER_AFTER_NEXT),),
        now=JUST_AFTER_AFTER_NEXT,
        expect_events=("Normal SawCompletedJob", "Normal SuccessfulCreate"),
        expect_creates=(name_at(NEXT),),
        expect_counters={"succeeded": 1, "runs": 1},
        expect_buffered=(AFTER_NEXT,),
    ),
    Case(
        id="a new due run queues behind the buffered ones even when nothing is active",
        policy="BufferAll",
        cursor=NEXT,
        buffered=(waiting(NEXT),),
        now=JUST_AFTER_AFTER_NEXT,
        expect_events=("Normal SuccessfulCreate", "Normal RunBuffered"),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1, "buffered": 1},
        expect_buffered=(AFTER_NEXT,),
    ),
    Case(
        id="a buffered run waits while the active run's retry is pending",
        policy="BufferOne",
        cursor=NEXT,
        pending=(pending_retry(T, not_before=hours_after(3)),),
        buffered=(waiting(NEXT),),
        now=NEXT + timedelta(minutes=30),
        expect_buffered=(NEXT,),
    ),
    Case(
        id="a buffered run does not start while the dead-letter circuit is open",
        policy="BufferOne",
        cursor=NEXT,
        buffered=(waiting(NEXT),),
        spec={"deadLetter": {"suspendAfter": 1}},
        now=NEXT + timedelta(minutes=30),
        expect_buffered=(NEXT,),
    ),
    Case(
        id="a buffered manual run keeps its manual name form",
        policy="BufferOne",
        cursor=NEXT,
        buffered=(waiting(NEXT, trigger=Trigger.MANUAL, manual=True),),
        now=NEXT + timedelta(minutes=30),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(NEXT, manual=True),),
        expect_counters={"runs": 1},
    ),
    Case(
        id="after a change to Allow the buffered runs start at once",
        policy="Allow",
        cursor=NEXT,
        active=(active_run(T),),
        buffered=(waiting(NEXT),),
        jobs=(job(name_at(T)),),
        now=NEXT + timedelta(minutes=30),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1},
    ),
    Case(
        id="forbid still skips",
        policy="Forbid",
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_events=("Warning RunSkipped",),
        expect_counters={"skipped": 1},
    ),
]


def _obj(case: Case) -> Any:
    circuit = 1 if case.spec.get("deadLetter") else None
    return make_obj(
        raw_spec(concurrencyPolicy=case.policy, **case.spec),
        status=status(
            schedule_cursor=case.cursor,
            active=case.active,
            pending_retries=case.pending,
            buffered=case.buffered,
            circuit_generation=circuit,
            consecutive_dead_letters=1 if circuit else 0,
        ),
    )


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_buffering(case: Case) -> None:
    result = plan(_obj(case), case.jobs, context(case.now))

    assert events(result) == list(case.expect_events)
    assert creates(result) == list(case.expect_creates)
    assert counters(result) == case.expect_counters
    assert [b.scheduled_time for b in result.status.buffered] == list(case.expect_buffered)


def test_a_released_run_carries_its_trigger_and_the_idempotency_key_of_its_nominal_time() -> None:
    case = CASES[4]
    result = plan(_obj(case), case.jobs, context(case.now))
    (create,) = [a for a in result.actions if isinstance(a, CreateJob)]
    annotations = create.manifest["metadata"]["annotations"]
    assert annotations[names.TRIGGER_ANNOTATION] == Trigger.SCHEDULE
    assert create.scheduled_time == NEXT
    scheduled = plan(make_obj(raw_spec(), status=status(schedule_cursor=T)), (), context(JUST_AFTER_NEXT)).actions
    (direct,) = [a for a in scheduled if isinstance(a, CreateJob)]
    assert (
        direct.manifest["metadata"]["annotations"][names.IDEMPOTENCY_KEY_ANNOTATION]
        == annotations[names.IDEMPOTENCY_KEY_ANNOTATION]
    )


def test_the_buffer_survives_a_status_round_trip_so_a_restart_keeps_it() -> None:
    case = CASES[0]
    result = plan(_obj(case), case.jobs, context(case.now))
    again = parse_status(dump_status(result.status))
    assert again.buffered == result.status.buffered
    assert again.counters.buffered == 1


def test_planning_again_after_buffering_buffers_nothing_more() -> None:
    case = CASES[0]
    first = plan(_obj(case), case.jobs, context(case.now))
    obj = make_obj(raw_spec(concurrencyPolicy=case.policy), status=first.status)
    second = plan(obj, case.jobs, context(case.now))
    assert not second.write_status and events(second) == []
