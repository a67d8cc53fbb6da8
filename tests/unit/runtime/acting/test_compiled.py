"""The runtime's cache of parsed specs and compiled schedules/exclusions (DESIGN §11.1): a pass of an
unchanged object parses and compiles nothing; a new generation or a changed calendar rebuilds; the cache is
bounded and forgets deleted objects; a plan made with the cached value is the plan made without it."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from sundial import model
from sundial.model.calendars import MAX_DATES, MAX_DATES_IN_ALL, ScheduleCalendar
from sundial.planner.planning import plan
from sundial.planner.plans import Context
from sundial.runtime.acting.compiled import CompiledSpecs
from sundial.runtime.watch.calendars import Calendars

NOW = datetime(2026, 5, 11, 10, 0, 30, tzinfo=UTC)
KEY = ("team-a", "nightly")


def dates(n: int, start: date) -> list[str]:
    return [(start + timedelta(days=i)).isoformat() for i in range(n)]


def body(*, generation: int = 1, uid: str = "uid-1", name: str = "nightly", **spec: Any) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "generation": generation,
            "resourceVersion": "7",
            "creationTimestamp": "2026-05-11T08:30:00Z",
        },
        "spec": {"schedule": "* * * * *", "jobTemplate": template, **spec},
        "status": {"scheduleCursor": "2026-05-11T09:59:00Z"},
    }


def maximal_exclude() -> list[dict[str, Any]]:
    """Dates entries of MAX_DATES each, MAX_DATES_IN_ALL in all."""
    days = dates(MAX_DATES_IN_ALL, date(2027, 1, 1))
    return [{"dates": days[i : i + MAX_DATES]} for i in range(0, len(days), MAX_DATES)]


def calendar(name: str, version: str, day: date) -> dict[str, Any]:
    meta = {"name": name, "namespace": "team-a", "resourceVersion": version}
    return {"metadata": meta, "spec": {"exclude": [{"dates": [day.isoformat()]}]}}


def context(specs: CompiledSpecs, cals: Calendars, obj: model.ScheduledJob) -> Context:
    refs = obj.spec.calendar_refs if obj.spec is not None else ()
    found = cals.for_object("team-a", refs)
    versions = cals.versions("team-a", refs)
    compiled = specs.compiled(KEY, obj, found, versions, now=NOW)
    return Context(now=NOW, fencing_token="0-1", calendars=found, compiled=compiled)


def test_an_unchanged_object_is_parsed_and_compiled_once() -> None:
    specs, cals = CompiledSpecs(), Calendars()
    raw = body(exclude=maximal_exclude())
    first = specs.read(KEY, raw)
    assert first.spec is not None
    again = specs.read(KEY, copy.deepcopy(raw))  # as after a status write: an equal, new body
    assert again.spec is first.spec
    assert context(specs, cals, first).compiled is context(specs, cals, again).compiled
    assert (specs.parses, specs.compiles) == (1, 1)


def test_a_new_generation_or_a_changed_calendar_rebuilds() -> None:
    specs, cals = CompiledSpecs(), Calendars()
    cals.put(calendar("holidays", "10", date(2026, 5, 11)))
    obj = specs.read(KEY, body(calendarRefs=["holidays"]))
    assert context(specs, cals, obj).compiled.exclusion.excludes(NOW)  # type: ignore[union-attr]

    cals.put(calendar("holidays", "11", date(2026, 5, 12)))
    recompiled = context(specs, cals, specs.read(KEY, body(calendarRefs=["holidays"]))).compiled
    assert recompiled is not None and not recompiled.exclusion.excludes(NOW)
    assert (specs.parses, specs.compiles) == (1, 2)

    newer = specs.read(KEY, body(generation=2, calendarRefs=["holidays"], suspend=True))
    assert newer.spec is not None and newer.spec.suspend
    assert specs.parses == 2


def test_a_missing_calendar_then_created_is_seen() -> None:
    specs, cals = CompiledSpecs(), Calendars()
    obj = specs.read(KEY, body(calendarRefs=["holidays"]))
    missing = context(specs, cals, obj).compiled
    assert missing is not None and missing.calendar_problem is not None
    cals.put(calendar("holidays", "3", date(2026, 5, 11)))
    found = context(specs, cals, specs.read(KEY, body(calendarRefs=["holidays"]))).compiled
    assert found is not None and found.calendar_problem is None and found.exclusion.excludes(NOW)


def test_an_invalid_spec_is_cached_as_invalid() -> None:
    specs = CompiledSpecs()
    raw = body(schedule="61 * * * *")
    assert specs.read(KEY, raw).spec_error is not None
    assert specs.read(KEY, raw).spec_error is not None
    assert specs.parses == 1


def test_without_a_generation_nothing_is_cached() -> None:
    specs = CompiledSpecs()
    raw = body(generation=0)
    specs.read(KEY, raw)
    specs.read(KEY, raw)
    assert specs.parses == 2 and len(specs) == 0


def test_bounded_and_forgets_deleted_objects() -> None:
    specs = CompiledSpecs(capacity=2)
    for i in range(3):
        specs.read(("team-a", f"o{i}"), body(uid=f"u{i}", name=f"o{i}"))
    assert len(specs) == 2
    specs.read(("team-a", "o0"), body(uid="u0", name="o0"))  # the oldest was dropped: parsed again
    assert specs.parses == 4
    specs.forget(("team-a", "o0"))
    assert len(specs) == 1


@pytest.mark.parametrize("day", [date(2026, 5, 11), date(2026, 5, 12)])
def test_the_plan_with_the_cached_value_is_the_plan_without(day: date) -> None:
    specs, cals = CompiledSpecs(), Calendars()
    cals.put(calendar("holidays", "1", day))
    raw = body(calendarRefs=["holidays"], exclude=[{"schedule": "30 9 * * *"}])
    cached = specs.read(KEY, raw)
    plain = model.ScheduledJob.from_dict(raw)
    found = {"holidays": ScheduleCalendar.from_dict(calendar("holidays", "1", day)).spec}
    with_cache = plan(cached, [], context(specs, cals, cached))
    without = plan(plain, [], Context(now=NOW, fencing_token="0-1", calendars=found))
    assert with_cache == without


def test_more_dates_in_all_are_refused_naming_the_field() -> None:
    over = [*maximal_exclude(), {"dates": ["2030-01-01"]}]
    error = CompiledSpecs().read(KEY, body(exclude=over)).spec_error
    assert error is not None and f"spec.exclude: at most {MAX_DATES_IN_ALL} dates in all" in str(error)
    calendar_error = ScheduleCalendar.from_dict({"metadata": {}, "spec": {"exclude": over}}).error
    assert calendar_error is not None and f"spec.exclude: at most {MAX_DATES_IN_ALL} dates" in str(calendar_error)
