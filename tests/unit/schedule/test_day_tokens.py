"""Quartz/EventBridge day tokens (L, L-n, nW, LW, dL, d#n), ``?``, MON-SUN and TZ= prefixes (DESIGN §3).

The DST tests use named instants on real change days: 2027-03-28 (the last Sunday of March) in Europe/Berlin
skips 02:00-03:00 CET->CEST, 2027-10-31 repeats 02:00-03:00; Australia/Lord_Howe moves by 30 minutes: on
2027-10-03 (the first Sunday of October) 02:00 becomes 02:30, on 2027-04-04 02:00 becomes 01:30.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime

import pytest

from sundial.schedule import ScheduleError, SkippedTime, build_timetable, parse_cron
from sundial.schedule.policies import RepeatedTime


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def next_times(
    text: str,
    after: str,
    count: int,
    *,
    zone: str = "UTC",
    skipped: SkippedTime = SkippedTime.AUTO,
    repeated: RepeatedTime = RepeatedTime.AUTO,
) -> list[datetime]:
    table = build_timetable(text, time_zone=zone, skipped=skipped, repeated=repeated)
    return list(itertools.islice(table.iter_after(utc(after)), count))


def days(text: str, after: str, count: int) -> list[str]:
    return [t.date().isoformat() for t in next_times(text, after, count)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("0 0 L * *", ["2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30"], id="L_last_day"),
        pytest.param("0 0 L 2 *", ["2026-02-28", "2027-02-28", "2028-02-29", "2029-02-28"], id="L_in_leap_years"),
        pytest.param("0 0 L-3 * *", ["2026-01-28", "2026-02-25", "2026-03-28", "2026-04-27"], id="L_minus_3"),
        pytest.param("0 0 L-30 * *", ["2026-03-01", "2026-05-01", "2026-07-01", "2026-08-01"], id="L_minus_30_31_days"),
        # 2026-02-15 is a Sunday -> Monday 16th; 2026-08-15 a Saturday -> Friday 14th.
        pytest.param("0 0 15W * *", ["2026-01-15", "2026-02-16", "2026-03-16", "2026-04-15"], id="W_nearest_weekday"),
        pytest.param("0 0 15W 8 *", ["2026-08-14", "2027-08-16", "2028-08-15", "2029-08-15"], id="W_saturday_friday"),
        # 2026-02-01 is a Sunday -> Monday 2nd; 2026-08-01 a Saturday -> Monday 3rd (never the month before).
        pytest.param("0 0 1W 2,8 *", ["2026-02-02", "2026-08-03", "2027-02-01", "2027-08-02"], id="1W_stays_in_month"),
        # 2026-01-31 is a Saturday -> Friday 30th; 2026-05-31 a Sunday -> Friday 29th (never the month after).
        pytest.param("0 0 31W * *", ["2026-01-30", "2026-03-31", "2026-05-29", "2026-07-31"], id="31W_stays_in_month"),
        pytest.param("0 0 LW * *", ["2026-01-30", "2026-02-27", "2026-03-31", "2026-04-30"], id="LW_last_weekday"),
        pytest.param("0 0 ? * 5L", ["2026-01-30", "2026-02-27", "2026-03-27", "2026-04-24"], id="5L_last_friday"),
        pytest.param("0 0 ? * FRIL", ["2026-01-30", "2026-02-27", "2026-03-27", "2026-04-24"], id="FRIL_last_friday"),
        pytest.param("0 0 ? * 7L", ["2026-01-25", "2026-02-22", "2026-03-29", "2026-04-26"], id="7L_last_sunday"),
        pytest.param("0 0 ? * FRI#3", ["2026-01-16", "2026-02-20", "2026-03-20", "2026-04-17"], id="FRI_hash_3"),
        pytest.param("0 0 ? * 0#1", ["2026-01-04", "2026-02-01", "2026-03-01", "2026-04-05"], id="0_hash_1_sunday"),
        pytest.param("0 0 * * FRI#5", ["2026-01-30", "2026-05-29", "2026-07-31", "2026-10-30"], id="fifth_only_some"),
        pytest.param("0 0 1,L * *", ["2026-01-31", "2026-02-01", "2026-02-28", "2026-03-01"], id="list_with_L"),
        pytest.param("0 0 * * MON-SUN", ["2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"], id="MON_SUN_daily"),
    ],
)
def test_day_tokens_name_the_documented_days(text: str, expected: list[str]) -> None:
    assert days(text, "2026-01-01T00:00:00", 4) == expected


def test_both_day_fields_restricted_is_vixie_or_for_the_new_tokens_too() -> None:
    # The last day of the month OR any Friday: a field with L/W/# is restricted (DESIGN §3).
    cron = parse_cron("0 0 L * FRI")
    assert cron.matches_day(date(2026, 1, 31))  # Saturday, the last day
    assert cron.matches_day(date(2026, 1, 9))  # a Friday
    assert not cron.matches_day(date(2026, 1, 10))
    # With the day-of-month unrestricted (? or *) only the day-of-week token decides.
    assert parse_cron("0 0 * * FRI#3").matches_day(date(2026, 1, 16))
    assert not parse_cron("0 0 * * FRI#3").matches_day(date(2026, 1, 9))


@pytest.mark.parametrize(
    ("text", "weekdays"),
    [
        ("0 0 * * MON-SUN", {0, 1, 2, 3, 4, 5, 6}),
        ("0 0 * * 5-0", {5, 6, 0}),
        ("0 0 * * FRI-SUN", {5, 6, 0}),
        ("0 0 * * SUN-SUN", {0}),
        ("0 0 * * 0-0", {0}),
    ],
)
def test_a_day_of_week_range_ending_at_sunday_ends_at_seven(text: str, weekdays: set[int]) -> None:
    assert parse_cron(text).weekdays == frozenset(weekdays)


def test_question_mark_reads_as_star_in_every_field() -> None:
    assert parse_cron("? ? ? ? ? ?") == parse_cron("* * * * * *").__class__(
        **{**parse_cron("* * * * * *").__dict__, "text": "? ? ? ? ? ?"}
    )


@pytest.mark.parametrize("prefix", ["TZ=Europe/Berlin", "CRON_TZ=UTC", "tz=UTC"])
def test_time_zone_prefixes_are_refused_naming_spec_time_zone(prefix: str) -> None:
    with pytest.raises(ScheduleError, match=r"use spec\.timeZone"):
        parse_cron(f"{prefix} 0 3 * * *")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("0 0 L-40 * *", "L-n needs n in 0-30"),
        ("0 0 32W * *", "nW needs a day 1-31"),
        ("0 0 0W * *", "nW needs a day 1-31"),
        ("0 0 * * FRI#6", "d#n needs n in 1-5"),
        ("0 0 * * FRI#0", "d#n needs n in 1-5"),
        ("0 0 * * FRI#", "d#n needs n in 1-5"),
        ("0 0 * * 8#1", "value 8 out of range 0-7"),
        ("0 0 1#1 * *", "belongs in the day-of-week field"),
        ("0 0 * * 15W", "belongs in the day-of-month field"),
        ("0 0 * * L", "L alone is ambiguous"),
        ("0 0 L/2 * *", "is not a day-of-month token"),
        ("0 0 LL * *", "is not a day-of-month token"),
        ("0 0 * * FRIL#2", "are only day-of-month"),
        ("L 0 * * *", "are only day-of-month"),
        ("0 0 L-30 2 *", "never matches"),
        ("0 0 30W 2 *", "never matches"),
    ],
)
def test_bad_day_tokens_are_refused_naming_the_field(text: str, fragment: str) -> None:
    with pytest.raises(ScheduleError, match="schedule") as caught:
        parse_cron(text)
    assert fragment in str(caught.value)


# DST: the policies of DESIGN §3 apply unchanged to days named by tokens.


def test_berlin_last_day_minus_3_of_march_2027_is_the_spring_forward_day() -> None:
    # 2027-03-31 - 3 = Sunday 28 March: 02:30 does not exist. Auto = RunAfterChange for a fixed time:
    # the run is at 03:00 CEST = 01:00Z; with Skip there is none that year.
    assert next_times("30 2 L-3 3 *", "2027-01-01T00:00:00", 1, zone="Europe/Berlin") == [utc("2027-03-28T01:00:00")]
    skipped = next_times("30 2 L-3 3 *", "2027-01-01T00:00:00", 1, zone="Europe/Berlin", skipped=SkippedTime.SKIP)
    assert skipped == [utc("2028-03-28T00:30:00")]


def test_berlin_last_sunday_of_october_2027_repeats_0230_once_or_twice() -> None:
    once = next_times("30 2 ? * SUNL", "2027-10-01T00:00:00", 2, zone="Europe/Berlin")
    assert once == [utc("2027-10-31T00:30:00"), utc("2027-11-28T01:30:00")]
    twice = next_times("30 2 ? * SUNL", "2027-10-01T00:00:00", 2, zone="Europe/Berlin", repeated=RepeatedTime.TWICE)
    assert twice == [utc("2027-10-31T00:30:00"), utc("2027-10-31T01:30:00")]


def test_lord_howe_last_day_of_the_month_across_its_30_minute_shift() -> None:
    # 12:00 on 30 September is +10:30 (01:30Z); on 31 October, after the shift, +11:00 (01:00Z).
    times = next_times("0 12 L * *", "2027-09-01T00:00:00", 2, zone="Australia/Lord_Howe")
    assert times == [utc("2027-09-30T01:30:00"), utc("2027-10-31T01:00:00")]


def test_lord_howe_first_sunday_of_october_0215_is_skipped_to_0230() -> None:
    times = next_times("15 2 ? * SUN#1", "2027-09-15T00:00:00", 1, zone="Australia/Lord_Howe")
    assert times == [utc("2027-10-02T15:30:00")]  # 02:30 LHDT, the first instant after the change


def test_lord_howe_first_sunday_of_april_0145_happens_twice() -> None:
    once = next_times("45 1 ? * SUN#1", "2027-03-15T00:00:00", 1, zone="Australia/Lord_Howe")
    assert once == [utc("2027-04-03T14:45:00")]  # 01:45 at +11:00
    twice = next_times(
        "45 1 ? * SUN#1", "2027-03-15T00:00:00", 2, zone="Australia/Lord_Howe", repeated=RepeatedTime.TWICE
    )
    assert twice == [utc("2027-04-03T14:45:00"), utc("2027-04-03T15:15:00")]  # and again at +10:30
