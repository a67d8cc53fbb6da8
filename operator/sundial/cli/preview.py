"""``sundial preview``: the next nominal run times of a schedule, without jitter.

Asks the same :class:`sundial.schedule.When` the operator's planner asks, so a preview never disagrees
with reality. The clock is read here and only here (``now`` is injectable for tests). Imports no Kubernetes
client.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sundial import schedule

MAX_COUNT = 1000
DESCRIPTION = (
    "Print the next nominal run times of a cron schedule, without jitter, computed by the operator's own "
    "code (time zones, daylight-saving rules, H fields). See docs/design.md, section Schedules."
)


def _system_now() -> datetime:
    return datetime.now(UTC)


def register(subparsers: Any, *, now: Callable[[], datetime] | None = None) -> None:
    """Add the ``preview`` sub-command to an ``argparse`` sub-parsers object."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "preview",
        help="print the next run times of a schedule",
        description=DESCRIPTION,
    )
    parser.add_argument("--schedule", required=True, help='cron expression, e.g. "30 2 * * *" or @daily')
    parser.add_argument("--time-zone", default="UTC", help="IANA time zone (default: UTC)")
    parser.add_argument("--after", help="RFC 3339 instant; print times strictly after it (default: now)")
    parser.add_argument("--count", type=int, default=5, help=f"how many times, 1-{MAX_COUNT} (default: 5)")
    parser.add_argument("--uid", default="", help="object UID that seeds Jenkins-style H fields")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table", help="output format")
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


def run(args: argparse.Namespace, *, now: Callable[[], datetime] = _system_now) -> int:
    """Print the preview; invalid input prints a message naming the field and returns 2."""
    try:
        times, zone = _preview(args, now=now)
    except schedule.ScheduleError as error:
        print(f"sundial preview: error: {error}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps([schedule.format_rfc3339(t) for t in times]))
    else:
        print(_table(times, zone))
    return 0


def _preview(args: argparse.Namespace, *, now: Callable[[], datetime]) -> tuple[list[datetime], str]:
    if not 1 <= args.count <= MAX_COUNT:
        raise schedule.ScheduleError("count", f"must be between 1 and {MAX_COUNT}, got {args.count}")
    when = schedule.recurring(
        schedule.build_timetable(
            args.schedule,
            time_zone=args.time_zone,
            uid=args.uid,
            skipped=args.daylight_saving_skipped,
            repeated=args.daylight_saving_repeated,
        )
    )
    after = schedule.parse_rfc3339(args.after, field="after") if args.after else now()
    times: list[datetime] = []
    for instant in when.iter_after(after):
        times.append(instant)
        if len(times) == args.count:
            break
    return times, args.time_zone


def _table(times: list[datetime], zone_name: str) -> str:
    zone = schedule.load_zone(zone_name)
    rows = [("#", f"LOCAL ({zone_name})", "UTC")]
    for number, instant in enumerate(times, start=1):
        local = instant.astimezone(zone)
        rows.append((str(number), local.strftime("%Y-%m-%d %H:%M:%S %Z (%z)"), schedule.format_rfc3339(instant)))
    if len(rows) == 1:
        return "no run times within the next 10 years"
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    return "\n".join(f"{row[0]:>{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}".rstrip() for row in rows)
