"""Schedules lists, excluded times and ScheduleCalendars in the planner (DESIGN §3.1, §3.2), at named instants.

The hourly schedule ``0 * * * *`` is due at top_of_the_hour() (2026-05-11 10:00Z, a Monday); the cursor
is an hour before it unless a case says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import RunResult
from sundial.model.calendars import ScheduleCalendarSpec
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType
from sundial.planner.planning import plan

from .builders import (
    condition,
    context,
    counters,
    creates,
    events,
    hours_after,
    make_obj,
    name_at,
    raw_spec,
    status,
    top_of_the_hour,
    with_status,
)

T = top_of_the_hour()
AN_HOUR_AGO = hours_after(-1)
REISSUE = T + timedelta(seconds=15)  # a created Job's claim is woken for after Context.reissue_after
HOLIDAYS = ScheduleCalendarSpec.model_validate({"exclude": [{"dates": ["2026-05-11"]}]})
TEN_O_CLOCK = ScheduleCalendarSpec.model_validate({"exclude": [{"schedule": "0 10 * * *"}]})
#: Lists only 11:00 local time in Pacific/Kiritimati (+14:00), which is 21:00Z the day before.
KIRITIMATI_ELEVEN = ScheduleCalendarSpec.model_validate(
    {"timeZone": "Pacific/Kiritimati", "exclude": [{"schedule": "0 11 * * *"}]}
)


@dataclass(frozen=True)
class Case:
    id: str
    spec: dict[str, Any] = field(default_factory=dict)
    cursor: datetime | None = AN_HOUR_AGO
    now: datetime = T
    calendars: dict[str, ScheduleCalendarSpec | None] = field(default_factory=dict)
    created: list[datetime] = field(default_factory=list)
    excluded: list[datetime] = field(default_factory=list)
    missed: int = 0
    next_time: datetime | None = None
    wake_at: datetime | None = None
    ready: tuple[str, str] = (ConditionStatus.TRUE, ConditionReason.SCHEDULED)
    cursor_after: datetime | None = None


CASES = [
    Case(
        id="an_excluded_date_is_not_run_but_recorded_and_counted",
        spec={"exclude": [{"dates": ["2026-05-11"]}]},
        excluded=[T],
        next_time=datetime.fromisoformat("2026-05-12T00:00:00+00:00"),
        wake_at=hours_after(1),  # the next nominal time, excluded too: recorded when it comes due
        cursor_after=T,
    ),
    Case(
        id="an_excluded_range_covers_only_its_instants",
        spec={"exclude": [{"from": "2026-05-11T09:30:00Z", "to": "2026-05-11T10:00:00Z"}]},
        excluded=[T],
        next_time=hours_after(1),
        wake_at=hours_after(1),
        cursor_after=T,
    ),
    Case(
        id="an_excluded_cron_time",
        spec={"exclude": [{"schedule": "0 10 * * MON"}]},
        excluded=[T],
        next_time=hours_after(1),
        wake_at=hours_after(1),
        cursor_after=T,
    ),
    Case(
        id="a_time_not_excluded_runs",
        spec={"exclude": [{"dates": ["2026-05-12"]}]},
        created=[T],
        next_time=hours_after(1),
        wake_at=REISSUE,
        cursor_after=T,
    ),
    Case(
        id="after_an_outage_excluded_beats_missed",
        spec={"exclude": [{"schedule": "0 8 * * *"}], "catchUp": {"window": "30m", "policy": "All"}},
        cursor=hours_after(-3),
        excluded=[hours_after(-2)],  # 08:00: excluded, not missed, although outside the window
        missed=1,  # 09:00
        created=[T],
        next_time=hours_after(1),
        wake_at=REISSUE,
        cursor_after=T,
    ),
    Case(
        id="a_calendar_excludes_for_every_object_that_names_it",
        spec={"calendarRefs": ["holidays"]},
        calendars={"holidays": HOLIDAYS},
        excluded=[T],
        next_time=datetime.fromisoformat("2026-05-12T00:00:00+00:00"),
        wake_at=hours_after(1),
        cursor_after=T,
    ),
    Case(
        id="a_calendar_with_its_own_zone_reads_its_entries_there",
        spec={"calendarRefs": ["kiritimati"]},
        calendars={"kiritimati": KIRITIMATI_ELEVEN},
        now=hours_after(11),  # 21:00Z = 11:00 on 12 May in Kiritimati
        cursor=hours_after(10),
        excluded=[hours_after(11)],
        next_time=hours_after(12),
        wake_at=hours_after(12),
        cursor_after=hours_after(11),
    ),
    Case(
        id="a_missing_calendar_makes_the_object_not_ready_and_fires_nothing",
        spec={"calendarRefs": ["holidays", "freeze"]},
        calendars={"holidays": HOLIDAYS},
        ready=(ConditionStatus.FALSE, ConditionReason.CALENDAR_NOT_FOUND),
        next_time=datetime.fromisoformat("2026-05-12T00:00:00+00:00"),
        cursor_after=AN_HOUR_AGO,  # the due time is kept: catchUp handles it once the calendar exists
    ),
    Case(
        id="an_invalid_calendar_makes_the_object_not_ready_and_fires_nothing",
        spec={"calendarRefs": ["holidays"]},
        calendars={"holidays": None},
        ready=(ConditionStatus.FALSE, ConditionReason.INVALID_CALENDAR),
        next_time=hours_after(1),
        cursor_after=AN_HOUR_AGO,
    ),
    Case(
        id="schedules_list_fires_a_time_two_entries_produce_once",
        spec={"schedule": None, "schedules": ["0 * * * *", "0 10 * * *", "30 * * * *"]},
        cursor=T - timedelta(minutes=10),
        created=[T],
        next_time=T + timedelta(minutes=30),
        wake_at=REISSUE,
        cursor_after=T,
    ),
    Case(
        id="schedules_list_after_an_outage_runs_each_time_of_the_union_once",
        spec={"schedule": None, "schedules": ["0 * * * *", "30 9 * * *"], "catchUp": {"policy": "All"}},
        cursor=hours_after(-1),
        created=[T - timedelta(minutes=30), T],
        next_time=hours_after(1),
        wake_at=REISSUE,
        cursor_after=T,
    ),
    Case(
        id="schedules_list_with_an_exclusion",
        spec={"schedule": None, "schedules": ["0 10 * * *", "0 11 * * *"], "exclude": [{"schedule": "0 10 * * *"}]},
        calendars={"ten": TEN_O_CLOCK},
        excluded=[T],
        next_time=hours_after(1),
        wake_at=hours_after(1),
        cursor_after=T,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_exclusions_and_calendars(case: Case) -> None:
    obj = make_obj(raw_spec(**case.spec), status=status(schedule_cursor=case.cursor))
    assert obj.spec is not None, obj.spec_error

    result = plan(obj, [], context(case.now, calendars=case.calendars))

    assert creates(result) == [name_at(t) for t in case.created]
    records = [r for r in result.status.recent_runs if r.result is RunResult.EXCLUDED]
    assert [r.scheduled_time for r in records] == case.excluded
    assert all(r.attempts == 0 and r.finished_at == case.now for r in records)
    assert counters(result).get("excluded", 0) == len(case.excluded)
    assert counters(result).get("missed", 0) == case.missed
    assert events(result).count("Normal RunExcluded") == len(case.excluded)
    assert result.status.next_schedule_time == case.next_time
    assert result.wake_at == case.wake_at
    assert condition(result, ConditionType.READY) == case.ready
    assert result.status.schedule_cursor == case.cursor_after


def test_planning_again_with_the_new_status_counts_nothing_twice() -> None:
    obj = make_obj(raw_spec(exclude=[{"dates": ["2026-05-11"]}]), status=status(schedule_cursor=AN_HOUR_AGO))
    first = plan(obj, [], context(T))
    again = plan(with_status(obj, first.status), [], context(T))
    assert not again.write_status
    assert again.actions == ()


def test_a_missing_calendar_warns_once_and_the_times_due_meanwhile_run_when_it_appears() -> None:
    obj = make_obj(raw_spec(calendarRefs=["holidays"]), status=status(schedule_cursor=AN_HOUR_AGO))
    waiting = plan(obj, [], context(T))
    assert events(waiting) == ["Warning CalendarNotFound"]
    ready = waiting.status.condition(ConditionType.READY)
    assert ready is not None and "holidays" in ready.message
    assert waiting.wake_at is None  # the calendar's event wakes the object, not a timer
    still = plan(with_status(obj, waiting.status), [], context(T + timedelta(seconds=30)))
    assert events(still) == []

    later = T + timedelta(minutes=5)
    empty = ScheduleCalendarSpec.model_validate({"exclude": []})
    found = plan(with_status(obj, still.status), [], context(later, calendars={"holidays": empty}))
    assert creates(found) == [name_at(T)]
    assert condition(found, ConditionType.READY) == (ConditionStatus.TRUE, ConditionReason.SCHEDULED)


def test_editing_a_calendar_changes_the_next_time_at_once() -> None:
    obj = make_obj(raw_spec(calendarRefs=["holidays"]), status=status(schedule_cursor=T))
    before = plan(obj, [], context(T + timedelta(minutes=1), calendars={"holidays": TEN_O_CLOCK}))
    assert before.status.next_schedule_time == hours_after(1)
    eleven = ScheduleCalendarSpec.model_validate({"exclude": [{"schedule": "0 11 * * *"}]})
    after = plan(with_status(obj, before.status), [], context(T + timedelta(minutes=2), calendars={"holidays": eleven}))
    assert after.status.next_schedule_time == hours_after(2)
    assert after.wake_at == hours_after(1)  # 11:00 is still woken for, to be recorded as excluded
