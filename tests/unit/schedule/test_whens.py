"""The one "when": cron timetables and one-offs answer the same questions (named instants, DST in Berlin)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from sundial.schedule import (
    TICK,
    Once,
    Recurring,
    RepeatedTime,
    ScheduleError,
    When,
    build_timetable,
    once,
    parse_rfc3339,
    recurring,
)


def utc(text: str) -> datetime:
    return parse_rfc3339(text, field="test")


# Named instants. Berlin springs forward on 2027-03-28 at 01:00Z (02:00 CET -> 03:00 CEST: 02:30 does not
# exist) and falls back on 2026-10-25 at 01:00Z (03:00 CEST -> 02:00 CET: 02:30 happens twice).
SPRING_CREATED = utc("2027-03-26T12:00:00Z")
SPRING_START = utc("2027-03-28T00:00:00Z")
SPRING_CHANGE = utc("2027-03-28T01:00:00Z")
AUTUMN_CREATED = utc("2026-10-23T12:00:00Z")
RUN_AT = utc("2027-03-28T10:00:00Z")
BEFORE_RUN_AT = utc("2027-03-28T09:00:00Z")
LATER = utc("2027-04-01T00:00:00Z")


def daily_half_past_two_in_berlin() -> Recurring:
    return recurring(build_timetable("30 2 * * *", time_zone="Europe/Berlin"), created=SPRING_CREATED)


@dataclass(frozen=True)
class Case:
    id: str
    when: When
    # questions
    until: datetime = LATER
    after: datetime | None = None
    # expectations
    finite: bool = False
    origin: datetime | None = None
    last: datetime | None = None
    first: datetime | None = None
    between: tuple[datetime, ...] = ()
    next_after: datetime | None = None
    past_end: tuple[datetime, ...] = field(default=())


CASES = [
    Case(
        id="a daily 02:30 in Berlin runs at the change instant on the spring-forward night",
        when=daily_half_past_two_in_berlin(),
        until=utc("2027-03-29T12:00:00Z"),
        after=utc("2027-03-27T01:30:00Z"),
        origin=SPRING_CREATED,
        first=utc("2027-03-27T01:30:00Z"),
        between=(utc("2027-03-27T01:30:00Z"), SPRING_CHANGE, utc("2027-03-29T00:30:00Z")),
        next_after=SPRING_CHANGE,
    ),
    Case(
        id="on the fall-back night a daily 02:30 in Berlin runs once, at the first 02:30",
        when=recurring(build_timetable("30 2 * * *", time_zone="Europe/Berlin"), created=AUTUMN_CREATED),
        until=utc("2026-10-26T12:00:00Z"),
        after=utc("2026-10-25T00:30:00Z"),
        origin=AUTUMN_CREATED,
        first=utc("2026-10-24T00:30:00Z"),
        between=(utc("2026-10-24T00:30:00Z"), utc("2026-10-25T00:30:00Z"), utc("2026-10-26T01:30:00Z")),
        next_after=utc("2026-10-26T01:30:00Z"),
    ),
    Case(
        id="with repeatedTime Twice both 02:30s of the fall-back night run",
        when=recurring(
            build_timetable("30 2 * * *", time_zone="Europe/Berlin", repeated=RepeatedTime.TWICE),
            created=AUTUMN_CREATED,
        ),
        until=utc("2026-10-26T12:00:00Z"),
        after=utc("2026-10-25T00:30:00Z"),
        origin=AUTUMN_CREATED,
        first=utc("2026-10-24T00:30:00Z"),
        between=(
            utc("2026-10-24T00:30:00Z"),
            utc("2026-10-25T00:30:00Z"),
            utc("2026-10-25T01:30:00Z"),
            utc("2026-10-26T01:30:00Z"),
        ),
        next_after=utc("2026-10-25T01:30:00Z"),
    ),
    Case(
        id="startTime raises the cron origin and endTime cuts its times, none of them owed",
        when=recurring(
            build_timetable("30 2 * * *", time_zone="Europe/Berlin"),
            created=SPRING_CREATED,
            start=SPRING_START,
            end=RUN_AT,
        ),
        after=SPRING_CHANGE,
        origin=SPRING_START - TICK,
        first=SPRING_CHANGE,
        between=(SPRING_CHANGE,),
        next_after=None,
    ),
    Case(
        id="a runAt is the one owed time",
        when=once(run_at=RUN_AT, created=SPRING_CREATED),
        after=BEFORE_RUN_AT,
        finite=True,
        last=RUN_AT,
        first=RUN_AT,
        between=(RUN_AT,),
        next_after=RUN_AT,
    ),
    Case(
        id="as soon as possible is the creation time",
        when=once(run_at=None, created=SPRING_CREATED),
        after=SPRING_CREATED,
        finite=True,
        last=SPRING_CREATED,
        first=SPRING_CREATED,
        between=(SPRING_CREATED,),
    ),
    Case(
        id="as soon as possible is raised to startTime",
        when=once(run_at=None, created=SPRING_CREATED, start=SPRING_START),
        after=SPRING_CREATED,
        finite=True,
        last=SPRING_START,
        first=SPRING_START,
        between=(SPRING_START,),
        next_after=SPRING_START,
    ),
    Case(
        id="a runAt past endTime never runs, stays owed and is lost once endTime passed",
        when=once(run_at=RUN_AT, created=SPRING_CREATED, end=BEFORE_RUN_AT),
        after=SPRING_CREATED,
        finite=True,
        last=RUN_AT,
        first=RUN_AT,
        next_after=RUN_AT,
        past_end=(RUN_AT,),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_both_kinds_answer_the_same_questions(case: Case) -> None:
    when = case.when
    assert (when.finite, when.origin, when.last) == (case.finite, case.origin, case.last)
    assert when.next_after(None) == case.first
    assert when.next_after(case.after) == case.next_after
    assert when.between(None, case.until, limit=100) == (list(case.between), False)
    assert when.latest_between(None, case.until, limit=100) == (list(case.between), False)
    assert list(itertools.islice(when.iter_after(None), len(case.between))) == list(case.between)
    assert when.past_end(None, now=LATER) == list(case.past_end)


@pytest.mark.parametrize(
    "when",
    [
        pytest.param(daily_half_past_two_in_berlin(), id="cron"),
        pytest.param(once(run_at=SPRING_CHANGE, created=SPRING_CREATED), id="runAt"),
    ],
)
def test_both_kinds_bound_the_same_way(when: When) -> None:
    until = utc("2027-03-29T12:00:00Z")
    everything, more = when.between(None, until, limit=100)
    assert everything and not more
    assert when.between(None, SPRING_CHANGE - TICK, limit=100) == ([t for t in everything if t < SPRING_CHANGE], False)
    assert when.between(SPRING_CHANGE, until, limit=100) == ([t for t in everything if t > SPRING_CHANGE], False)
    assert when.between(None, until, limit=0) == ([], True)
    assert when.between(SPRING_CHANGE, SPRING_CHANGE, limit=5) == ([], False)
    assert when.next_after(SPRING_CHANGE) != SPRING_CHANGE
    with pytest.raises(ScheduleError, match="limit"):
        when.between(None, until, limit=-1)


def test_the_newest_times_are_taken_from_the_end_of_a_range() -> None:
    when = daily_half_past_two_in_berlin()
    assert when.latest_between(None, utc("2027-03-29T12:00:00Z"), limit=2) == (
        [SPRING_CHANGE, utc("2027-03-29T00:30:00Z")],
        True,
    )
    assert when.between(None, utc("2027-03-29T12:00:00Z"), limit=2) == (
        [utc("2027-03-27T01:30:00Z"), SPRING_CHANGE],
        True,
    )


def test_a_cursor_at_the_owed_time_has_handled_it() -> None:
    when = once(run_at=RUN_AT, created=SPRING_CREATED)
    assert when.next_after(RUN_AT) is None
    assert when.between(RUN_AT, LATER, limit=1) == ([], False)
    assert list(when.iter_after(RUN_AT)) == []


def test_a_time_past_end_is_lost_only_once_end_has_come_and_only_while_not_handled() -> None:
    when = once(run_at=RUN_AT, created=SPRING_CREATED, end=BEFORE_RUN_AT)
    assert when.past_end(None, now=BEFORE_RUN_AT - TICK) == []
    assert when.past_end(None, now=BEFORE_RUN_AT) == [RUN_AT]
    assert when.past_end(RUN_AT, now=LATER) == []


def test_recurring_times_stop_at_end_and_start_at_start() -> None:
    when = recurring(build_timetable("0 * * * *"), start=utc("2027-01-01T00:00:00Z"), end=utc("2027-01-01T03:00:00Z"))
    assert list(when.iter_after(None)) == [utc(f"2027-01-01T0{h}:00:00Z") for h in range(4)]
    assert when.origin is None
    assert when.next_after(utc("2027-01-01T03:00:00Z")) is None


def test_builders_refuse_naive_instants_naming_the_field() -> None:
    naive = datetime(2027, 1, 1)
    with pytest.raises(ScheduleError, match="runAt"):
        once(run_at=naive, created=SPRING_CREATED)
    with pytest.raises(ScheduleError, match="creationTimestamp"):
        once(run_at=None, created=naive)
    with pytest.raises(ScheduleError, match="creationTimestamp"):
        recurring(build_timetable("@daily"), created=naive)


def test_the_kinds_are_values() -> None:
    assert once(run_at=RUN_AT, created=SPRING_CREATED) == Once(at=RUN_AT)
    assert daily_half_past_two_in_berlin() == daily_half_past_two_in_berlin()
    assert hash(once(run_at=None, created=SPRING_CREATED, start=SPRING_START + timedelta(0))) == hash(
        Once(at=SPRING_START)
    )
