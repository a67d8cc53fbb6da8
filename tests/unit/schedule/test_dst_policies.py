"""Nominal times across daylight-saving changes, per zone and policy (DESIGN §3)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from sundial.schedule import RepeatedTime, SkippedTime, build_timetable, format_rfc3339, parse_rfc3339

AUTO_SKIPPED, SKIP, RUN_AFTER_CHANGE = SkippedTime.AUTO, SkippedTime.SKIP, SkippedTime.RUN_AFTER_CHANGE
AUTO_REPEATED, ONCE, TWICE = RepeatedTime.AUTO, RepeatedTime.ONCE, RepeatedTime.TWICE


@dataclass(frozen=True)
class Case:
    # spec
    schedule: str
    zone: str
    skipped: SkippedTime = AUTO_SKIPPED
    repeated: RepeatedTime = AUTO_REPEATED
    # environment
    after: str = ""
    # expectations
    expected: tuple[str, ...] = ()


def case(id_: str, **fields: object) -> object:
    return pytest.param(Case(**fields), id=id_)  # type: ignore[arg-type]


CASES = [
    # Europe/Berlin 2027: spring forward 2027-03-28 01:00Z (02:00 CET -> 03:00 CEST),
    # fall back 2027-10-31 01:00Z (03:00 CEST -> 02:00 CET).
    case(
        "berlin_spring_fixed_time_runs_after_change",
        schedule="30 2 * * *",
        zone="Europe/Berlin",
        after="2027-03-27T00:00:00Z",
        expected=("2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"),
    ),
    case(
        "berlin_spring_fixed_time_skip_drops_the_missing_run",
        schedule="30 2 * * *",
        zone="Europe/Berlin",
        skipped=SKIP,
        after="2027-03-27T00:00:00Z",
        expected=("2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z", "2027-03-30T00:30:00Z"),
    ),
    case(
        "berlin_spring_several_skipped_times_collapse_into_one_run",
        schedule="0,20,40 2 * * *",
        zone="Europe/Berlin",
        after="2027-03-27T23:00:00Z",
        expected=("2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z", "2027-03-29T00:20:00Z"),
    ),
    case(
        "berlin_spring_nominal_time_at_the_change_instant_still_runs_once",
        schedule="0 2,3 * * *",
        zone="Europe/Berlin",
        after="2027-03-27T23:00:00Z",
        expected=("2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z", "2027-03-29T01:00:00Z"),
    ),
    case(
        "berlin_spring_wildcard_skips_the_missing_hour",
        schedule="30 * * * *",
        zone="Europe/Berlin",
        after="2027-03-27T23:00:00Z",
        expected=("2027-03-27T23:30:00Z", "2027-03-28T00:30:00Z", "2027-03-28T01:30:00Z"),
    ),
    case(
        "berlin_spring_wildcard_runs_after_change_when_asked",
        schedule="30 * * * *",
        zone="Europe/Berlin",
        skipped=RUN_AFTER_CHANGE,
        after="2027-03-27T23:00:00Z",
        expected=(
            "2027-03-27T23:30:00Z",
            "2027-03-28T00:30:00Z",
            "2027-03-28T01:00:00Z",
            "2027-03-28T01:30:00Z",
        ),
    ),
    case(
        "berlin_autumn_fixed_time_runs_once",
        schedule="30 2 * * *",
        zone="Europe/Berlin",
        after="2027-10-30T00:00:00Z",
        expected=("2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"),
    ),
    case(
        "berlin_autumn_fixed_time_twice_runs_both_occurrences",
        schedule="30 2 * * *",
        zone="Europe/Berlin",
        repeated=TWICE,
        after="2027-10-30T00:00:00Z",
        expected=(
            "2027-10-30T00:30:00Z",
            "2027-10-31T00:30:00Z",
            "2027-10-31T01:30:00Z",
            "2027-11-01T01:30:00Z",
        ),
    ),
    case(
        "berlin_autumn_hourly_wildcard_keeps_its_rhythm",
        schedule="30 * * * *",
        zone="Europe/Berlin",
        after="2027-10-30T22:00:00Z",
        expected=(
            "2027-10-30T22:30:00Z",
            "2027-10-30T23:30:00Z",
            "2027-10-31T00:30:00Z",
            "2027-10-31T01:30:00Z",
            "2027-10-31T02:30:00Z",
            "2027-10-31T03:30:00Z",
        ),
    ),
    case(
        "berlin_autumn_hourly_wildcard_once_leaves_a_gap",
        schedule="30 * * * *",
        zone="Europe/Berlin",
        repeated=ONCE,
        after="2027-10-30T23:00:00Z",
        expected=("2027-10-30T23:30:00Z", "2027-10-31T00:30:00Z", "2027-10-31T02:30:00Z"),
    ),
    case(
        "berlin_autumn_quarter_hours_twice_come_out_in_utc_order",
        schedule="*/15 2 * * *",
        zone="Europe/Berlin",
        after="2027-10-31T00:20:00Z",
        expected=(
            "2027-10-31T00:30:00Z",
            "2027-10-31T00:45:00Z",
            "2027-10-31T01:00:00Z",
            "2027-10-31T01:15:00Z",
            "2027-10-31T01:30:00Z",
            "2027-10-31T01:45:00Z",
            "2027-11-01T01:00:00Z",
        ),
    ),
    case(
        "berlin_autumn_after_inside_the_first_occurrence_still_sees_the_second",
        schedule="10 2 * * *",
        zone="Europe/Berlin",
        repeated=TWICE,
        after="2027-10-31T00:50:00Z",
        expected=("2027-10-31T01:10:00Z", "2027-11-01T01:10:00Z"),
    ),
    # Sub-minute schedules (6 fields) across both changes.
    case(
        "berlin_spring_every_ten_seconds_skips_the_missing_hour",
        schedule="*/10 * * * * *",
        zone="Europe/Berlin",
        after="2027-03-28T00:59:40Z",
        expected=("2027-03-28T00:59:50Z", "2027-03-28T01:00:00Z", "2027-03-28T01:00:10Z"),
    ),
    case(
        "berlin_spring_every_ten_seconds_runs_after_change_once",
        schedule="*/10 * * * * *",
        zone="Europe/Berlin",
        skipped=RUN_AFTER_CHANGE,
        after="2027-03-28T00:59:40Z",
        expected=("2027-03-28T00:59:50Z", "2027-03-28T01:00:00Z", "2027-03-28T01:00:10Z"),
    ),
    case(
        "berlin_autumn_every_ten_seconds_twice_is_continuous_in_utc",
        schedule="*/10 * * * * *",
        zone="Europe/Berlin",
        after="2027-10-31T00:59:40Z",
        expected=("2027-10-31T00:59:50Z", "2027-10-31T01:00:00Z", "2027-10-31T01:00:10Z"),
    ),
    case(
        "berlin_autumn_every_ten_seconds_once_jumps_over_the_repeat",
        schedule="*/10 * * * * *",
        zone="Europe/Berlin",
        repeated=ONCE,
        after="2027-10-31T00:59:40Z",
        expected=("2027-10-31T00:59:50Z", "2027-10-31T02:00:00Z", "2027-10-31T02:00:10Z"),
    ),
    # America/New_York 2027: spring 2027-03-14 07:00Z, fall back 2027-11-07 06:00Z (01:00-01:59 twice).
    case(
        "new_york_spring_fixed_time_runs_after_change",
        schedule="30 2 * * *",
        zone="America/New_York",
        after="2027-03-13T00:00:00Z",
        expected=("2027-03-13T07:30:00Z", "2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"),
    ),
    case(
        "new_york_spring_fixed_time_skip_drops_the_missing_run",
        schedule="30 2 * * *",
        zone="America/New_York",
        skipped=SKIP,
        after="2027-03-13T00:00:00Z",
        expected=("2027-03-13T07:30:00Z", "2027-03-15T06:30:00Z"),
    ),
    case(
        "new_york_autumn_fixed_time_runs_once_at_the_first_occurrence",
        schedule="30 1 * * *",
        zone="America/New_York",
        after="2027-11-06T00:00:00Z",
        expected=("2027-11-06T05:30:00Z", "2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"),
    ),
    case(
        "new_york_autumn_fixed_time_twice_runs_both_occurrences",
        schedule="30 1 * * *",
        zone="America/New_York",
        repeated=TWICE,
        after="2027-11-06T00:00:00Z",
        expected=(
            "2027-11-06T05:30:00Z",
            "2027-11-07T05:30:00Z",
            "2027-11-07T06:30:00Z",
            "2027-11-08T06:30:00Z",
        ),
    ),
    # Australia/Lord_Howe: a 30-minute shift. 2027-10-03 02:00 -> 02:30 (+10:30 -> +11, at 15:30Z the
    # day before); 2027-04-04 02:00 -> 01:30 (at 2027-04-03T15:00Z).
    case(
        "lord_howe_spring_half_hour_gap_runs_after_change",
        schedule="15 2 * * *",
        zone="Australia/Lord_Howe",
        after="2027-10-01T00:00:00Z",
        expected=("2027-10-01T15:45:00Z", "2027-10-02T15:30:00Z", "2027-10-03T15:15:00Z"),
    ),
    case(
        "lord_howe_spring_half_hour_gap_skip_for_a_wildcard",
        schedule="15 * * * *",
        zone="Australia/Lord_Howe",
        after="2027-10-02T14:00:00Z",
        expected=("2027-10-02T14:45:00Z", "2027-10-02T16:15:00Z", "2027-10-02T17:15:00Z"),
    ),
    case(
        "lord_howe_autumn_half_hour_repeat_twice",
        schedule="45 1 * * *",
        zone="Australia/Lord_Howe",
        repeated=TWICE,
        after="2027-04-02T00:00:00Z",
        expected=(
            "2027-04-02T14:45:00Z",
            "2027-04-03T14:45:00Z",
            "2027-04-03T15:15:00Z",
            "2027-04-04T15:15:00Z",
        ),
    ),
    case(
        "lord_howe_autumn_half_hour_repeat_once",
        schedule="45 1 * * *",
        zone="Australia/Lord_Howe",
        repeated=ONCE,
        after="2027-04-02T00:00:00Z",
        expected=("2027-04-02T14:45:00Z", "2027-04-03T14:45:00Z", "2027-04-04T15:15:00Z"),
    ),
    # Europe/London 2027: spring 2027-03-28 01:00Z (01:00 GMT -> 02:00 BST), autumn 2027-10-31 01:00Z.
    case(
        "london_spring_half_hourly_wildcard_skips_the_missing_hour",
        schedule="*/30 * * * *",
        zone="Europe/London",
        after="2027-03-28T00:00:00Z",
        expected=("2027-03-28T00:30:00Z", "2027-03-28T01:00:00Z", "2027-03-28T01:30:00Z"),
    ),
    case(
        "london_autumn_fixed_time_runs_once",
        schedule="30 1 * * *",
        zone="Europe/London",
        after="2027-10-30T00:00:00Z",
        expected=("2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"),
    ),
    case(
        "london_autumn_fixed_time_twice_with_explicit_policies",
        schedule="30 1 * * *",
        zone="Europe/London",
        skipped=SKIP,
        repeated=TWICE,
        after="2027-10-30T12:00:00Z",
        expected=("2027-10-31T00:30:00Z", "2027-10-31T01:30:00Z", "2027-11-01T01:30:00Z"),
    ),
    # Australia/Sydney (southern hemisphere): spring 2027-10-03 02:00 AEST -> 03:00 AEDT (16:00Z the day
    # before); autumn 2027-04-04 03:00 AEDT -> 02:00 AEST (2027-04-03T16:00Z).
    case(
        "sydney_spring_in_october_fixed_time_runs_after_change",
        schedule="30 2 * * *",
        zone="Australia/Sydney",
        after="2027-10-01T00:00:00Z",
        expected=("2027-10-01T16:30:00Z", "2027-10-02T16:00:00Z", "2027-10-03T15:30:00Z"),
    ),
    case(
        "sydney_autumn_in_april_hourly_wildcard_runs_twice",
        schedule="0 * * * *",
        zone="Australia/Sydney",
        after="2027-04-03T14:30:00Z",
        expected=("2027-04-03T15:00:00Z", "2027-04-03T16:00:00Z", "2027-04-03T17:00:00Z"),
    ),
    case(
        "sydney_autumn_in_april_fixed_time_runs_once",
        schedule="30 2 * * *",
        zone="Australia/Sydney",
        after="2027-04-02T00:00:00Z",
        expected=("2027-04-02T15:30:00Z", "2027-04-03T15:30:00Z", "2027-04-04T16:30:00Z"),
    ),
]


@pytest.mark.parametrize("c", CASES)
def test_nominal_times_across_daylight_saving_changes(c: Case) -> None:
    timetable = build_timetable(c.schedule, time_zone=c.zone, skipped=c.skipped, repeated=c.repeated)
    times = timetable.iter_after(parse_rfc3339(c.after, field="after"))
    got = tuple(format_rfc3339(next(times)) for _ in c.expected)
    assert got == c.expected


@pytest.mark.parametrize(
    ("schedule", "skipped", "repeated"),
    [
        pytest.param("30 * * * *", SKIP, TWICE, id="wildcard_minute_is_skip_and_twice"),
        pytest.param("0 */2 * * *", SKIP, TWICE, id="wildcard_hour_is_skip_and_twice"),
        pytest.param("@hourly", SKIP, TWICE, id="hourly_macro_is_wildcard"),
        pytest.param("30 2 * * *", RUN_AFTER_CHANGE, ONCE, id="fixed_time_is_run_after_change_and_once"),
        pytest.param("@daily", RUN_AFTER_CHANGE, ONCE, id="daily_macro_is_not_wildcard"),
        pytest.param("H H * * *", RUN_AFTER_CHANGE, ONCE, id="hashed_fields_are_not_wildcard"),
    ],
)
def test_auto_policies_resolve_by_wildcardness(schedule: str, skipped: SkippedTime, repeated: RepeatedTime) -> None:
    timetable = build_timetable(schedule)
    assert (timetable.skipped_policy, timetable.repeated_policy) == (skipped, repeated)


def test_explicit_policies_are_kept_over_auto() -> None:
    timetable = build_timetable("30 * * * *", skipped=RUN_AFTER_CHANGE, repeated=ONCE)
    assert (timetable.skipped_policy, timetable.repeated_policy) == (RUN_AFTER_CHANGE, ONCE)
