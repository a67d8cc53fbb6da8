"""Backfill by annotation (DESIGN §4.2): each nominal time of a range runs once, as its scheduled run would."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import ActiveRun, BackfillProgress, RunRecord, RunResult, Trigger, names
from sundial.planner.actions import CreateJob
from sundial.planner.manifests import idempotency_key
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan
from sundial.planner.requests import backfills
from sundial.schedule import format_rfc3339

from .builders import (
    UID,
    active_run,
    context,
    counters,
    creates,
    events,
    hours_after,
    job,
    make_obj,
    name_at,
    raw_spec,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()  # 10:00; the object was created at 08:30
FIVE = hours_after(-5)  # 05:00, before the object existed
SIX, SEVEN, EIGHT, NINE = hours_after(-4), hours_after(-3), hours_after(-2), hours_after(-1)
NOW = T + timedelta(minutes=10)


def annotation(token: str = "b1", start: datetime = FIVE, end: datetime = T, **extra: Any) -> dict[str, str]:
    body = {"token": token, "from": format_rfc3339(start), "to": format_rfc3339(end), **extra}
    return {names.BACKFILL_ANNOTATION: json.dumps(body)}


def finished(when: datetime, *, trigger: Trigger = Trigger.SCHEDULE) -> RunRecord:
    return RunRecord(
        scheduled_time=when,
        attempts=1,
        result=RunResult.SUCCEEDED,
        job=name_at(when),
        trigger=trigger,
        started_at=when,
        finished_at=when + timedelta(minutes=5),
    )


@dataclass(frozen=True)
class Case:
    id: str
    spec: dict[str, Any] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=annotation)
    recent: tuple[RunRecord, ...] = ()
    active: tuple[ActiveRun, ...] = ()
    earlier: tuple[BackfillProgress, ...] = ()
    handled: str | None = None
    jobs: tuple[ObservedJob, ...] = ()
    now: datetime = NOW
    expect_creates: tuple[str, ...] = ()
    expect_events: tuple[str, ...] = ()
    expect_counters: dict[str, int] = field(default_factory=dict)
    expect_progress: tuple[int, int, datetime | None, bool] | None = None
    """(started, already run, next time, done) of the request's status entry."""


CASES = [
    Case(
        id="exactly the times without a run get jobs with their scheduled names",
        recent=(finished(NINE),),
        active=(active_run(T),),
        jobs=(job(name_at(T)), job(name_at(SEVEN), JobPhase.SUCCEEDED, finished=SEVEN)),
        expect_creates=(name_at(FIVE), name_at(SIX), name_at(EIGHT)),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted") + ("Normal SuccessfulCreate",) * 3,
        expect_counters={"runs": 3},
        expect_progress=(3, 3, None, True),
    ),
    Case(
        id="under forbid a backfill starts one run at a time and waits",
        spec={"concurrencyPolicy": "Forbid"},
        recent=(finished(T),),
        expect_creates=(name_at(FIVE),),
        expect_events=("Normal BackfillStarted", "Normal SuccessfulCreate"),
        expect_counters={"runs": 1},
        expect_progress=(1, 0, SIX, False),
    ),
    Case(
        id="under forbid a backfill waits while a scheduled run is active",
        spec={"concurrencyPolicy": "Forbid"},
        active=(active_run(T),),
        jobs=(job(name_at(T)),),
        expect_events=("Normal BackfillStarted",),
        expect_progress=(0, 0, FIVE, False),
    ),
    Case(
        id="under buffer one a backfill neither buffers nor skips its own runs",
        spec={"concurrencyPolicy": "BufferOne"},
        recent=(finished(T),),
        expect_creates=(name_at(FIVE),),
        expect_events=("Normal BackfillStarted", "Normal SuccessfulCreate"),
        expect_counters={"runs": 1},
        expect_progress=(1, 0, SIX, False),
    ),
    Case(
        id="max runs bounds the runs started and leaves the next time in status",
        annotations=annotation(maxRuns=2),
        recent=(finished(T),),
        expect_creates=(name_at(FIVE), name_at(SIX)),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted") + ("Normal SuccessfulCreate",) * 2,
        expect_counters={"runs": 2},
        expect_progress=(2, 0, SEVEN, True),
    ),
    Case(
        id="times an earlier backfill handled are not run again",
        annotations=annotation("b2"),
        earlier=(BackfillProgress(token="b1", from_=FIVE, to=EIGHT, started=4, done=True),),
        recent=(finished(NINE), finished(T)),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted"),
        expect_progress=(0, 6, None, True),
    ),
    Case(
        id="times after now are not backfilled",
        annotations=annotation(start=NINE, end=hours_after(5)),
        recent=(finished(T),),
        expect_creates=(name_at(NINE),),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted", "Normal SuccessfulCreate"),
        expect_counters={"runs": 1},
        expect_progress=(1, 1, None, True),
    ),
    Case(
        id="a range without nominal times completes at once",
        annotations=annotation(start=FIVE + timedelta(minutes=1), end=FIVE + timedelta(minutes=59)),
        recent=(finished(T),),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted"),
        expect_progress=(0, 0, None, True),
    ),
    Case(
        id="a backfill of a one-off is refused",
        spec={"schedule": None, "runAt": format_rfc3339(hours_after(5))},
        expect_events=("Warning BackfillRefused",),
        expect_progress=(0, 0, None, True),
    ),
    Case(
        id="a handled token does nothing",
        handled="b1",
        recent=(finished(T),),
    ),
    Case(
        id="a backfill runs while suspended, like a manual trigger",
        spec={"suspend": True},
        annotations=annotation(start=NINE, end=NINE),
        expect_creates=(name_at(NINE),),
        expect_events=("Normal BackfillStarted", "Normal BackfillCompleted", "Normal SuccessfulCreate"),
        expect_counters={"runs": 1},
        expect_progress=(1, 0, None, True),
    ),
]


