"""Prepared runs (DESIGN §7.5): the reservation in status, its use at the instant (only the Job create, the
status written after in the lane), and the used reservation as the run's claim until status records it.

Three decision tables over the hourly object of the builders: at its next instant with a reservation
(which passes may create first), after the instant with the reservation's Job observed but not recorded
(what every decision sees), and which reservation a pass leaves (and when it writes one on its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import ActiveRun, PendingRetry, Reservation, RunResult, ScheduledJobStatus, parse_status
from sundial.model import names as model_names
from sundial.model.resource import dump_status
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import HOLD_START, RESERVE_AHEAD

from .builders import (
    UID,
    active_run,
    context,
    counters,
    creates,
    deletes,
    events,
    hours_after,
    job,
    make_obj,
    name_at,
    pending_retry,
    raw_spec,
    reserved,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()
NEXT = hours_after(1)
AFTER = hours_after(2)
AT_NEXT = NEXT + timedelta(seconds=2)
AT_AFTER = AFTER + timedelta(seconds=2)


def created_job(when: datetime, phase: JobPhase = JobPhase.ACTIVE, *, owner: str | None = UID) -> ObservedJob:
    """The Job of the run at WHEN as the instant's create made it (its annotations observed)."""
    return ObservedJob(
        name=name_at(when),
        uid=f"uid-of-{name_at(when)}",
        owner_uid=owner,
        phase=phase,
        scheduled_time=when,
        attempt=1,
        created_at=when + timedelta(seconds=1),
        finished_at=when + timedelta(seconds=30) if phase in (JobPhase.SUCCEEDED, JobPhase.FAILED) else None,
        failure_reason="BackoffLimitExceeded" if phase is JobPhase.FAILED else "",
    )


# -- 1. At the instant: which passes create the reserved run's Job without writing first -----------------


