"""Parsing cron expressions: fields, names, steps, macros, Jenkins H, Vixie day rule, errors."""

from __future__ import annotations

import itertools
from datetime import date

import pytest

from sundial.schedule import CronExpression, ScheduleError, parse_cron
from sundial.schedule.cron import MACROS


def test_five_fields_run_at_second_zero() -> None:
    cron = parse_cron("30 2 * * *")
    assert (cron.seconds, cron.minutes, cron.hours) == ((0,), (30,), (2,))
    assert cron.months == frozenset(range(1, 13))
    assert cron.weekdays == frozenset(range(7))
    assert not cron.has_seconds
    assert cron.text == "30 2 * * *"


def test_six_fields_start_with_seconds() -> None:
    cron = parse_cron("*/10 0 12 * * *")
    assert cron.seconds == (0, 10, 20, 30, 40, 50)
    assert (cron.minutes, cron.hours) == ((0,), (12,))
    assert cron.has_seconds


@pytest.mark.parametrize(
    ("text", "attribute", "expected"),
    [
        pytest.param("1,5,9 * * * *", "minutes", (1, 5, 9), id="list"),
        pytest.param("10-13 * * * *", "minutes", (10, 11, 12, 13), id="range"),
        pytest.param("10-20/5 * * * *", "minutes", (10, 15, 20), id="range_with_step"),
        pytest.param("*/20 * * * *", "minutes", (0, 20, 40), id="star_with_step"),
        pytest.param("45/5 * * * *", "minutes", (45, 50, 55), id="value_with_step_runs_to_the_end"),
        pytest.param("5,1-3,2 * * * *", "minutes", (1, 2, 3, 5), id="overlapping_items_merge"),
        pytest.param("? * * * *", "minutes", tuple(range(60)), id="question_mark_is_star"),
        pytest.param("0 0 * JAN,mar-May *", "months", frozenset({1, 3, 4, 5}), id="month_names_any_case"),
        pytest.param("0 0 * * MON-FRI", "weekdays", frozenset({1, 2, 3, 4, 5}), id="weekday_name_range"),
        pytest.param("0 0 * * 7", "weekdays", frozenset({0}), id="seven_is_sunday"),
        pytest.param("0 0 * * 5-7", "weekdays", frozenset({5, 6, 0}), id="range_ending_at_seven"),
        pytest.param("0 0 * * sun,SAT", "weekdays", frozenset({0, 6}), id="weekday_names_any_case"),
        pytest.param("0 0 * * */2", "weekdays", frozenset({0, 2, 4, 6}), id="weekday_step_does_not_double_sunday"),
        pytest.param("0 0 */10 * *", "days", frozenset({1, 11, 21, 31}), id="day_of_month_step"),
    ],
)
def test_field_syntax(text: str, attribute: str, expected: object) -> None:
    assert getattr(parse_cron(text), attribute) == expected


@pytest.mark.parametrize(
    ("macro", "equivalent"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("@DAILY", "0 0 * * *"),
    ],
)
def test_macros_expand_to_their_five_field_form(macro: str, equivalent: str) -> None:
    parsed, expanded = parse_cron(macro), parse_cron(equivalent)
    assert (parsed.seconds, parsed.minutes, parsed.hours) == (
        expanded.seconds,
        expanded.minutes,
        expanded.hours,
    )
    assert (parsed.days, parsed.months, parsed.weekdays) == (
        expanded.days,
        expanded.months,
        expanded.weekdays,
    )
    assert parsed.wildcard == expanded.wildcard
    assert parsed.text == macro


def test_every_macro_is_listed() -> None:
    assert set(MACROS) == {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}


@pytest.mark.parametrize(
    ("text", "wildcard"),
    [
        ("* * * * *", True),
        ("*/5 3 * * *", True),
        ("0 * * * *", True),
        ("0 */2 * * *", True),
        ("@hourly", True),
        ("*/10 * * * * *", True),
        ("* 0 0 * * *", False),  # a seconds field does not count: minute and hour are fixed
        ("30 2 * * *", False),
        ("@daily", False),
        ("0-59 0-23 * * *", False),  # the text decides, not the set
        ("H/15 * * * *", True),
        ("H H/2 * * *", False),
    ],
)
def test_wildcard_is_decided_by_the_minute_and_hour_text(text: str, wildcard: bool) -> None:
    assert parse_cron(text).wildcard is wildcard


