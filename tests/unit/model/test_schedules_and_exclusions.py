"""``spec.schedules``, ``spec.exclude``, ``spec.calendarRefs`` and ScheduleCalendar: valid forms and errors that
name the field, down to the list index (DESIGN §3.1, §3.2)."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.model import SpecError, parse_spec
from sundial.model.calendars import ScheduleCalendar
from sundial.schedule import Union, parse_rfc3339

TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}}


def spec(**fields: Any) -> dict[str, Any]:
    return {"jobTemplate": TEMPLATE, **fields}


def problems(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_spec(raw)
    return [str(p) for p in caught.value.problems]


def test_a_schedules_list_is_a_cron_object_whose_times_are_the_union() -> None:
    parsed = parse_spec(spec(schedules=["0 9 * * MON-FRI", "0 12 L * *"], timeZone="Europe/Berlin"))
    assert not parsed.is_one_off
    when = parsed.when(uid="u", created=parse_rfc3339("2026-05-29T00:00:00Z", field="t"))
    assert isinstance(when.timetable, Union)  # type: ignore[attr-defined]
    assert [
        t.isoformat() for t in when.between(None, parse_rfc3339("2026-06-01T08:00:00Z", field="t"), limit=9)[0]
    ] == [
        "2026-05-29T07:00:00+00:00",  # Friday 09:00 CEST
        "2026-05-31T10:00:00+00:00",  # the last day (a Sunday), 12:00 CEST
        "2026-06-01T07:00:00+00:00",  # Monday
    ]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param(
            {"schedules": ["0 3 * * *", "* * *", "0 0 30 2 *"]},
            "spec.schedules[1]: expected 5 fields",
            id="the_first_bad_entry_by_index",
        ),
        pytest.param({"schedules": ["0 3 * * *", "0 0 L-40 * *"]}, "spec.schedules[1]: field 3", id="day_token"),
        pytest.param({"schedules": []}, "spec.schedules: Tuple should have at least 1 item", id="empty_list"),
        pytest.param({"schedules": [""]}, "spec.schedules[0]: String should have at least 1 character", id="empty"),
        pytest.param(
            {"schedule": "0 3 * * *", "schedules": ["0 4 * * *"]},
            "spec.schedules: schedule and schedules are mutually exclusive",
            id="with_schedule",
        ),
        pytest.param(
            {"schedules": ["0 4 * * *"], "runAt": "2026-12-24T18:00:00+01:00"},
            "spec.runAt: schedules and runAt are mutually exclusive",
            id="with_run_at",
        ),
        pytest.param(
            {"schedules": ["0 4 * * *"], "ttlSecondsAfterFinished": 60},
            "spec.ttlSecondsAfterFinished: applies only to one-off objects",
            id="ttl",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{"dates": ["2026-12-24"]}, {"dates": ["2026-13-01"]}]},
            "spec.exclude[1].dates[0]: '2026-13-01' is not a date",
            id="exclude_bad_date",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{"from": "2026-12-24"}]},
            "spec.exclude[0].to: a range needs both from and to",
            id="exclude_from_without_to",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{"from": "2026-12-24", "to": "2026-12-23"}]},
            "spec.exclude[0].to: '2026-12-23' is before from '2026-12-24'",
            id="exclude_backwards_range",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{"schedule": "0 0 * * FRI#6"}]},
            "spec.exclude[0].schedule: field 5 (day-of-week)",
            id="exclude_bad_cron",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{}]},
            "spec.exclude[0]: set exactly one of dates, from/to or schedule",
            id="exclude_empty_entry",
        ),
        pytest.param(
            {"schedule": "0 3 * * *", "exclude": [{"dates": ["2026-12-24"], "schedule": "* * 25 12 *"}]},
            "spec.exclude[0]: set exactly one of dates, from/to or schedule",
            id="exclude_two_kinds",
        ),
        pytest.param({"exclude": [{"dates": ["2026-12-24"]}]}, "spec.exclude: applies only to cron", id="one_off"),
        pytest.param({"calendarRefs": ["holidays"]}, "spec.calendarRefs: applies only to cron", id="one_off_refs"),
        pytest.param({"schedule": "0 3 * * *", "calendarRefs": [""]}, "spec.calendarRefs[0]: String", id="empty_ref"),
    ],
)
def test_bad_input_names_the_field_and_list_index(fields: dict[str, Any], expected: str) -> None:
    found = problems(spec(**fields))
    assert any(problem.startswith(expected) for problem in found), found


def test_exclude_entries_of_every_kind_are_accepted() -> None:
    parsed = parse_spec(
        spec(
            schedule="0 3 * * *",
            timeZone="Europe/Berlin",
            exclude=[
                {"dates": ["2026-12-24", "2026-12-25"]},
                {"from": "2026-12-28", "to": "2026-12-31T12:00:00+01:00"},
                {"schedule": "* * * * SAT,SUN"},
            ],
            calendarRefs=["team-holidays"],
        )
    )
    exclusion = parsed.exclusion(uid="u")
    assert exclusion.excludes(parse_rfc3339("2026-12-24T02:00:00Z", field="t"))
    assert exclusion.excludes(parse_rfc3339("2026-12-31T11:00:00Z", field="t"))
    assert not exclusion.excludes(parse_rfc3339("2026-12-31T11:00:01Z", field="t"))
    assert exclusion.excludes(parse_rfc3339("2027-01-02T02:00:00Z", field="t"))  # a Saturday
    assert not exclusion.excludes(parse_rfc3339("2027-01-04T02:00:00Z", field="t"))


def test_a_schedule_calendar_is_read_with_problems_naming_the_field() -> None:
    good = ScheduleCalendar.from_dict(
        {
            "metadata": {"name": "h", "namespace": "ns"},
            "spec": {"timeZone": "Asia/Tokyo", "exclude": [{"dates": ["2027-01-01"]}]},
        }
    )
    assert good.spec is not None and good.spec.time_zone == "Asia/Tokyo"
    bad = ScheduleCalendar.from_dict({"metadata": {"name": "h"}, "spec": {"timeZone": "Mars/Olympus", "exclude": [{}]}})
    assert bad.spec is None and bad.error is not None
    assert [p.path for p in bad.error.problems] == ["spec.timeZone", "spec.exclude[0]"]
    assert ScheduleCalendar.from_dict({"spec": "nope"}).error is not None
