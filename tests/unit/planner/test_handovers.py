"""A ScheduledJob taken over from a CronJob (DESIGN §12.4, ``sundial.dev/handed-over``): its nominal times start
after the CronJob's last run, even before its creation, and the CronJob's running Jobs count as active."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import handovers, names
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan

from .builders import context, creates, deletes, events, job, make_obj, name_at, raw_spec, seconds_after, status

CRONJOB_UID = "cronjob-uid-1"
EVERY_MINUTE = "* * * * *"
SWITCH = seconds_after(30)
"""The hand-over creates the ScheduledJob half a minute after 10:00."""
TEN = seconds_after(0)
NINE_59 = seconds_after(-60)
TEN_01 = seconds_after(60)


def handed_over(after: datetime, uid: str = CRONJOB_UID) -> dict[str, str]:
    return {names.HANDED_OVER_ANNOTATION: handovers.HandOver(cron_job_uid=uid, after=after).annotation()}


def cronjob_job(name: str, phase: JobPhase = JobPhase.ACTIVE, *, owner: str = CRONJOB_UID) -> ObservedJob:
    return job(name, phase, owner=owner)


@dataclass(frozen=True)
class Case:
    id: str
    # spec
    spec: dict[str, Any] = field(default_factory=lambda: raw_spec(schedule=EVERY_MINUTE))
    annotations: dict[str, str] = field(default_factory=dict)
    # environment
    jobs: tuple[ObservedJob, ...] = ()
    now: datetime = SWITCH + timedelta(seconds=1)
    # expectations
    expect_creates: tuple[str, ...] = ()
    expect_deletes: tuple[str, ...] = ()
    expect_events: tuple[str, ...] = ()


CASES = [
    Case(
        id="without a hand-over the minute before the creation is not run",
        expect_creates=(),
    ),
    Case(
        id="the minute of the switch that the CronJob did not run is run by the ScheduledJob",
        annotations=handed_over(NINE_59),
        expect_creates=(name_at(TEN),),
        expect_events=("Normal SuccessfulCreate",),
    ),
    Case(
        id="the minute the CronJob ran is not run again",
        annotations=handed_over(TEN),
        expect_creates=(),
    ),
    Case(
        id="the next minute after the CronJob's last run is run when it comes",
        annotations=handed_over(TEN),
        now=TEN_01 + timedelta(seconds=1),
        expect_creates=(name_at(TEN_01),),
        expect_events=("Normal SuccessfulCreate",),
    ),
    Case(
        id="a last run after the creation changes nothing (the creation bounds it)",
        annotations=handed_over(TEN_01),
        now=TEN_01 + timedelta(seconds=1),
        expect_creates=(name_at(TEN_01),),
        expect_events=("Normal SuccessfulCreate",),
    ),
    Case(
        id="an unreadable annotation is ignored",
        annotations={names.HANDED_OVER_ANNOTATION: "{not json"},
        expect_creates=(),
    ),
    Case(
        id="forbid skips while the CronJob's Job still runs",
        spec=raw_spec(schedule=EVERY_MINUTE, concurrencyPolicy="Forbid"),
        annotations=handed_over(TEN),
        jobs=(cronjob_job("hello-29000000"),),
        now=TEN_01 + timedelta(seconds=1),
        expect_events=("Warning RunSkipped",),
    ),
    Case(
        id="forbid starts once the CronJob's Job finished",
        spec=raw_spec(schedule=EVERY_MINUTE, concurrencyPolicy="Forbid"),
        annotations=handed_over(TEN),
        jobs=(cronjob_job("hello-29000000", JobPhase.SUCCEEDED),),
        now=TEN_01 + timedelta(seconds=1),
        expect_creates=(name_at(TEN_01),),
        expect_events=("Normal SuccessfulCreate",),
    ),
    Case(
        id="forbid ignores a running Job of another owner",
        spec=raw_spec(schedule=EVERY_MINUTE, concurrencyPolicy="Forbid"),
        annotations=handed_over(TEN),
        jobs=(cronjob_job("squatter", owner="someone-else"),),
        now=TEN_01 + timedelta(seconds=1),
        expect_creates=(name_at(TEN_01),),
        expect_events=("Normal SuccessfulCreate",),
    ),
    Case(
        id="replace deletes the CronJob's running Job and starts the run",
        spec=raw_spec(schedule=EVERY_MINUTE, concurrencyPolicy="Replace"),
        annotations=handed_over(TEN),
        jobs=(cronjob_job("hello-29000000"),),
        now=TEN_01 + timedelta(seconds=1),
        expect_creates=(name_at(TEN_01),),
        expect_deletes=("hello-29000000",),
        expect_events=("Normal RunReplaced", "Normal SuccessfulCreate"),
    ),
    Case(
        id="buffer one waits for the CronJob's running Job",
        spec=raw_spec(schedule=EVERY_MINUTE, concurrencyPolicy="BufferOne"),
        annotations=handed_over(TEN),
        jobs=(cronjob_job("hello-29000000"),),
        now=TEN_01 + timedelta(seconds=1),
        expect_events=("Normal RunBuffered",),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hand_over(case: Case) -> None:
    obj = make_obj(case.spec, annotations=case.annotations, creation=SWITCH)
    result = plan(obj, list(case.jobs), context(case.now))
    assert tuple(creates(result)) == case.expect_creates
    assert tuple(deletes(result)) == case.expect_deletes
    assert tuple(events(result)) == case.expect_events


def test_a_settled_status_keeps_its_cursor_whatever_the_annotation_says() -> None:
    obj = make_obj(
        raw_spec(schedule=EVERY_MINUTE),
        annotations=handed_over(NINE_59 - timedelta(hours=1)),
        creation=SWITCH,
        status=status(schedule_cursor=TEN, next_schedule_time=TEN_01),
    )
    result = plan(obj, [], context(SWITCH + timedelta(seconds=1)))
    assert creates(result) == []


@pytest.mark.parametrize(
    "raw",
    [
        '{"cronJobUID": "", "after": "2026-05-11T10:00:00Z"}',
        '{"cronJobUID": "u", "after": "yesterday"}',
        '{"cronJobUID": "u"}',
        '["u", "2026-05-11T10:00:00Z"]',
        '{"cronJobUID": "u", "after": "2026-05-11T10:00:00Z", "pad": "' + "x" * 300 + '"}',
    ],
)
def test_an_unreadable_hand_over_reads_as_none(raw: str) -> None:
    assert handovers.handed_over({names.HANDED_OVER_ANNOTATION: raw}) is None


def test_the_annotation_reads_back() -> None:
    value = handovers.HandOver(cron_job_uid=CRONJOB_UID, after=TEN)
    assert handovers.handed_over({names.HANDED_OVER_ANNOTATION: value.annotation()}) == value