# 2027-03-01 is a Monday; 2027-03-07 a Sunday; 2027-03-13 a Saturday.
@pytest.mark.parametrize(
    ("text", "day", "matches"),
    [
        pytest.param("0 0 13 * 5", date(2027, 3, 13), True, id="both_restricted_day_of_month_alone_matches"),
        pytest.param("0 0 13 * 5", date(2027, 3, 5), True, id="both_restricted_weekday_alone_matches"),
        pytest.param("0 0 13 * 5", date(2027, 3, 6), False, id="both_restricted_neither_matches"),
        pytest.param("0 0 */2 * 1", date(2027, 3, 3), False, id="star_step_day_of_month_is_unrestricted_so_and"),
        pytest.param("0 0 */2 * 1", date(2027, 3, 1), True, id="star_step_day_of_month_and_weekday_both_match"),
        pytest.param("0 0 */2 * 1", date(2027, 3, 8), False, id="star_step_day_of_month_even_day_fails_and"),
        pytest.param("0 0 1 * *", date(2027, 3, 1), True, id="only_day_of_month_restricted"),
        pytest.param("0 0 1 * *", date(2027, 3, 2), False, id="only_day_of_month_restricted_other_day"),
        pytest.param("0 0 * * SUN", date(2027, 3, 7), True, id="only_weekday_restricted"),
        pytest.param("0 0 * * 7", date(2027, 3, 8), False, id="only_weekday_restricted_other_day"),
        pytest.param("0 0 1 * 1-5", date(2027, 4, 1), True, id="first_of_month_or_weekday"),
        pytest.param("0 0 ? * 1", date(2027, 3, 1), True, id="question_mark_day_of_month_is_unrestricted"),
        pytest.param("0 0 ? * 1", date(2027, 3, 2), False, id="question_mark_day_of_month_weekday_required"),
        pytest.param("0 0 13 FEB 5", date(2027, 3, 13), False, id="month_must_match_in_any_case"),
    ],
)
def test_vixie_day_of_month_and_day_of_week_rule(text: str, day: date, matches: bool) -> None:
    assert parse_cron(text).matches_day(day) is matches


