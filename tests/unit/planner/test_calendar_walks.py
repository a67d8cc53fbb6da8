"""A run walks its calendar past ``now`` once (issue 31, DESIGN §12.3): the herd's fixed-date cron matches once a
year, so every walk from a handled time to the next match crosses a year of days. The passes of one run - the
instant's (due times, ``nextScheduleTime``, the next reservation), the lane's and the completion's - ask that
question again and again; the compiled schedule (kept by the runtime per spec) remembers the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from sundial import schedule
from sundial.model import ScheduledJobStatus
from sundial.planner.actions import CreateJob
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import Compiled, Context, Plan, compile_spec

from .builders import TOKEN, UID, make_obj, name_at, raw_spec, top_of_the_hour

T = top_of_the_hour()  # 2026-05-11T10:00:00Z
FIXED_DATE = "0 10 11 5 *"  # the herd's shape: one match a year, at T
NEXT_YEAR = T.replace(year=2027)


class CountingTimeline:
    """A real timeline that counts its walks (each ``iter_after``)."""

    def __init__(self, timeline: schedule.Timeline) -> None:
        self.timeline = timeline
        self.walks = 0

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        self.walks += 1
        return self.timeline.iter_after(after)

    def between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        self.walks += 1
        return self.timeline.between(after, until, limit=limit)

    def latest_between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        self.walks += 1
        return self.timeline.latest_between(after, until, limit=limit)


def counted(obj_spec: dict[str, object], now: datetime) -> tuple[Compiled, CountingTimeline]:
    """The object's compiled spec (as the runtime keeps it between passes), its timeline counting walks."""
    obj = make_obj(obj_spec)
    assert obj.spec is not None
    compiled = compile_spec(obj, obj.spec, {}, now=now)
    when = compiled.when
    assert isinstance(when, schedule.Recurring)
    counter = CountingTimeline(when.timetable)
    return dataclasses.replace(compiled, when=dataclasses.replace(when, timetable=counter)), counter


def job(phase: JobPhase) -> ObservedJob:
    return ObservedJob(
        name=name_at(T), uid="job-uid", owner_uid=UID, phase=phase, scheduled_time=T, attempt=1,
        created_at=T + timedelta(seconds=1),
        finished_at=T + timedelta(seconds=30) if phase is JobPhase.SUCCEEDED else None,
    )  # fmt: skip


def passes(compiled: Compiled, counter: CountingTimeline) -> list[int]:
    """Walks of each pass of one run: the object's first pass (reserves the run), the instant, the lane, the
    completion and a later idle pass."""
    spec = raw_spec(schedule=FIXED_DATE)
    walks: list[int] = []

    def step(status: ScheduledJobStatus | None, jobs: list[ObservedJob], now: datetime, *, lane: bool = False) -> Plan:
        before = counter.walks
        context = Context(now=now, fencing_token=TOKEN, compiled=compiled, lane=lane)
        result = plan(make_obj(spec, status=status), jobs, context)
        walks.append(counter.walks - before)
        return result

    first = step(None, [], T - timedelta(minutes=30))
    assert first.status.reservation is not None and first.status.reservation.scheduled_time == T
    instant = step(first.status, [], T + timedelta(seconds=1))
    assert [a.manifest["metadata"]["name"] for a in instant.actions if isinstance(a, CreateJob)] == [name_at(T)]
    lane = step(first.status, [job(JobPhase.ACTIVE)], T + timedelta(seconds=2), lane=True)
    assert lane.status.next_schedule_time == NEXT_YEAR
    assert not lane.write_status and lane.hold_until is not None, "the start waits for the Job's end (DESIGN §7.5)"
    done = step(first.status, [job(JobPhase.SUCCEEDED)], T + timedelta(seconds=31))
    assert done.write_status and done.status.next_schedule_time == NEXT_YEAR
    step(done.status, [job(JobPhase.SUCCEEDED)], T + timedelta(minutes=5))
    return walks


def test_one_run_of_a_fixed_date_cron_walks_past_now_once_across_all_its_passes() -> None:
    compiled, counter = counted(raw_spec(schedule=FIXED_DATE), T - timedelta(minutes=30))
    walks = passes(compiled, counter)
    # The first pass walks to the run (T); the instant's pass walks once from T to next year; the lane, the
    # completion and the idle pass ask the remembered answers.
    assert walks == [1, 1, 0, 0, 0]


def test_a_pass_without_the_kept_compiled_spec_walks_once_itself() -> None:
    """Compiled afresh for each pass (the runtime's cache no longer holds the object): each pass at or after the
    instant walks past now once - its own questions share one answer - instead of once per run."""
    spec = raw_spec(schedule=FIXED_DATE)
    walks = []
    for now in (T + timedelta(seconds=1), T + timedelta(seconds=2), T + timedelta(seconds=3)):
        compiled, counter = counted(spec, now)
        plan(make_obj(spec), [], Context(now=now, fencing_token=TOKEN, compiled=compiled))
        walks.append(counter.walks)
    assert walks == [1, 1, 1]


@pytest.mark.parametrize("until_offset", [timedelta(0), timedelta(seconds=1), timedelta(days=400)])
def test_remembered_answers_agree_with_a_fresh_walk(until_offset: timedelta) -> None:
    remembering = schedule.recurring(
        schedule.Timetable(cron=schedule.parse_cron("0 10 11 5 *"), zone=schedule.load_zone("UTC")),
        created=T - timedelta(days=1),
    )
    for after in (None, T - timedelta(days=1), T, T, NEXT_YEAR - timedelta(seconds=1), NEXT_YEAR):
        until = (after or T) + until_offset
        fresh = dataclasses.replace(remembering)  # a copy remembers nothing
        assert remembering.between(after, until, limit=10) == fresh.between(after, until, limit=10)
        assert remembering.next_after(after) == dataclasses.replace(remembering).next_after(after)


def test_an_end_time_cuts_remembered_answers_too() -> None:
    ending = schedule.recurring(
        schedule.Timetable(cron=schedule.parse_cron("0 10 11 5 *"), zone=schedule.load_zone("UTC")),
        created=T - timedelta(days=1),
        end=T + timedelta(days=30),
    )
    assert ending.next_after(T - timedelta(days=1)) == T
    assert ending.next_after(T) is None
    assert ending.next_after(T) is None  # remembered: still cut at the end
    assert ending.between(T, NEXT_YEAR, limit=5) == ([], False)
