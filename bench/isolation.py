"""Planning-pass CPU cost of a plain vs a maximal spec, with and without 16 maximal calendars (DESIGN §11.1).

``python -m bench.isolation [--passes N] [--out docs/benchmarks/latest.json]``

A unit-level benchmark (no cluster): the real model and planner, one steady pass of a per-second object
(its cursor one second behind), measured in CPU time (``time.process_time``) per pass:

* ``uncached_pass_ms``: the spec parsed and its schedule/exclusions compiled in every pass (before the cache);
* ``pass_ms``: through the runtime's :class:`sundial.runtime.acting.compiled.CompiledSpecs`, as the operator
  plans (parsed and compiled once per generation and calendar spec digests).

"maximal" is the largest spec the CRD admits: 100 exclude entries, 1,000 dates in all and the other 98
entries cron masks; "calendars" adds 16 maximal ScheduleCalendars in ``calendarRefs``. The result is merged
into the JSON file under ``isolation`` with the load average it was measured at.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sundial import model
from sundial.model.calendars import MAX_CALENDAR_REFS, MAX_DATES, MAX_DATES_IN_ALL, MAX_EXCLUDE_ENTRIES
from sundial.planner.planning import plan
from sundial.planner.plans import Context
from sundial.runtime.acting.compiled import CompiledSpecs
from sundial.runtime.watch.calendars import Calendars

NOW = datetime(2026, 5, 11, 10, 0, 30, tzinfo=UTC)
NAMESPACE = "tenant"
KEY = (NAMESPACE, "per-second")


def maximal_exclude(offset: int) -> list[dict[str, Any]]:
    """100 entries: 1,000 dates (in entries of 400) and cron masks for the rest (none matches NOW)."""
    start = date(2030 + offset, 1, 1)
    days = [(start + timedelta(days=i)).isoformat() for i in range(MAX_DATES_IN_ALL)]
    entries: list[dict[str, Any]] = [{"dates": days[i : i + MAX_DATES]} for i in range(0, len(days), MAX_DATES)]
    crons = [{"schedule": f"{m % 60} {m % 24} {1 + m % 28} {1 + m % 12} *"} for m in range(MAX_EXCLUDE_ENTRIES)]
    return entries + crons[: MAX_EXCLUDE_ENTRIES - len(entries)]


def scheduled_job(*, exclude: list[dict[str, Any]], refs: list[str]) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    spec: dict[str, Any] = {"schedule": "* * * * * *", "timeZone": "Europe/Berlin", "jobTemplate": template}
    if exclude:
        spec["exclude"] = exclude
    if refs:
        spec["calendarRefs"] = refs
    meta = {
        "name": KEY[1],
        "namespace": NAMESPACE,
        "uid": "7d1f0c5e-bench",
        "generation": 1,
        "resourceVersion": "42",
        "creationTimestamp": "2026-05-11T08:00:00Z",
    }
    cursor = (NOW - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": meta, "spec": spec, "status": {"scheduleCursor": cursor}}


def calendars(count: int) -> Calendars:
    found = Calendars()
    for i in range(count):
        meta = {"name": f"holidays-{i}", "namespace": NAMESPACE, "resourceVersion": str(100 + i)}
        found.put({"metadata": meta, "spec": {"exclude": maximal_exclude(i)}})
    return found


def uncached_pass(body: dict[str, Any], cals: Calendars) -> None:
    obj = model.ScheduledJob.from_dict(body)
    refs = obj.spec.calendar_refs if obj.spec is not None else ()
    plan(obj, [], Context(now=NOW, fencing_token="0-1", calendars=cals.for_object(NAMESPACE, refs)))


def cached_pass(specs: CompiledSpecs) -> Callable[[dict[str, Any], Calendars], None]:
    def one(body: dict[str, Any], cals: Calendars) -> None:
        obj = specs.read(KEY, body)
        refs = obj.spec.calendar_refs if obj.spec is not None else ()
        found = cals.for_object(NAMESPACE, refs)
        compiled = specs.compiled(KEY, obj, found, cals.versions(NAMESPACE, refs), now=NOW)
        plan(obj, [], Context(now=NOW, fencing_token="0-1", calendars=found, compiled=compiled))

    return one


def per_pass_ms(
    one: Callable[[dict[str, Any], Calendars], None], body: dict[str, Any], cals: Calendars, passes: int
) -> float:
    one(body, cals)  # warm: imports, zone files, the cache's first fill
    started = time.process_time()
    for _ in range(passes):
        one(body, cals)
    return round((time.process_time() - started) / passes * 1000, 3)


def measure(passes: int) -> dict[str, Any]:
    cases = {
        "plain": (scheduled_job(exclude=[], refs=[]), Calendars()),
        "maximal": (scheduled_job(exclude=maximal_exclude(0), refs=[]), Calendars()),
        "calendars": (
            scheduled_job(exclude=maximal_exclude(0), refs=[f"holidays-{i}" for i in range(MAX_CALENDAR_REFS)]),
            calendars(MAX_CALENDAR_REFS),
        ),
    }
    for body, _ in cases.values():
        assert model.ScheduledJob.from_dict(body).spec is not None, "a benchmark spec must be valid"
    result: dict[str, Any] = {"uncached_pass_ms": {}, "pass_ms": {}}
    for name, (body, cals) in cases.items():
        result["uncached_pass_ms"][name] = per_pass_ms(uncached_pass, body, cals, max(3, passes // 20))
        result["pass_ms"][name] = per_pass_ms(cached_pass(CompiledSpecs()), body, cals, passes)
    result.update(
        {
            "passes": passes,
            "clock": "process CPU time per pass (ms)",
            "loadavg": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        }
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.isolation", description=__doc__)
    parser.add_argument("--passes", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks/latest.json"))
    args = parser.parse_args(argv)
    result = measure(args.passes)
    latest: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    latest["isolation"] = result
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(latest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
