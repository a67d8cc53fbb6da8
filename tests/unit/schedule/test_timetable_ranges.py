"""Timetable queries: next_after, iter_after, between, latest_between, horizon and input checks."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone

import pytest

from sundial.schedule import ScheduleError, Timetable, build_timetable, parse_cron, parse_rfc3339
from sundial.schedule.zones import load_zone


def utc(text: str) -> datetime:
    return parse_rfc3339(text, field="test")


def test_next_after_is_strictly_after_a_nominal_time() -> None:
    timetable = build_timetable("30 2 * * *")
    assert timetable.next_after(utc("2027-01-01T02:30:00Z")) == utc("2027-01-02T02:30:00Z")


def test_next_after_accepts_any_aware_zone_and_returns_utc() -> None:
    after = datetime(2027, 1, 1, 3, 29, 59, 999999, tzinfo=timezone(timedelta(hours=1)))
    result = build_timetable("30 2 * * *").next_after(after)
    assert result == utc("2027-01-01T02:30:00Z")
    assert result is not None and result.tzinfo is UTC


def test_next_after_honours_the_time_zone() -> None:
    timetable = build_timetable("0 9 * * MON-FRI", time_zone="America/New_York")
    # 2027-01-01 is a Friday; after 14:00Z (09:00 EST) the next run is Monday 2027-01-04.
    assert timetable.next_after(utc("2027-01-01T14:00:00Z")) == utc("2027-01-04T14:00:00Z")


def test_next_after_finds_a_leap_day_years_ahead() -> None:
    assert build_timetable("0 0 29 2 *").next_after(utc("2028-03-01T00:00:00Z")) == utc("2032-02-29T00:00:00Z")


def test_next_after_gives_none_when_nothing_matches_within_ten_years() -> None:
    never = dataclasses.replace(parse_cron("0 0 1 2 *"), days=frozenset({30}))  # bypasses validation
    timetable = Timetable(cron=never, zone=load_zone("UTC"))
    assert timetable.next_after(utc("2027-01-01T00:00:00Z")) is None
    assert list(timetable.iter_after(utc("2027-01-01T00:00:00Z"))) == []


def test_iteration_stops_at_the_end_of_the_supported_range() -> None:
    times = list(build_timetable("@yearly").iter_after(utc("9989-06-01T00:00:00Z")))
    assert [t.year for t in times] == list(range(9990, 9999))


def test_iteration_keeps_going_past_ten_years_while_runs_keep_coming() -> None:
    times = build_timetable("@yearly").iter_after(utc("2027-06-01T00:00:00Z"))
    assert [next(times).year for _ in range(15)] == list(range(2028, 2043))


def test_between_returns_the_oldest_up_to_the_limit_and_flags_truncation() -> None:
    timetable = build_timetable("0 * * * *")
    times, truncated = timetable.between(utc("2027-01-01T00:00:00Z"), utc("2027-01-01T05:00:00Z"), limit=3)
    assert times == [utc("2027-01-01T01:00:00Z"), utc("2027-01-01T02:00:00Z"), utc("2027-01-01T03:00:00Z")]
    assert truncated


def test_between_includes_until_and_excludes_after() -> None:
    timetable = build_timetable("0 * * * *")
    times, truncated = timetable.between(utc("2027-01-01T00:00:00Z"), utc("2027-01-01T02:00:00Z"), limit=10)
    assert times == [utc("2027-01-01T01:00:00Z"), utc("2027-01-01T02:00:00Z")]
    assert not truncated


def test_between_with_exactly_limit_times_is_not_truncated() -> None:
    timetable = build_timetable("0 * * * *")
    times, truncated = timetable.between(utc("2027-01-01T00:00:00Z"), utc("2027-01-01T02:30:00Z"), limit=2)
    assert len(times) == 2
    assert not truncated


def test_between_an_empty_range() -> None:
    timetable = build_timetable("0 * * * *")
    assert timetable.between(utc("2027-01-01T00:10:00Z"), utc("2027-01-01T00:50:00Z"), limit=5) == ([], False)


def test_latest_between_returns_the_newest_and_flags_older_ones() -> None:
    timetable = build_timetable("* * * * * *")
    times, older = timetable.latest_between(utc("2020-01-01T00:00:00Z"), utc("2027-01-01T00:00:00Z"), limit=3)
    assert times == [utc("2026-12-31T23:59:58Z"), utc("2026-12-31T23:59:59Z"), utc("2027-01-01T00:00:00Z")]
    assert older


def test_latest_between_without_older_ones() -> None:
    timetable = build_timetable("@daily")
    times, older = timetable.latest_between(utc("2027-01-01T00:00:00Z"), utc("2027-01-03T12:00:00Z"), limit=5)
    assert times == [utc("2027-01-02T00:00:00Z"), utc("2027-01-03T00:00:00Z")]
    assert not older


def test_latest_between_with_a_zero_limit_only_reports_existence() -> None:
    timetable = build_timetable("@daily")
    assert timetable.latest_between(utc("2027-01-01T00:00:00Z"), utc("2027-01-03T00:00:00Z"), limit=0) == (
        [],
        True,
    )
    assert timetable.latest_between(utc("2027-01-01T00:00:00Z"), utc("2027-01-01T01:00:00Z"), limit=0) == (
        [],
        False,
    )


def test_a_per_second_schedule_over_a_fall_back_night_has_every_second_of_both_hours() -> None:
    timetable = build_timetable("* * * * * *", time_zone="Europe/Berlin")
    for minute in range(200):
        start = utc("2027-10-31T00:30:00Z") + timedelta(minutes=minute)
        assert timetable.next_after(start) == start + timedelta(seconds=1)
    times, truncated = timetable.between(utc("2027-10-30T22:00:00Z"), utc("2027-10-31T04:00:00Z"), limit=30000)
    assert len(times) == 6 * 3600  # six UTC hours, including both Berlin 02:xx hours
    assert not truncated


def test_timetables_can_be_built_from_parts() -> None:
    timetable = Timetable(cron=parse_cron("0 12 * * *"), zone=load_zone("Asia/Tokyo"))
    assert timetable.next_after(utc("2027-01-01T00:00:00Z")) == utc("2027-01-01T03:00:00Z")


def test_policies_may_be_given_as_spec_strings() -> None:
    timetable = build_timetable("30 2 * * *", skipped="Skip", repeated="Twice")
    assert (timetable.skipped, timetable.repeated) == ("Skip", "Twice")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        pytest.param({"schedule": "nope"}, "schedule", id="bad_schedule"),
        pytest.param({"schedule": "@daily", "time_zone": "Mars/Olympus"}, "timeZone", id="bad_zone"),
        pytest.param({"schedule": "@daily", "skipped": "Never"}, "daylightSaving.skippedTime", id="bad_skipped"),
        pytest.param({"schedule": "@daily", "repeated": "Thrice"}, "daylightSaving.repeatedTime", id="bad_repeat"),
    ],
)
def test_build_timetable_errors_name_the_field(kwargs: dict[str, str], field: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        build_timetable(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("call", "field"),
    [
        pytest.param(lambda t: t.next_after(datetime(2027, 1, 1)), "after", id="naive_after"),
        pytest.param(lambda t: t.iter_after(datetime(2027, 1, 1)), "after", id="naive_after_in_iter"),
        pytest.param(
            lambda t: t.between(datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 2), limit=1),
            "until",
            id="naive_until",
        ),
        pytest.param(
            lambda t: t.between(datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 2, tzinfo=UTC), limit=-1),
            "limit",
            id="negative_limit",
        ),
        pytest.param(lambda t: t.next_after(datetime(1, 1, 1, tzinfo=UTC)), "after", id="after_too_early"),
        pytest.param(lambda t: t.next_after(datetime(9999, 1, 1, tzinfo=UTC)), "after", id="after_too_late"),
    ],
)
def test_invalid_instants_are_errors(call: object, field: str) -> None:
    timetable = build_timetable("@daily")
    with pytest.raises(ScheduleError) as caught:
        call(timetable)  # type: ignore[operator]
    assert caught.value.field == field
