"""Durations, RFC 3339 timestamps and time zones."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from sundial.schedule import (
    ScheduleError,
    format_duration,
    format_rfc3339,
    load_zone,
    parse_duration,
    parse_rfc3339,
    require_utc,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("0s", timedelta(0)),
        ("30s", timedelta(seconds=30)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        (".5s", timedelta(milliseconds=500)),
        ("2h45m30.5s", timedelta(hours=2, minutes=45, seconds=30, milliseconds=500)),
        ("10us", timedelta(microseconds=10)),
        ("10\u00b5s", timedelta(microseconds=10)),
        ("3000ns", timedelta(microseconds=3)),
        ("+5m", timedelta(minutes=5)),
        ("48h", timedelta(days=2)),
        (" 1m ", timedelta(minutes=1)),
    ],
)
def test_parse_duration_accepts_go_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text, field="jitter") == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("-1s", "must not be negative"),
        ("", "is not a duration"),
        ("10", "is not a duration"),
        ("1d", "is not a duration"),
        ("1h 30m", "is not a duration"),
        ("abc", "is not a duration"),
        ("s", "is not a duration"),
        ("1ns", "finer than the supported resolution"),
        ("99999999999999h", "too large"),
    ],
)
def test_parse_duration_rejects_bad_input_naming_the_field(text: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_duration(text, field="catchUp.window")
    assert caught.value.field == "catchUp.window"
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(hours=1, minutes=30), "1h30m0s"),
        (timedelta(seconds=30), "30s"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(microseconds=7), "7us"),
        (timedelta(minutes=2, milliseconds=500), "2m0.5s"),
        (timedelta(days=2), "48h0m0s"),
        (timedelta(seconds=-90), "-1m30s"),
    ],
)
def test_format_duration_writes_go_style(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


def test_format_rfc3339_writes_utc_with_z() -> None:
    berlin = datetime(2027, 3, 28, 3, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    assert format_rfc3339(berlin) == "2027-03-28T01:00:00Z"


def test_format_rfc3339_keeps_microseconds_when_present() -> None:
    assert format_rfc3339(datetime(2027, 1, 1, 0, 0, 0, 120, tzinfo=UTC)) == "2027-01-01T00:00:00.000120Z"


def test_format_rfc3339_rejects_naive_datetimes() -> None:
    with pytest.raises(ScheduleError, match="naive"):
        format_rfc3339(datetime(2027, 1, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-24T18:00:00+01:00", datetime(2026, 12, 24, 17, 0, tzinfo=UTC)),
        ("2026-12-24T17:00:00Z", datetime(2026, 12, 24, 17, 0, tzinfo=UTC)),
        ("2026-12-24t17:00:00z", datetime(2026, 12, 24, 17, 0, tzinfo=UTC)),
        ("2026-12-24 17:00:00-05:30", datetime(2026, 12, 24, 22, 30, tzinfo=UTC)),
        ("2026-12-24T17:00:00.5Z", datetime(2026, 12, 24, 17, 0, 0, 500000, tzinfo=UTC)),
        ("2026-12-24T17:00:00.123456789Z", datetime(2026, 12, 24, 17, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_parse_rfc3339_returns_utc(text: str, expected: datetime) -> None:
    parsed = parse_rfc3339(text, field="runAt")
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-24T18:00:00",
        "2026-12-24",
        "tomorrow",
        "2026-13-01T00:00:00Z",
        "2026-12-24T18:00:00+25:00",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC: a ScheduleError, never an OverflowError
        "9999-12-31T23:59:59-01:00",  # after year 9999 in UTC
    ],
)
def test_parse_rfc3339_requires_a_valid_timestamp_with_offset(text: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_rfc3339(text, field="runAt")
    assert caught.value.field == "runAt"


def test_rfc3339_round_trips() -> None:
    value = datetime(2027, 10, 31, 1, 30, 15, 250, tzinfo=UTC)
    assert parse_rfc3339(format_rfc3339(value), field="x") == value


@pytest.mark.parametrize("name", ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
def test_load_zone_accepts_iana_names(name: str) -> None:
    assert load_zone(name).key == name


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("Local", "'Local' is not allowed"),
        ("", "is not an IANA time zone name"),
        (" UTC", "is not an IANA time zone name"),
        ("Mars/Olympus", "unknown time zone"),
        ("../etc/passwd", "unknown time zone"),
        ("Europe", "unknown time zone"),
    ],
)
def test_load_zone_rejects_local_and_unknown_names(name: str, fragment: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        load_zone(name)
    assert caught.value.field == "timeZone"
    assert fragment in caught.value.message


def test_require_utc_converts_and_rejects_naive() -> None:
    assert require_utc(datetime(2027, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))), field="x") == datetime(
        2027, 1, 1, tzinfo=UTC
    )
    with pytest.raises(ScheduleError, match=r"^startTime: naive"):
        require_utc(datetime(2027, 1, 1), field="startTime")


def test_schedule_errors_pickle_with_their_field() -> None:
    error = pickle.loads(pickle.dumps(ScheduleError("jitter", "bad")))
    assert (error.field, error.message, str(error)) == ("jitter", "bad", "jitter: bad")