def _obj(case: Case) -> Any:
    spec = raw_spec(**case.spec)
    return make_obj(
        spec,
        annotations=case.annotations,
        status=status(
            schedule_cursor=T,
            recent_runs=case.recent,
            active=case.active,
            backfills=case.earlier,
            last_handled_backfill=case.handled,
            last_schedule_time=T,
        ),
    )


def _progress(result: Any, token: str) -> tuple[int, int, datetime | None, bool]:
    (entry,) = [b for b in result.status.backfills if b.token == token]
    return entry.started, entry.already_run, entry.next_time, entry.done


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_backfills(case: Case) -> None:
    result = plan(_obj(case), case.jobs, context(case.now))

    assert creates(result) == list(case.expect_creates)
    assert events(result) == list(case.expect_events)
    assert counters(result) == case.expect_counters
    if case.expect_progress is not None:
        token = json.loads(case.annotations[names.BACKFILL_ANNOTATION])["token"]
        assert _progress(result, token) == case.expect_progress
        assert result.status.last_handled_backfill == token


def test_backfill_jobs_carry_the_trigger_and_the_idempotency_key_of_the_scheduled_run() -> None:
    result = plan(_obj(CASES[0]), CASES[0].jobs, context(NOW))
    made = [a for a in result.actions if isinstance(a, CreateJob)]
    assert {a.manifest["metadata"]["annotations"][names.TRIGGER_ANNOTATION] for a in made} == {Trigger.BACKFILL}
    keys = [a.manifest["metadata"]["annotations"][names.IDEMPOTENCY_KEY_ANNOTATION] for a in made]
    assert keys == [idempotency_key(uid=UID, scheduled_time=t) for t in (FIVE, SIX, EIGHT)]
    assert {run.trigger for run in result.status.active if run.scheduled_time != T} == {Trigger.BACKFILL}


def test_planning_again_starts_nothing_twice() -> None:
    case = CASES[0]
    first = plan(_obj(case), case.jobs, context(NOW))
    again = plan(make_obj(raw_spec(), annotations=case.annotations, status=first.status), case.jobs, context(NOW))
    assert creates(again) == [] and not again.write_status


def test_under_forbid_the_backfill_continues_when_its_run_ended() -> None:
    case = CASES[1]
    first = plan(_obj(case), (), context(NOW))
    ended = NOW + timedelta(minutes=5)
    jobs = (job(name_at(FIVE), JobPhase.SUCCEEDED, finished=ended),)
    spec = raw_spec(**case.spec)
    second = plan(make_obj(spec, annotations=case.annotations, status=first.status), jobs, context(ended))
    assert creates(second) == [name_at(SIX)]
    assert _progress(second, "b1") == (2, 0, SEVEN, False)