class TestJenkinsH:
    def test_the_same_uid_gives_the_same_values(self) -> None:
        assert parse_cron("H H * * *", uid="abc") == parse_cron("H H * * *", uid="abc")

    def test_an_empty_uid_is_still_deterministic(self) -> None:
        assert parse_cron("H H * * *").minutes == parse_cron("H H * * *", uid="").minutes

    def test_different_uids_spread_over_the_range(self) -> None:
        minutes = {parse_cron("H * * * *", uid=f"uid-{n}").minutes for n in range(200)}
        assert len(minutes) > 30

    def test_fields_get_independent_values(self) -> None:
        pairs = {(c.minutes, c.hours) for c in (parse_cron("H H * * *", uid=f"u{n}") for n in range(50))}
        assert len(pairs) > 40

    def test_adding_a_seconds_field_keeps_the_minute(self) -> None:
        assert parse_cron("H H * * *", uid="x").minutes == parse_cron("0 H H * * *", uid="x").minutes

    @pytest.mark.parametrize(
        ("text", "attribute", "low", "high"),
        [
            ("H * * * *", "minutes", 0, 59),
            ("0 H * * *", "hours", 0, 23),
            ("0 0 H * *", "days", 1, 28),
            ("0 0 1 H *", "months", 1, 12),
            ("0 0 * * H", "weekdays", 0, 6),
            ("H * * * * *", "seconds", 0, 59),
            ("H(10-20) * * * *", "minutes", 10, 20),
            ("0 0 * * H(mon-fri)", "weekdays", 1, 5),
        ],
    )
    def test_values_stay_in_range(self, text: str, attribute: str, low: int, high: int) -> None:
        for n in range(100):
            values = getattr(parse_cron(text, uid=f"uid-{n}"), attribute)
            assert len(values) == 1
            assert low <= min(values) <= max(values) <= high

    def test_h_with_step_keeps_the_step_from_a_hashed_start(self) -> None:
        for n in range(50):
            minutes = parse_cron("H/15 * * * *", uid=f"uid-{n}").minutes
            assert len(minutes) == 4
            assert minutes[0] < 15
            assert [b - a for a, b in itertools.pairwise(minutes)] == [15, 15, 15]

    def test_h_range_with_step_stays_in_the_range(self) -> None:
        for n in range(50):
            minutes = parse_cron("H(30-59)/10 * * * *", uid=f"uid-{n}").minutes
            assert 30 <= minutes[0] < 40
            assert max(minutes) <= 59
            assert len(minutes) == 3

    def test_lowercase_h_is_accepted(self) -> None:
        assert parse_cron("h * * * *", uid="a") == parse_cron("h * * * *", uid="a")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("* * * *", "got 4", id="too_few_fields"),
        pytest.param("* * * * * * *", "got 7", id="too_many_fields"),
        pytest.param("@reboot", "unsupported macro '@reboot'", id="unknown_macro"),
        pytest.param("60 * * * *", "field 1 (minute) '60': value 60 out of range 0-59", id="minute_out_of_range"),
        pytest.param("0 24 * * *", "field 2 (hour) '24'", id="hour_out_of_range"),
        pytest.param("0 0 0 * *", "field 3 (day-of-month) '0'", id="day_zero"),
        pytest.param("0 0 * 13 *", "field 4 (month) '13'", id="month_out_of_range"),
        pytest.param("0 0 * * 8", "field 5 (day-of-week) '8'", id="weekday_out_of_range"),
        pytest.param("61 * * * * *", "field 1 (second) '61'", id="second_out_of_range"),
        pytest.param("0 60 * * * *", "field 2 (minute)", id="positions_count_the_seconds_field"),
        pytest.param("0 0 L-40 * *", "L-n needs n in 0-30", id="last_day_offset_too_large"),
        pytest.param("0 0 32W * *", "nW needs a day 1-31", id="nearest_weekday_of_day_32"),
        pytest.param("0 0 * * 1#6", "d#n needs n in 1-5", id="sixth_weekday"),
        pytest.param("0 L * * *", "L, W and # are only day-of-month", id="L_in_the_hour_field"),
        pytest.param("TZ=UTC 0 0 * * *", "use spec.timeZone", id="tz_prefix"),
        pytest.param("*/0 * * * *", "step 0 out of range 1-60", id="step_zero"),
        pytest.param("*/61 * * * *", "step 61 out of range", id="step_too_large"),
        pytest.param("*/x * * * *", "step 'x' is not a positive number", id="step_not_a_number"),
        pytest.param("5-1 * * * *", "starts after it ends", id="backwards_range"),
        pytest.param("1,,2 * * * *", "empty list item", id="empty_list_item"),
        pytest.param("0 0 * * FUNDAY", "'FUNDAY' is not a number 0-7 or a name SUN-SAT", id="bad_name"),
        pytest.param("0 0 * JANUARY *", "name JAN-DEC", id="bad_month_name"),
        pytest.param("abc * * * *", "'abc' is not a number 0-59", id="garbage"),
        pytest.param("H(5) * * * *", "is not H, H(a-b), H/n or H(a-b)/n", id="bad_h_form"),
        pytest.param("H(20-10) * * * *", "starts after it ends", id="backwards_h_range"),
        pytest.param("H(0-70) * * * *", "value 70 out of range", id="h_range_out_of_range"),
        pytest.param("H(0-9)/20 * * * *", "step 20 is larger than the range 0-9", id="h_step_larger_than_range"),
        pytest.param("0 0 30 2 *", "never matches", id="february_thirtieth"),
        pytest.param("0 0 31 4,6,9,11 *", "never matches", id="thirty_first_of_short_months"),
    ],
)
def test_invalid_expressions_name_the_field_and_position(text: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_cron(text)
    assert caught.value.field == "schedule"
    assert fragment in caught.value.message
    assert str(caught.value) == f"schedule: {caught.value.message}"


def test_the_error_field_can_be_renamed() -> None:
    with pytest.raises(ScheduleError, match=r"^spec\.schedule: ") as caught:
        parse_cron("bad", field="spec.schedule")
    assert caught.value.field == "spec.schedule"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0 0 29 2 *", id="leap_day_matches_in_leap_years"),
        pytest.param("0 0 30 2 1", id="impossible_day_or_a_weekday"),
        pytest.param("0 0 31 * *", id="thirty_first_in_long_months"),
    ],
)
def test_rare_but_possible_schedules_are_accepted(text: str) -> None:
    assert isinstance(parse_cron(text), CronExpression)
