"""``sundial preview``: the next nominal run times of a schedule, without jitter.

Asks the same :class:`sundial.schedule.When` the operator's planner asks, so a preview never disagrees
with reality. The clock is read here and only here (``now`` is injectable for tests). Imports no Kubernetes
client.

``--schedule`` may be given several times (``spec.schedules``: the union, a time two produce listed once).
``--exclude-file F`` reads ``spec.exclude`` entries (a YAML list, or a mapping with an ``exclude`` list, such
as a ScheduledJob's spec) and ``--calendar-file F`` (repeatable) a ScheduleCalendar manifest: the ``--count``
times listed are the ones that run; excluded times between them are shown in the table, marked ``excluded``
(JSON lists the times that run only).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from sundial import schedule

MAX_COUNT = 1000
MAX_EXCLUDED_SHOWN = 10_000
"""Excluded times looked at past the last one listed before the preview stops (an exclusion of everything)."""
EXCLUDED = "excluded"
DESCRIPTION = (
    "Print the next nominal run times of a cron schedule, without jitter, computed by the operator's own "
    "code (time zones, daylight-saving rules, H fields). See docs/design.md, section 3 (Time semantics)."
)


def register(subparsers: Any, *, now: Callable[[], datetime] | None = None) -> None:
    """Add the ``preview`` sub-command to an ``argparse`` sub-parsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "preview",
        help="print the next run times of a schedule",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "--schedule",
        required=True,
        action="append",
        help='cron expression, e.g. "30 2 * * *" or @daily; repeat it for a list (spec.schedules: the union)',
    )
    parser.add_argument("--time-zone", default="UTC", help="IANA time zone (default: UTC)")
    parser.add_argument("--after", help="RFC 3339 instant; print times strictly after it (default: now)")
    parser.add_argument("--count", type=int, default=5, help=f"how many times, 1-{MAX_COUNT} (default: 5)")
    parser.add_argument("--uid", default="", help="object UID that seeds Jenkins-style H fields")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
    parser.add_argument(
        "--exclude-file", help="YAML file of spec.exclude entries (a list, or a mapping with an exclude list)"
    )
    parser.add_argument(
        "--calendar-file", action="append", default=[], help="YAML file of a ScheduleCalendar (repeatable)"
    )
    parser.add_argument(
        "--daylight-saving-skipped",
        default=schedule.SkippedTime.AUTO.value,
        choices=[policy.value for policy in schedule.SkippedTime],
        help="what to do with local times that do not exist (spring forward)",
    )
    parser.add_argument(
        "--daylight-saving-repeated",
        default=schedule.RepeatedTime.AUTO.value,
        choices=[policy.value for policy in schedule.RepeatedTime],
        help="what to do with local times that happen twice (fall back)",
    )
    parser.set_defaults(func=run if now is None else functools.partial(run, now=now))


def run(args: argparse.Namespace, *, now: Callable[[], datetime] = schedule.utcnow) -> int:
    """Print the preview; invalid input prints a message naming the field and returns 2."""
    try:
        times, zone = _preview(args, now=now)
    except schedule.ScheduleError as error:
        print(f"sundial preview: error: {error}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps([schedule.format_rfc3339(t) for t, excluded in times if not excluded]))
    else:
        print(_table(times, zone))
    return 0


def _preview(args: argparse.Namespace, *, now: Callable[[], datetime]) -> tuple[list[tuple[datetime, bool]], str]:
    """The next ``--count`` times that run, with the excluded times among them: (time, excluded)."""
    if not 1 <= args.count <= MAX_COUNT:
        raise schedule.ScheduleError("count", f"must be between 1 and {MAX_COUNT}, got {args.count}")
    several = len(args.schedule) > 1
    timetables = [
        schedule.build_timetable(
            text,
            time_zone=args.time_zone,
            uid=args.uid,
            skipped=args.daylight_saving_skipped,
            repeated=args.daylight_saving_repeated,
            field=f"schedule[{index}]" if several else "schedule",
        )
        for index, text in enumerate(args.schedule)
    ]
    when = schedule.recurring(schedule.Union(tuple(timetables)) if several else timetables[0])
    exclusion = _exclusion(args)
    after = schedule.parse_rfc3339(args.after, field="after") if args.after else now()
    times: list[tuple[datetime, bool]] = []
    running = skipped = 0
    for instant in when.iter_after(after):
        excluded = exclusion.excludes(instant)
        times.append((instant, excluded))
        running += not excluded
        skipped = skipped + 1 if excluded else 0
        if running == args.count or skipped > MAX_EXCLUDED_SHOWN:
            break
    return times, args.time_zone


def _exclusion(args: argparse.Namespace) -> schedule.Exclusion:
    found = schedule.Exclusion()
    if not args.exclude_file and not args.calendar_file:
        return found
    # Only with exclusions: pydantic (the model) is too heavy for every preview's start-up.
    from pydantic import ValidationError  # noqa: PLC0415

    from sundial.model import errors  # noqa: PLC0415
    from sundial.model.calendars import ExcludeEntry, ScheduleCalendar, exclusion_of  # noqa: PLC0415

    if args.exclude_file:
        raw = _load(args.exclude_file, field="exclude-file")
        entries = raw.get("exclude", []) if isinstance(raw, dict) else raw
        if isinstance(raw, dict) and isinstance(raw.get("spec"), dict):
            entries = raw["spec"].get("exclude", [])
        if not isinstance(entries, list):
            raise schedule.ScheduleError("exclude-file", "must hold a list of exclude entries")
        parsed = []
        for index, entry in enumerate(entries):
            try:
                parsed.append(ExcludeEntry.model_validate(entry))
            except ValidationError as error:
                problems = errors.problems_from(error, root=f"exclude[{index}]")
                raise schedule.ScheduleError("exclude-file", "; ".join(str(p) for p in problems)) from None
        found += exclusion_of(parsed, time_zone=args.time_zone, uid=args.uid, field="exclude")
    for path in args.calendar_file:
        calendar = ScheduleCalendar.from_dict(_load(path, field="calendar-file"))
        if calendar.spec is None:
            raise schedule.ScheduleError("calendar-file", f"{path}: {calendar.error}")
        found += calendar.spec.exclusion(time_zone=args.time_zone, uid=args.uid)
    return found


def _load(path: str, *, field: str) -> Any:
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise schedule.ScheduleError(field, f"cannot read {path}: {error}") from None


def _table(times: list[tuple[datetime, bool]], zone_name: str) -> str:
    zone = schedule.load_zone(zone_name)
    rows = [("#", f"LOCAL ({zone_name})", "UTC", "")]
    number = 0
    for instant, excluded in times:
        number += not excluded
        local = instant.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z (%z)")
        rows.append(("-" if excluded else str(number), local, schedule.format_rfc3339(instant), EXCLUDED * excluded))
    if number == 0:
        return "no run times within the next 10 years"
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return "\n".join(
        f"{row[0]:>{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}".rstrip() for row in rows
    )
