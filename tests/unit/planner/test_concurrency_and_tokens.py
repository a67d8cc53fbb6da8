"""Rules 5 and 8: manual triggers, redrives and concurrencyPolicy for new runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import ActiveRun, DeadLetter, PendingRetry, Trigger, names
from sundial.planner.actions import CreateJob, DeleteJob
from sundial.planner.observed import ObservedJob
from sundial.planner.planning import plan

from .builders import (
    active_run,
    context,
    counters,
    creates,
    dead_letter,
    deletes,
    events,
    hours_after,
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
NEXT = hours_after(1)
JUST_AFTER_NEXT = NEXT + timedelta(seconds=3)
MANUAL = JUST_AFTER_NEXT.replace(microsecond=0)


@dataclass(frozen=True)
class Case:
    id: str
    # spec
    spec: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    # status
    active: tuple[ActiveRun, ...] = ()
    pending: tuple[PendingRetry, ...] = ()
    dead: tuple[DeadLetter, ...] = ()
    handled_trigger: str | None = None
    handled_redrive: str | None = None
    # environment
    jobs: tuple[ObservedJob, ...] = ()
    now: datetime = JUST_AFTER_NEXT
    # expectations
    expect_events: tuple[str, ...] = ()
    expect_creates: tuple[str, ...] = ()
    expect_deletes: tuple[str, ...] = ()
    expect_counters: dict[str, int] = field(default_factory=dict)
    expect_results: tuple[str, ...] = ()
    """recentRuns results"""


CASES = [
    Case(
        id="allow starts the new run next to an active one",
        spec={"concurrencyPolicy": "Allow"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_events=("Normal SuccessfulCreate",),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1},
    ),
    Case(
        id="forbid skips the new run while a run is active",
        spec={"concurrencyPolicy": "Forbid"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_events=("Warning RunSkipped",),
        expect_counters={"skipped": 1},
    ),
    Case(
        id="forbid skips the new run while a run waits for a retry",
        spec={"concurrencyPolicy": "Forbid"},
        pending=(pending_retry(T, not_before=hours_after(2)),),
        expect_events=("Warning RunSkipped",),
        expect_counters={"skipped": 1},
    ),
    Case(
        id="forbid starts the first of two due runs and skips the second",
        spec={"concurrencyPolicy": "Forbid", "catchUp": {"policy": "All"}},
        now=JUST_AFTER_NEXT + timedelta(hours=1),
        expect_events=("Normal SuccessfulCreate", "Warning RunSkipped"),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1, "skipped": 1},
    ),
    Case(
        id="replace deletes the active job with a uid precondition and cancels pending retries",
        spec={"concurrencyPolicy": "Replace"},
        active=(active_run(T),),
        pending=(pending_retry(hours_after(-1), not_before=hours_after(2)),),
        jobs=(job(name_at(T)),),
        expect_events=("Normal RunReplaced", "Normal SuccessfulCreate"),
        expect_deletes=(name_at(T),),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1},
        expect_results=("Replaced", "Replaced"),
    ),
    Case(
        id="replace leaves a job owned by another object alone",
        spec={"concurrencyPolicy": "Replace"},
        active=(active_run(T),),
        jobs=(job(name_at(T), owner="other"),),
        expect_events=("Warning UnexpectedJob", "Warning DeadLettered", "Normal SuccessfulCreate"),
        expect_creates=(name_at(NEXT),),
        expect_counters={"runs": 1, "failed": 1, "dead_lettered": 1},
        expect_results=("DeadLettered",),
    ),
    Case(
        id="replace with two due runs starts only the newest",
        spec={"concurrencyPolicy": "Replace", "catchUp": {"policy": "All"}},
        now=JUST_AFTER_NEXT + timedelta(hours=1),
        expect_events=("Normal RunReplaced", "Normal SuccessfulCreate"),
        expect_creates=(name_at(hours_after(2)),),
        expect_counters={"runs": 1, "skipped": 1},
        expect_results=("Replaced",),
    ),
    Case(
        id="a new trigger token starts one manual run now",
        annotations={names.TRIGGER_ANNOTATION: "t1"},
        now=seconds_after(600.5),
        expect_events=("Normal Triggered", "Normal SuccessfulCreate"),
        expect_creates=(name_at(seconds_after(600), manual=True),),
        expect_counters={"runs": 1},
    ),
    Case(
        id="an already handled trigger token does nothing",
        annotations={names.TRIGGER_ANNOTATION: "t1"},
        handled_trigger="t1",
        now=seconds_after(600),
    ),
    Case(
        id="a manual run is subject to forbid",
        spec={"concurrencyPolicy": "Forbid"},
        annotations={names.TRIGGER_ANNOTATION: "t2"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        handled_trigger="t1",
        now=seconds_after(600),
        expect_events=("Normal Triggered", "Warning RunSkipped"),
        expect_counters={"skipped": 1},
    ),
    Case(
        id="a manual run starts while suspended",
        spec={"suspend": True},
        annotations={names.TRIGGER_ANNOTATION: "t1"},
        expect_events=("Normal Triggered", "Normal SuccessfulCreate"),
        expect_creates=(name_at(MANUAL, manual=True),),
        expect_counters={"runs": 1},
    ),
    Case(
        id="a new redrive token gives every dead letter new attempts now",
        spec={"retry": {"maxAttempts": 2}},
        annotations={names.REDRIVE_ANNOTATION: "r1"},
        dead=(dead_letter(hours_after(-2), 2), dead_letter(hours_after(-1), 1)),
        now=seconds_after(600),
        expect_events=("Normal Redriven", "Normal SuccessfulCreate", "Normal SuccessfulCreate"),
        expect_creates=(name_at(hours_after(-2), 3), name_at(hours_after(-1), 2)),
        expect_counters={"retried": 2},
    ),
    Case(
        id="an already handled redrive token does nothing",
        annotations={names.REDRIVE_ANNOTATION: "r1"},
        handled_redrive="r1",
        dead=(dead_letter(hours_after(-2), 2),),
        now=seconds_after(600),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_concurrency_and_tokens(case: Case) -> None:
    obj = make_obj(
        raw_spec(**case.spec),
        annotations=case.annotations,
        status=status(
            schedule_cursor=T,
            active=case.active,
            pending_retries=case.pending,
            dead_letters=case.dead,
            last_handled_trigger=case.handled_trigger,
            last_handled_redrive=case.handled_redrive,
        ),
    )
    result = plan(obj, case.jobs, context(case.now))

    assert events(result) == list(case.expect_events)
    assert creates(result) == list(case.expect_creates)
    assert deletes(result) == list(case.expect_deletes)
    assert counters(result) == case.expect_counters
    assert [str(r.result) for r in result.status.recent_runs] == list(case.expect_results)


def test_replace_deletes_before_it_creates_and_uses_the_uid_as_precondition() -> None:
    obj = make_obj(raw_spec(concurrencyPolicy="Replace"), status=status(active=(active_run(T),)))
    result = plan(obj, [job(name_at(T), uid="job-uid-1")], context(JUST_AFTER_NEXT))
    kinds = [type(a).__name__ for a in result.actions if isinstance(a, CreateJob | DeleteJob)]
    assert kinds == ["DeleteJob", "CreateJob"]
    (delete,) = [a for a in result.actions if isinstance(a, DeleteJob)]
    assert (delete.uid, delete.reason) == ("job-uid-1", "Replaced")


def test_replace_never_deletes_a_never_seen_job_by_name_alone() -> None:
    # Without a UID precondition a delete could hit a same-named squatter or successor: only observed Jobs go.
    claim = active_run(T, seen=False, claimed=NEXT)
    obj = make_obj(raw_spec(concurrencyPolicy="Replace"), status=status(active=(claim,)))
    result = plan(obj, [], context(JUST_AFTER_NEXT))
    assert [a for a in result.actions if isinstance(a, DeleteJob)] == []
    assert [r.scheduled_time for r in result.status.recent_runs if r.result == "Replaced"] == [T]


def test_a_manual_run_echoes_its_token_and_records_its_trigger() -> None:
    obj = make_obj(raw_spec(), annotations={names.TRIGGER_ANNOTATION: "2026-05-11T10:10:00Z"}, status=status())
    result = plan(obj, [], context(seconds_after(600)))
    assert result.status.last_handled_trigger == "2026-05-11T10:10:00Z"
    (run,) = result.status.active
    assert (run.trigger, run.manual, run.scheduled_time) == (Trigger.MANUAL, True, seconds_after(600))
    assert result.status.last_schedule_time == seconds_after(600)


def test_a_second_trigger_in_the_same_second_is_skipped_rather_than_run_twice() -> None:
    first = plan(
        make_obj(raw_spec(), annotations={names.TRIGGER_ANNOTATION: "a"}, status=status()),
        [],
        context(seconds_after(600.1)),
    )
    second = plan(
        make_obj(raw_spec(), annotations={names.TRIGGER_ANNOTATION: "b"}, status=first.status),
        [],
        context(seconds_after(600.7)),
    )
    assert creates(second) == []
    assert second.status.counters.skipped == 1


def test_a_redrive_clears_dead_letters_closes_the_circuit_and_resets_the_count() -> None:
    obj = make_obj(
        raw_spec(retry={"maxAttempts": 3}, deadLetter={"suspendAfter": 1}),
        annotations={names.REDRIVE_ANNOTATION: "r1"},
        status=status(
            dead_letters=(dead_letter(hours_after(-1), 3),),
            consecutive_dead_letters=1,
            circuit_generation=1,
        ),
    )
    result = plan(obj, [], context(seconds_after(600)))
    assert result.status.dead_letters == ()
    assert result.status.consecutive_dead_letters == 0
    assert result.status.circuit_generation is None
    assert result.status.last_handled_redrive == "r1"
    (run,) = result.status.active
    assert (run.attempt, run.attempt_limit, run.trigger) == (4, 6, Trigger.REDRIVE)
    dead_lettered = result.status.condition("DeadLettered")
    assert dead_lettered is not None
    assert (dead_lettered.status, dead_lettered.reason) == ("False", "NoDeadLetters")
