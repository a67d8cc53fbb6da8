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
from sundial.runtime.acting.compiled import CompiledSpecs, RecompileBudget
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


def test_a_calendar_label_edit_recompiles_nothing_its_spec_edit_does() -> None:
    """Cache keys follow meaning (DESIGN §12.2): a new resourceVersion with the same spec is the same calendar."""
    specs, cals = CompiledSpecs(), Calendars()
    cals.put(calendar("holidays", "10", date(2026, 5, 11)))
    keys = [("team-a", f"o{i}") for i in range(400)]
    objs = {key: specs.read(key, body(uid=f"u{key[1]}", name=key[1], calendarRefs=["holidays"])) for key in keys}

    def plan_all() -> None:
        for key, obj in objs.items():
            specs.compiled(
                key, obj, cals.for_object("team-a", ["holidays"]), cals.versions("team-a", ["holidays"]), now=NOW
            )

    plan_all()
    assert specs.compiles == 400
    labelled = calendar("holidays", "11", date(2026, 5, 11))
    labelled["metadata"]["labels"] = {"team": "a"}
    labelled["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    cals.put(labelled)
    plan_all()
    assert specs.compiles == 400  # metadata only: nothing recompiled
    cals.put(calendar("holidays", "12", date(2026, 5, 12)))
    plan_all()
    assert specs.compiles == 800


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now


def test_recompiles_after_a_calendar_edit_spend_a_budget_and_the_rest_wait() -> None:
    """400 referrers of a maximal calendar at 66 ms each: the burst's worth recompile at once, the others are
    told to come back; after the wait the budget has refilled for more. First compiles are never limited."""
    ticks = Ticks()
    budget = RecompileBudget(rate=0.25, burst=1.0, clock=ticks.clock)
    specs, cals = CompiledSpecs(budget=budget, timer=ticks.clock), Calendars()
    cals.put(calendar("holidays", "1", date(2026, 5, 11)))
    keys = [("team-a", f"o{i}") for i in range(400)]
    objs = {key: specs.read(key, body(uid=f"u{key[1]}", name=key[1], calendarRefs=["holidays"])) for key in keys}
    versions = lambda: cals.versions("team-a", ["holidays"])  # noqa: E731
    found = lambda: cals.for_object("team-a", ["holidays"])  # noqa: E731
    for key, obj in objs.items():
        assert specs.deferral(key, obj, versions()) == 0.0  # first compiles: never deferred
        specs.compiled(key, obj, found(), versions(), now=NOW)

    class Timed:
        def __init__(self) -> None:
            self.calls = 0

        def __call__(self) -> float:  # each compile "takes" 66 ms: start, then end
            self.calls += 1
            if self.calls % 2 == 0:
                ticks.now += 0.066
            return ticks.now

    specs._timer = Timed()
    cals.put(calendar("holidays", "2", date(2026, 5, 12)))
    recompiled, waits = 0, []
    for key, obj in objs.items():
        wait = specs.deferral(key, obj, versions())
        if wait > 0:
            waits.append(wait)
            continue
        specs.compiled(key, obj, found(), versions(), now=NOW)
        recompiled += 1
    # the loop spent at most the burst, what refilled meanwhile and the one compile that started last
    assert recompiled >= 15 and recompiled * 0.066 <= 1.0 + 0.25 * ticks.now + 0.066
    assert len(waits) == 400 - recompiled and specs.deferred == len(waits)
    ticks.now += waits[0]  # come back when told
    assert specs.deferral(keys[recompiled], objs[keys[recompiled]], versions()) == 0.0