def test_a_failed_backfill_run_is_retried_even_though_it_is_older_than_max_run_age() -> None:
    spec = raw_spec(retry={"maxAttempts": 2, "maxRunAge": "1h", "backoff": {"initial": "1s"}})
    ann = annotation(start=FIVE, end=FIVE)
    first = plan(make_obj(spec, annotations=ann, status=status(recent_runs=(finished(T),))), (), context(NOW))
    failed = NOW + timedelta(minutes=1)
    jobs = (job(name_at(FIVE), JobPhase.FAILED, finished=failed),)
    second = plan(make_obj(spec, annotations=ann, status=first.status), jobs, context(failed))
    assert "Warning Retrying" in events(second)
    later = failed + timedelta(minutes=1)
    third = plan(make_obj(spec, annotations=ann, status=second.status), jobs, context(later))
    assert creates(third) == [name_at(FIVE, 2)]
    assert [a.trigger for a in third.status.active] == [Trigger.BACKFILL]


def test_an_invalid_annotation_gets_one_warning_naming_it_and_changes_nothing_else() -> None:
    obj = make_obj(raw_spec(), annotations={names.BACKFILL_ANNOTATION: "{not json"}, status=status())
    result = plan(obj, (), context(NOW))
    (event,) = [a for a in result.actions if getattr(a, "reason", None) == "InvalidBackfill"]
    assert event.type == "Warning" and names.BACKFILL_ANNOTATION in event.message and "JSON" in event.message
    assert result.status.backfills == () and creates(result) == []
    assert result.status.last_handled_backfill == backfills.invalid_marker("{not json")
    again = plan(make_obj(raw_spec(), annotations=obj.metadata.annotations, status=result.status), (), context(NOW))
    assert events(again) == [] and not again.write_status


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("[]", "must be a JSON object"),
        ('{"from": "2026-05-11T05:00:00Z", "to": "2026-05-11T06:00:00Z"}', "token:"),
        ('{"token": "a", "from": "yesterday", "to": "2026-05-11T06:00:00Z"}', "from:"),
        ('{"token": "a", "from": "2026-05-11T05:00:00Z"}', "to:"),
        ('{"token": "a", "from": "2026-05-11T07:00:00Z", "to": "2026-05-11T06:00:00Z"}', "to: must not be before"),
        ('{"token": "a", "from": "2026-05-11T05:00:00Z", "to": "2026-05-11T06:00:00Z", "maxRuns": 0}', "maxRuns:"),
        ('{"token": "a", "from": "2026-05-11T05:00:00Z", "to": "2026-05-11T06:00:00Z", "max": 1}', "unknown field"),
    ],
)
def test_invalid_requests_name_the_field(raw: str, problem: str) -> None:
    with pytest.raises(backfills.RequestError, match=problem):
        backfills.parse_request(raw)


def test_the_annotation_value_round_trips() -> None:
    request = backfills.Request(token="x", start=FIVE, end=T, max_runs=7)
    assert backfills.parse_request(backfills.annotation_value(request)) == request


def test_a_long_range_is_walked_in_bounded_passes_and_the_planner_asks_to_come_back_at_once() -> None:
    spec = raw_spec(schedule="* * * * *")  # every minute: 300 times in five hours
    ann = annotation(start=FIVE, end=T)
    recent = tuple(
        RunRecord(
            scheduled_time=FIVE + timedelta(minutes=m),
            attempts=1,
            result=RunResult.SUCCEEDED,
            trigger=Trigger.SCHEDULE,
            finished_at=T,
        )
        for m in range(20)
    )
    obj = make_obj(spec, annotations=ann, status=status(recent_runs=recent, schedule_cursor=NOW))
    first = plan(obj, (), context(NOW, max_enumerated_runs=15))
    assert creates(first) == []  # the first 15 times all had a run
    assert _progress(first, "b1") == (0, 15, FIVE + timedelta(minutes=15), False)
    assert first.wake_at == NOW
    second = plan(make_obj(spec, annotations=ann, status=first.status), (), context(NOW, max_enumerated_runs=15))
    assert creates(second) == [name_at(FIVE + timedelta(minutes=m)) for m in range(20, 30)]
    assert _progress(second, "b1") == (10, 20, FIVE + timedelta(minutes=30), False)
