"""The spec builds its ``When`` in one place, and the planner treats cron and one-off objects alike."""

from __future__ import annotations

from datetime import datetime

import pytest

from sundial import schedule
from sundial.model import Trigger
from sundial.model.resource import parse_spec
from sundial.planner.planning import plan

from .builders import (
    UID,
    context,
    created,
    creates,
    hours_after,
    just_after_the_hour,
    make_obj,
    name_at,
    raw_spec,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()
AT_T = schedule.format_rfc3339(T)


def test_a_schedule_builds_a_recurring_when_seeded_by_the_uid() -> None:
    spec = parse_spec(raw_spec(schedule="H * * * *", startTime=AT_T))
    when = spec.when(uid=UID, created=created())
    assert when == schedule.recurring(
        schedule.build_timetable("H * * * *", uid=UID), created=created(), start=T, end=None
    )
    assert not when.finite
    assert when.origin == T - schedule.TICK


@pytest.mark.parametrize(
    ("fields", "at"),
    [
        pytest.param({"runAt": AT_T}, T, id="runAt"),
        pytest.param({}, created(), id="as soon as possible at creation"),
        pytest.param({"startTime": AT_T}, T, id="as soon as possible raised to startTime"),
    ],
)
def test_a_one_off_builds_a_once_when(fields: dict[str, object], at: datetime) -> None:
    when = parse_spec(raw_spec(schedule=None, **fields)).when(uid=UID, created=created())
    assert when == schedule.Once(at=at)
    assert when.finite
    assert when.last == at


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(raw_spec(), id="hourly cron"),
        pytest.param(raw_spec(schedule=None, runAt=AT_T), id="runAt"),
        pytest.param(raw_spec(schedule=None, startTime=AT_T), id="as soon as possible from startTime"),
    ],
)
def test_cron_and_one_off_objects_start_the_same_run_for_the_same_nominal_time(spec: dict[str, object]) -> None:
    obj = make_obj(spec, status=status(schedule_cursor=hours_after(-1)) if "schedule" in spec else None)
    result = plan(obj, [], context(just_after_the_hour()))
    assert [(run.scheduled_time, run.trigger) for run in result.status.active] == [(T, Trigger.SCHEDULE)]
    assert creates(result) == [name_at(T)]
    assert result.status.schedule_cursor == T


def test_while_suspended_a_cron_shows_its_next_time_after_now_and_a_one_off_its_owed_time() -> None:
    later = hours_after(3) + schedule.TICK
    cron = plan(make_obj(raw_spec(suspend=True), status=status()), [], context(later))
    one_off = plan(make_obj(raw_spec(schedule=None, runAt=AT_T, suspend=True)), [], context(later))
    assert cron.status.next_schedule_time == hours_after(4)
    assert one_off.status.next_schedule_time == T
    assert creates(cron) == creates(one_off) == []