@dataclass(frozen=True)
class Instant:
    id: str
    spec: dict[str, Any] = field(default_factory=dict)
    reservation: Reservation | None = field(default_factory=lambda: reserved(NEXT))
    generation: int = 1
    active: tuple[ActiveRun, ...] = ()
    pending: tuple[PendingRetry, ...] = ()
    jobs: tuple[ObservedJob, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    cursor: datetime = T
    now: datetime = AT_NEXT
    expect_creates: tuple[str, ...] = ()
    expect_first: bool = False
    """Created first, the status written after (in the lane)."""


INSTANTS = [
    Instant(
        id="a reserved run at its instant: only its Job, the status after",
        expect_creates=(name_at(NEXT),),
        expect_first=True,
    ),
    Instant(
        id="reserved under another fencing token (a failover since): the claim first",
        reservation=reserved(NEXT, token="0-6"),
        expect_creates=(name_at(NEXT),),
    ),
    Instant(
        id="reserved at another generation (a spec edit since): the claim first",
        generation=2,
        expect_creates=(name_at(NEXT),),
    ),
    Instant(
        id="nothing reserved (an older version's status): the claim first",
        reservation=None,
        expect_creates=(name_at(NEXT),),
    ),
    Instant(
        id="a reservation of an earlier time: the claim first",
        reservation=reserved(T),
        expect_creates=(name_at(NEXT),),
    ),
    Instant(id="suspended since: nothing starts", spec={"suspend": True}, generation=2),
    Instant(
        id="Forbid while a run is active: skipped, no Job",
        spec={"concurrencyPolicy": "Forbid"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
    ),
    Instant(
        id="BufferOne while a run is active: buffered, no Job",
        spec={"concurrencyPolicy": "BufferOne"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
    ),
    Instant(
        id="Replace while a run is active: the delete and the claim first",
        spec={"concurrencyPolicy": "Replace"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_creates=(name_at(NEXT),),
    ),
    Instant(
        id="a manual trigger in the same pass: the claim first",
        annotations={model_names.TRIGGER_ANNOTATION: "now"},
        expect_creates=(name_at(NEXT), name_at(AT_NEXT.replace(microsecond=0), manual=True)),
    ),
    Instant(
        id="a retry due in the same pass: the claim first",
        pending=(pending_retry(T, not_before=T + timedelta(minutes=1)),),
        expect_creates=(name_at(T, 2), name_at(NEXT)),
    ),
    Instant(
        id="an older time caught up in the same pass: the claim first",
        spec={"catchUp": {"policy": "All", "maxRuns": 3}},
        cursor=hours_after(-1),
        expect_creates=(name_at(T), name_at(NEXT)),
    ),
]


@pytest.mark.parametrize("case", INSTANTS, ids=[case.id for case in INSTANTS])
def test_which_passes_create_the_reserved_job_first(case: Instant) -> None:
    stored = status(
        schedule_cursor=case.cursor,
        reservation=case.reservation,
        active=case.active,
        pending_retries=case.pending,
    )
    obj = make_obj(raw_spec(**case.spec), status=stored, generation=case.generation, annotations=case.annotations)
    result = plan(obj, list(case.jobs), context(case.now))

    assert creates(result) == list(case.expect_creates)
    assert result.write_status is (not case.expect_first and result.status != stored), "claim before create"
    assert result.deferred is case.expect_first
    if case.expect_first:
        assert events(result) == ["Normal SuccessfulCreate"]
        # What the lane writes later holds the run and reserves the one after it.
        assert [run.job for run in result.status.active] == [name_at(NEXT)]
        assert result.status.reservation == reserved(AFTER)


# -- 2. After the instant: the used reservation (its Job observed, not yet recorded) is the claim ------------


@dataclass(frozen=True)
class Used:
    id: str
    jobs: tuple[ObservedJob, ...]
    spec: dict[str, Any] = field(default_factory=dict)
    generation: int = 1
    stored: dict[str, Any] = field(default_factory=dict)
    now: datetime = NEXT + timedelta(seconds=5)
    expect_active: tuple[str, ...] = ()
    expect_recent: tuple[tuple[datetime, RunResult], ...] = ()
    expect_pending: tuple[int, ...] = ()
    expect_events: tuple[str, ...] = ()
    expect_creates: tuple[str, ...] = ()
    expect_deletes: tuple[str, ...] = ()
    expect_counters: dict[str, int] = field(default_factory=dict)
    expect_cursor: datetime = NEXT


USED = [
    Used(
        id="its Job running: the run is active, its start held for its end",
        jobs=(created_job(NEXT),),
        expect_active=(name_at(NEXT),),
        expect_counters={"runs": 1},
    ),
    Used(
        id="its Job succeeded: start and completion in one write",
        jobs=(created_job(NEXT, JobPhase.SUCCEEDED),),
        expect_recent=((NEXT, RunResult.SUCCEEDED),),
        expect_events=("Normal SawCompletedJob",),
        expect_counters={"runs": 1, "succeeded": 1},
    ),
    Used(
        id="its Job failed: retried",
        spec={"retry": {"maxAttempts": 2}},
        jobs=(created_job(NEXT, JobPhase.FAILED),),
        expect_pending=(2,),
        expect_events=("Warning Retrying",),
        expect_counters={"runs": 1, "failed": 1},
    ),
    Used(
        id="its Job deleted before the status recorded it: JobLost, retried",
        spec={"retry": {"maxAttempts": 2}},
        jobs=(created_job(NEXT, JobPhase.DELETED),),
        expect_pending=(2,),
        expect_events=("Warning JobLost", "Warning Retrying"),
        expect_counters={"runs": 1, "failed": 1},
    ),
    Used(
        id="a Job of its name owned by another object: UnexpectedJob, the next attempt",
        spec={"retry": {"maxAttempts": 2}},
        jobs=(created_job(NEXT, owner="someone-else"),),
        expect_pending=(2,),
        expect_events=("Warning UnexpectedJob", "Warning Retrying"),
        expect_counters={"runs": 1, "failed": 1},
    ),
    Used(
        id="Forbid: the used reservation's run blocks the next one",
        spec={"concurrencyPolicy": "Forbid"},
        jobs=(created_job(NEXT),),
        now=AT_AFTER,
        expect_active=(name_at(NEXT),),
        expect_events=("Warning RunSkipped",),
        expect_counters={"runs": 1, "skipped": 1},
        expect_cursor=AFTER,
    ),
    Used(
        id="BufferOne: the next run waits for the used reservation's run",
        spec={"concurrencyPolicy": "BufferOne"},
        jobs=(created_job(NEXT),),
        now=AT_AFTER,
        expect_active=(name_at(NEXT),),
        expect_events=("Normal RunBuffered",),
        expect_counters={"runs": 1, "buffered": 1},
        expect_cursor=AFTER,
    ),
    Used(
        id="Replace: the used reservation's Job is deleted, the next run claimed",
        spec={"concurrencyPolicy": "Replace"},
        jobs=(created_job(NEXT),),
        now=AT_AFTER,
        expect_active=(name_at(AFTER),),
        expect_recent=((NEXT, RunResult.REPLACED),),
        expect_events=("Normal RunReplaced", "Normal SuccessfulCreate"),
        expect_creates=(name_at(AFTER),),
        expect_deletes=(name_at(NEXT),),
        expect_counters={"runs": 2},
        expect_cursor=AFTER,
    ),
    Used(
        id="suspended after the instant: the run that started still counts",
        spec={"suspend": True},
        generation=2,
        jobs=(created_job(NEXT),),
        expect_active=(name_at(NEXT),),
        expect_counters={"runs": 1},
    ),
    Used(
        id="a reservation status already recorded: nothing counted twice",
        stored={"schedule_cursor": NEXT, "active": (active_run(NEXT),), "counters_runs": 1},
        jobs=(created_job(NEXT),),
        expect_active=(name_at(NEXT),),
        expect_counters={"runs": 1},
    ),
    Used(
        id="a Job of another time at the reserved name is not its run",
        jobs=(replace(created_job(T), name=name_at(NEXT)),),
        expect_creates=(name_at(NEXT),),
        expect_active=(name_at(NEXT),),
        expect_counters={"runs": 1},
        expect_events=("Normal SuccessfulCreate",),
    ),
]


@pytest.mark.parametrize("case", USED, ids=[case.id for case in USED])
def test_a_used_reservation_is_the_active_attempt_for_every_decision(case: Used) -> None:
    fields = dict(case.stored)
    runs = fields.pop("counters_runs", 0)
    stored = status(reservation=reserved(NEXT), **fields)
    if runs:
        stored = stored.model_copy(update={"counters": stored.counters.model_copy(update={"runs": runs})})
    obj = make_obj(raw_spec(**case.spec), status=stored, generation=case.generation)
    result = plan(obj, list(case.jobs), context(case.now))

    assert events(result) == list(case.expect_events)
    assert creates(result) == list(case.expect_creates)
    assert deletes(result) == list(case.expect_deletes)
    assert [run.job for run in result.status.active] == list(case.expect_active)
    assert [(r.scheduled_time, r.result) for r in result.status.recent_runs] == list(case.expect_recent)
    assert [p.attempt for p in result.status.pending_retries] == list(case.expect_pending)
    assert counters(result) == case.expect_counters
    assert result.status.schedule_cursor == case.expect_cursor
    if not case.stored and not case.expect_creates:
        running = case.id.startswith("its Job running")  # nothing else to write: the start waits for the Job's end
        assert result.write_status is not running, "the first pass that sees the used reservation's Job records it"
        assert (result.hold_until is not None) is running, "... or holds its start while its Job runs (DESIGN §7.5)"


def test_a_reserved_run_whose_job_is_not_observed_yet_is_neither_lost_nor_started_twice() -> None:
    """Between the instant's create and the informer's (or the create response's) Job: the run is still due,
    and planning it again asks for the same Job (the same name: AlreadyExists is adopted) - never JobLost."""
    obj = make_obj(raw_spec(), status=status(reservation=reserved(NEXT)))
    result = plan(obj, [], context(NEXT + timedelta(seconds=20)))
    assert creates(result) == [name_at(NEXT)]
    assert "Warning JobLost" not in events(result)
    assert result.deferred and not result.write_status


def test_the_lane_holds_the_start_while_the_job_runs_and_writes_it_with_the_completion() -> None:
    stored = status(reservation=reserved(NEXT))
    instant = plan(make_obj(raw_spec(), status=stored), [], context(AT_NEXT))
    assert instant.deferred and not instant.write_status and instant.hold_until == NEXT + HOLD_START
    running = [created_job(NEXT)]
    lane = plan(make_obj(raw_spec(), status=stored), running, context(AT_NEXT + timedelta(seconds=1), lane=True))
    assert lane.deferred and not lane.write_status and lane.actions == () and lane.hold_until == NEXT + HOLD_START
    done = [replace(created_job(NEXT), phase=JobPhase.SUCCEEDED, finished_at=AT_NEXT + timedelta(seconds=60))]
    lane = plan(make_obj(raw_spec(), status=stored), done, context(AT_NEXT + timedelta(seconds=61), lane=True))
    assert lane.write_status and not lane.deferred and events(lane) == ["Normal SawCompletedJob"]
    assert lane.status.counters.runs == 1 and lane.status.counters.succeeded == 1 and lane.status.active == ()
    assert lane.status.reservation == reserved(AFTER)
    late = plan(make_obj(raw_spec(), status=stored), running, context(NEXT + HOLD_START, lane=True))
    assert late.write_status and late.hold_until is None, "a Job still running at the hold's end: its start is written"


def test_without_a_hold_the_lane_writes_what_the_instant_deferred_and_then_nothing_more() -> None:
    stored = status(reservation=reserved(NEXT))
    instant = plan(make_obj(raw_spec(), status=stored), [], context(AT_NEXT, hold_start=timedelta(0)))
    assert instant.deferred and not instant.write_status and instant.hold_until is None
    observed = [created_job(NEXT)]
    lane = plan(make_obj(raw_spec(), status=stored), observed,
                context(AT_NEXT + timedelta(seconds=1), lane=True, hold_start=timedelta(0)))  # fmt: skip
    assert lane.write_status and not lane.deferred and lane.actions == ()
    assert lane.status.reservation == reserved(AFTER)
    again = plan(make_obj(raw_spec(), status=lane.status), observed, context(AT_NEXT + timedelta(seconds=2)))
    assert not again.write_status and not again.deferred and again.actions == ()


# -- 3. Which reservation a pass leaves, and when it writes one on its own --------------------------------


def test_an_objects_first_status_reserves_its_first_run() -> None:
    result = plan(make_obj(raw_spec()), [], context(T + timedelta(minutes=5)))
    assert result.write_status
    assert result.status.reservation == reserved(NEXT)


def test_the_write_that_records_a_run_reserves_the_next_one() -> None:
    stored = status(active=(active_run(T),), reservation=reserved(T))
    result = plan(
        make_obj(raw_spec(), status=stored), [job(name_at(T), JobPhase.SUCCEEDED)], context(T + timedelta(minutes=1))
    )
    assert result.write_status
    assert result.status.reservation == reserved(NEXT)


def test_a_suspended_object_reserves_nothing() -> None:
    result = plan(make_obj(raw_spec(suspend=True), status=status(reservation=reserved(NEXT)), generation=2), [],
                  context(T + timedelta(minutes=1)))  # fmt: skip
    assert result.write_status
    assert result.status.reservation is None


def test_a_one_off_reserves_its_time_until_it_is_handled() -> None:
    at = NEXT
    first = plan(make_obj(raw_spec(schedule=None, runAt=at.isoformat())), [], context(T))
    assert first.status.reservation == reserved(at)
    instant = plan(make_obj(raw_spec(schedule=None, runAt=at.isoformat()), status=first.status), [],
                   context(at + timedelta(seconds=1)))  # fmt: skip
    assert instant.deferred and creates(instant) == [name_at(at)]
    assert instant.status.reservation is None


@pytest.mark.parametrize(
    ("now", "lane", "write", "deferred", "wake"),
    [
        pytest.param(NEXT - RESERVE_AHEAD, False, False, True, NEXT, id="due within reserve_ahead: to the lane"),
        pytest.param(NEXT - RESERVE_AHEAD, True, True, False, NEXT, id="the lane's pass writes it"),
        pytest.param(
            T + timedelta(minutes=1),
            False,
            False,
            False,
            NEXT - RESERVE_AHEAD,
            id="due later: wake reserve_ahead before it",
        ),
        pytest.param(
            T + timedelta(minutes=1),
            True,
            False,
            False,
            NEXT - RESERVE_AHEAD,
            id="due later: not even the lane writes it yet",
        ),
    ],
)
def test_a_stale_reservation_is_written_on_its_own_only_through_the_lane_and_only_when_due_soon(
    now: datetime, lane: bool, write: bool, deferred: bool, wake: datetime
) -> None:
    stale = status(reservation=reserved(NEXT, token="0-6"))  # written before a failover
    result = plan(make_obj(raw_spec(), status=stale), [], context(now, lane=lane))
    assert result.actions == ()
    assert (result.write_status, result.deferred, result.wake_at) == (write, deferred, wake)
    if write:
        assert result.status.reservation == reserved(NEXT)


def test_a_reservation_alone_never_makes_a_write_material_without_the_lane() -> None:
    """An object whose only difference is the reservation (an older version's status) writes nothing at once."""
    old = status()
    result = plan(make_obj(raw_spec(), status=old), [], context(NEXT - timedelta(minutes=1)))
    assert (result.write_status, result.deferred) == (False, True)


def test_a_stored_reservation_round_trips_and_an_unknown_one_starts_afresh() -> None:
    kept = status(reservation=reserved(NEXT))
    assert parse_status(dump_status(kept)) == kept
    assert dump_status(kept)["reservation"] == {
        "scheduledTime": "2026-05-11T11:00:00Z",
        "job": name_at(NEXT),
        "fencingToken": "0-7",
        "generation": 1,
    }
    assert parse_status({"reservation": {"scheduledTime": "x"}}) == ScheduledJobStatus()


def test_with_prepared_runs_off_nothing_is_reserved_and_every_run_is_claimed_first() -> None:
    first = plan(make_obj(raw_spec()), [], context(T + timedelta(minutes=5), prepared_runs=False))
    assert first.write_status and first.status.reservation is None
    stored = status(reservation=reserved(NEXT))  # reserved before the switch
    instant = plan(make_obj(raw_spec(), status=stored), [], context(AT_NEXT, prepared_runs=False))
    assert creates(instant) == [name_at(NEXT)]
    assert instant.write_status and not instant.deferred, "the claim is written before the create"
    assert instant.status.reservation is None
    used = plan(make_obj(raw_spec(), status=stored), [created_job(NEXT)], context(AT_NEXT, prepared_runs=False))
    assert [run.job for run in used.status.active] == [name_at(NEXT)], "a reservation used before still counts"
    assert creates(used) == []


def test_an_instant_that_changes_more_than_the_start_is_not_held() -> None:
    """The instant's pass creates the reserved Job first as ever, but what else it changed (here: conditions the
    stored status lacks) goes out with the lane's first pass, not after the Job's end."""
    stored = status(reservation=reserved(NEXT)).model_copy(update={"conditions": ()})
    instant = plan(make_obj(raw_spec(), status=stored), [], context(AT_NEXT))
    assert instant.deferred and not instant.write_status and creates(instant) == [name_at(NEXT)]
    assert instant.hold_until is None
    lane = plan(make_obj(raw_spec(), status=stored), [created_job(NEXT)], context(AT_NEXT + timedelta(seconds=1)))
    assert lane.write_status and lane.hold_until is None
