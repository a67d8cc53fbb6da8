"""Several timetables as one (``spec.schedules``) and excluded times (``spec.exclude``), at named instants."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from sundial.schedule import (
    Exclusion,
    ScheduleError,
    Union,
    build_timetable,
    excluded_cron,
    excluded_dates,
    excluded_span,
    load_zone,
    parse_rfc3339,
    recurring,
)
from sundial.schedule import exclusions as ex


def utc(text: str) -> datetime:
    return parse_rfc3339(text, field="test")


# 2026-05-11 is a Monday. Berlin is at +02:00 (CEST) then.
MONDAY = utc("2026-05-11T00:00:00Z")
BERLIN = load_zone("Europe/Berlin")


def union(*texts: str, zone: str = "UTC", uid: str = "") -> Union:
    return Union(tuple(build_timetable(text, time_zone=zone, uid=uid) for text in texts))


def test_the_union_is_merged_in_order_and_a_time_two_entries_produce_is_listed_once() -> None:
    both = union("0 */6 * * *", "0 12,13 * * *")
    times = list(itertools.islice(both.iter_after(MONDAY), 6))
    assert times == [
        utc("2026-05-11T06:00:00Z"),
        utc("2026-05-11T12:00:00Z"),  # from both entries: one run
        utc("2026-05-11T13:00:00Z"),
        utc("2026-05-11T18:00:00Z"),
        utc("2026-05-12T00:00:00Z"),
        utc("2026-05-12T06:00:00Z"),
    ]


def test_between_and_latest_between_bound_the_union_and_flag_what_is_left() -> None:
    both = union("0 * * * *", "30 * * * *")
    until = MONDAY + timedelta(hours=3)
    assert both.between(MONDAY, until, limit=10) == (
        [MONDAY + timedelta(minutes=m) for m in (30, 60, 90, 120, 150, 180)],
        False,
    )
    assert both.between(MONDAY, until, limit=2) == ([MONDAY + timedelta(minutes=30), MONDAY + timedelta(hours=1)], True)
    assert both.latest_between(MONDAY, until, limit=2) == (
        [MONDAY + timedelta(minutes=150), MONDAY + timedelta(hours=3)],
        True,
    )
    assert both.latest_between(MONDAY, until, limit=0) == ([], True)


def test_a_union_behind_recurring_keeps_origin_start_and_end() -> None:
    when = recurring(union("0 * * * *", "0 0 * * *"), created=MONDAY, end=MONDAY + timedelta(hours=2))
    assert list(when.iter_after(None)) == [MONDAY + timedelta(hours=1), MONDAY + timedelta(hours=2)]


def test_each_entry_keeps_its_own_daylight_saving_auto() -> None:
    # 2027-03-28 02:30 does not exist in Berlin: the fixed-time entry runs after the change (Auto =
    # RunAfterChange), the wildcard entry skips its 02:xx times (Auto = Skip); 03:00 CEST is produced by both.
    both = union("30 2 * * *", "0 * 28 3 *", zone="Europe/Berlin")
    times = list(itertools.islice(both.iter_after(utc("2027-03-27T23:30:00Z")), 3))
    assert times == [utc("2027-03-28T00:00:00Z"), utc("2027-03-28T01:00:00Z"), utc("2027-03-28T02:00:00Z")]


def test_h_values_of_an_entry_do_not_depend_on_its_position_in_the_list() -> None:
    alone = build_timetable("H H * * *", uid="u-1").cron
    first = union("H H * * *", "0 0 1 1 *", uid="u-1").parts[0].cron
    second = union("0 0 1 1 *", "H H * * *", uid="u-1").parts[1].cron
    assert (alone.minutes, alone.hours) == (first.minutes, first.hours) == (second.minutes, second.hours)


# Exclusions ------------------------------------------------------------------------------------------


def test_excluded_dates_are_local_dates_of_the_zone() -> None:
    rule = excluded_dates(("2026-05-12",), zone=BERLIN, field="exclude[0]")
    assert not rule.excludes(utc("2026-05-11T21:59:59Z"))  # 23:59:59 on the 11th in Berlin
    assert rule.excludes(utc("2026-05-11T22:00:00Z"))  # midnight of the 12th in Berlin
    assert rule.excludes(utc("2026-05-12T21:59:59Z"))
    assert not rule.excludes(utc("2026-05-12T22:00:00Z"))


def test_a_span_is_inclusive_and_a_date_as_to_covers_the_whole_local_day() -> None:
    rule = excluded_span("2026-05-11", "2026-05-12", zone=BERLIN, field="exclude[0]")
    assert not rule.excludes(utc("2026-05-10T21:59:59Z"))
    assert rule.excludes(utc("2026-05-10T22:00:00Z"))
    assert rule.excludes(utc("2026-05-12T21:59:59.999999Z"))
    assert not rule.excludes(utc("2026-05-12T22:00:00Z"))
    exact = excluded_span("2026-05-11T10:00:00Z", "2026-05-11T11:00:00+01:00", zone=BERLIN, field="exclude[0]")
    assert exact.excludes(utc("2026-05-11T10:00:00Z"))  # both ends inclusive: 11:00+01:00 is 10:00Z
    assert not exact.excludes(utc("2026-05-11T10:00:01Z"))


def test_a_five_field_cron_mask_excludes_every_second_of_its_minutes_a_six_field_one_only_its_seconds() -> None:
    christmas_eve = excluded_cron("* * 24 12 *", zone=BERLIN, uid="", field="exclude[0].schedule")
    assert christmas_eve.excludes(utc("2026-12-24T12:34:56Z"))
    assert not christmas_eve.excludes(utc("2026-12-25T12:34:56Z"))
    assert christmas_eve.excludes(utc("2026-12-23T23:00:00Z"))  # 00:00 on the 24th in Berlin (+01:00)
    on_the_minute = excluded_cron("0 * * * * *", zone=BERLIN, uid="", field="exclude[0].schedule")
    assert on_the_minute.excludes(utc("2026-12-24T12:34:00Z"))
    assert not on_the_minute.excludes(utc("2026-12-24T12:34:10Z"))


def test_the_empty_exclusion_excludes_nothing_and_exclusions_add_up() -> None:
    assert not Exclusion()
    weekend = Exclusion((excluded_cron("* * * * SAT,SUN", zone=BERLIN, uid="", field="x"),))
    holiday = Exclusion((excluded_dates(("2026-05-14",), zone=BERLIN, field="y"),))
    both = weekend + holiday
    assert both.excludes(utc("2026-05-16T10:00:00Z"))  # a Saturday
    assert both.excludes(utc("2026-05-14T10:00:00Z"))  # the holiday, a Thursday
    assert not both.excludes(utc("2026-05-13T10:00:00Z"))


@pytest.mark.parametrize(
    ("start", "end", "field"),
    [
        ("2026-05-12", "2026-05-11", "exclude[0].to"),
        ("2026-05-11", "yesterday", "exclude[0].to"),
        ("2026-02-30", "2026-03-01", "exclude[0].from"),
        ("2026-05-11T10:00:00", "2026-05-12", "exclude[0].from"),
    ],
)
def test_a_bad_span_names_its_end(start: str, end: str, field: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        excluded_span(start, end, zone=BERLIN, field="exclude[0]")
    assert caught.value.field == field


def test_span_instants_are_utc() -> None:
    rule = excluded_span("2026-05-11", "2026-05-11", zone=BERLIN, field="exclude[0]")
    assert rule.start.tzinfo is UTC and rule.start == utc("2026-05-10T22:00:00Z")


def test_compact_merges_the_date_rules_of_one_zone_and_excludes_the_same() -> None:

    berlin, utc = ZoneInfo("Europe/Berlin"), ZoneInfo("UTC")
    rules = (
        ex.excluded_dates(("2026-05-11",), zone=berlin, field="a"),
        ex.excluded_dates(("2026-05-13",), zone=berlin, field="b"),
        ex.excluded_dates(("2026-05-12",), zone=utc, field="c"),
        ex.excluded_span("2026-06-01", "2026-06-01", zone=utc, field="d"),
    )
    whole = ex.Exclusion(rules)
    compact = whole.compact()
    assert len(compact.rules) == 3
    for hour in range(0, 24 * 40, 5):
        instant = datetime(2026, 5, 10, tzinfo=UTC) + timedelta(hours=hour)
        assert compact.excludes(instant) == whole.excludes(instant)
