"""Rules 10 and 11: one-off objects (runAt, ASAP) and finished-Job history limits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from sundial import schedule
from sundial.model import ScheduledJobStatus
from sundial.planner.actions import DeleteJob
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan

from .builders import (
    UID,
    active_run,
    condition,
    context,
    created,
    creates,
    deletes,
    deletes_object,
    events,
    job,
    make_obj,
    name_at,
    raw_spec,
    seconds_after,
    top_of_the_hour,
)
from .builders import status as settled_status

T = top_of_the_hour()


def one_off(**fields: object) -> dict[str, object]:
    return raw_spec(schedule=None, **fields)


def test_a_run_at_in_the_future_waits_for_it() -> None:
    result = plan(make_obj(one_off(runAt=schedule.format_rfc3339(T))), [], context(seconds_after(-60)))
    assert creates(result) == []
    assert result.status.next_schedule_time == T
    assert result.wake_at == T
    assert condition(result, "Complete") == ("False", "Pending")


def test_a_run_at_that_came_runs_once() -> None:
    result = plan(make_obj(one_off(runAt=schedule.format_rfc3339(T))), [], context(seconds_after(2)))
    assert creates(result) == [name_at(T)]
    assert result.status.next_schedule_time is None
    again = plan(
        make_obj(one_off(runAt=schedule.format_rfc3339(T)), status=result.status), [], context(seconds_after(3))
    )
    assert creates(again) == []


def test_without_schedule_or_run_at_the_run_is_due_at_creation() -> None:
    result = plan(make_obj(one_off()), [], context(created() + timedelta(seconds=1)))
    assert creates(result) == [name_at(created())]


def test_as_soon_as_possible_waits_for_start_time() -> None:
    result = plan(make_obj(one_off(startTime=schedule.format_rfc3339(T))), [], context(created()))
    assert creates(result) == []
    assert result.wake_at == T


def test_a_run_at_later_than_the_window_is_missed_and_completes_the_object() -> None:
    spec = one_off(runAt=schedule.format_rfc3339(T), catchUp={"window": "1m"})
    result = plan(make_obj(spec), [], context(seconds_after(120)))
    assert creates(result) == []
    assert result.status.counters.missed == 1
    assert condition(result, "Complete") == ("True", "Missed")
    assert condition(result, "Ready") == ("True", "Complete")
    assert result.status.finished_at == seconds_after(120)


def test_a_run_at_after_end_time_is_missed() -> None:
    spec = one_off(runAt=schedule.format_rfc3339(T), endTime=schedule.format_rfc3339(seconds_after(-10)))
    result = plan(make_obj(spec), [], context(seconds_after(-5)))
    assert condition(result, "Complete") == ("True", "Missed")


def ran(**fields: object) -> tuple[dict[str, object], ScheduledJobStatus]:
    spec = one_off(runAt=schedule.format_rfc3339(T), **fields)
    first = plan(make_obj(spec), [], context(seconds_after(1)))
    return spec, first.status


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        pytest.param(JobPhase.SUCCEEDED, "Succeeded", id="a succeeded run completes the object as Succeeded"),
        pytest.param(JobPhase.FAILED, "DeadLettered", id="a dead-lettered run completes the object as DeadLettered"),
    ],
)
def test_a_one_off_completes_when_its_run_ends(phase: JobPhase, expected: str) -> None:
    spec, status = ran()
    result = plan(make_obj(spec, status=status), [job(name_at(T), phase)], context(seconds_after(60)))
    assert condition(result, "Complete") == ("True", expected)
    assert result.status.finished_at == seconds_after(60)
    assert "Normal Completed" in events(result)


def test_a_one_off_waiting_for_a_retry_is_not_complete() -> None:
    spec, status = ran(retry={"maxAttempts": 2})
    result = plan(make_obj(spec, status=status), [job(name_at(T), JobPhase.FAILED)], context(seconds_after(2)))
    assert condition(result, "Complete") == ("False", "Pending")
    assert len(result.status.pending_retries) == 1


def test_ttl_after_finished_wakes_at_the_deadline_then_deletes_the_object() -> None:
    spec, status = ran(ttlSecondsAfterFinished=300)
    done = plan(make_obj(spec, status=status), [job(name_at(T), JobPhase.SUCCEEDED)], context(seconds_after(60)))
    assert done.wake_at == seconds_after(360)
    assert not deletes_object(done)
    later = plan(make_obj(spec, status=done.status), [], context(seconds_after(360)))
    assert deletes_object(later)


def test_a_completed_one_off_stays_complete_and_its_outcome_is_kept() -> None:
    spec, status = ran()
    done = plan(make_obj(spec, status=status), [job(name_at(T), JobPhase.SUCCEEDED)], context(seconds_after(60)))
    again = plan(make_obj(spec, status=done.status), [], context(seconds_after(600)))
    assert condition(again, "Complete") == ("True", "Succeeded")
    assert again.write_status is False


# History -----------------------------------------------------------------------------------------


def finished(name: str, phase: JobPhase, minutes: int, owner: str | None = UID) -> ObservedJob:
    return job(
        name, phase, finished=seconds_after(60 * minutes), created_at=seconds_after(60 * minutes - 30), owner=owner
    )


@dataclass(frozen=True)
class HistoryCase:
    id: str
    # spec
    successful_limit: int
    failed_limit: int
    # environment
    jobs: tuple[ObservedJob, ...]
    # expectations
    expect_deleted: tuple[str, ...]


HISTORY = [
    HistoryCase(
        id="the newest successful jobs within the limit are kept and older ones deleted",
        successful_limit=2,
        failed_limit=1,
        jobs=(
            finished("s1", JobPhase.SUCCEEDED, 1),
            finished("s3", JobPhase.SUCCEEDED, 3),
            finished("s2", JobPhase.SUCCEEDED, 2),
        ),
        expect_deleted=("s1",),
    ),
    HistoryCase(
        id="failed jobs have their own limit",
        successful_limit=3,
        failed_limit=0,
        jobs=(finished("f1", JobPhase.FAILED, 1), finished("s1", JobPhase.SUCCEEDED, 2)),
        expect_deleted=("f1",),
    ),
    HistoryCase(
        id="jobs of other owners are never deleted",
        successful_limit=0,
        failed_limit=0,
        jobs=(finished("mine", JobPhase.SUCCEEDED, 1), finished("theirs", JobPhase.SUCCEEDED, 2, owner="other")),
        expect_deleted=("mine",),
    ),
    HistoryCase(
        id="active jobs are not history",
        successful_limit=0,
        failed_limit=0,
        jobs=(job("running"),),
        expect_deleted=(),
    ),
    HistoryCase(
        id="ties on finish time are broken by creation time then name",
        successful_limit=1,
        failed_limit=1,
        jobs=(
            job("b", JobPhase.SUCCEEDED, finished=T, created_at=T),
            job("a", JobPhase.SUCCEEDED, finished=T, created_at=T),
            job("c", JobPhase.SUCCEEDED, finished=T),
        ),
        expect_deleted=("a", "c"),
    ),
]


@pytest.mark.parametrize("case", HISTORY, ids=[case.id for case in HISTORY])
def test_history_limits(case: HistoryCase) -> None:
    spec = raw_spec(successfulJobsHistoryLimit=case.successful_limit, failedJobsHistoryLimit=case.failed_limit)
    result = plan(make_obj(spec, status=settled_status()), case.jobs, context(seconds_after(600)))
    assert deletes(result) == list(case.expect_deleted)
    assert all(a.reason == "HistoryLimit" for a in result.actions if isinstance(a, DeleteJob))


def test_the_job_of_an_active_run_becomes_history_once_the_run_is_resolved() -> None:
    obj = make_obj(raw_spec(successfulJobsHistoryLimit=0), status=settled_status(active=(active_run(T),)))
    jobs = [job(name_at(T), JobPhase.SUCCEEDED), job("old", JobPhase.SUCCEEDED)]
    result = plan(obj, jobs, context(seconds_after(60)))
    assert sorted(deletes(result)) == sorted([name_at(T), "old"])


def test_the_job_of_a_still_active_run_is_not_history() -> None:
    obj = make_obj(raw_spec(failedJobsHistoryLimit=0), status=settled_status(active=(active_run(T, 3),)))
    jobs = [job(name_at(T, 3)), job("old", JobPhase.FAILED)]
    result = plan(obj, jobs, context(seconds_after(60)))
    assert deletes(result) == ["old"]
