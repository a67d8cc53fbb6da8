"""``kubectl sundial preview NAME``: the next nominal run times of a ScheduledJob in the cluster, computed by
the operator's own code (:mod:`.nextruns`) with the ScheduleCalendars it refers to.

The model is imported when the command runs, not at the plugin's start-up.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command


def register(commands: Any) -> None:
    sub = add_command(commands, "preview", run, "print the next nominal run times of a ScheduledJob")
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--count", type=int, default=5, help="how many run times (default: 5)")
    outputs.flag(sub, "table", "json", "yaml", default="table")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import nextruns  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl.calendars import CalendarReader  # noqa: PLC0415 - likewise
    from sundial.model import ScheduledJob  # noqa: PLC0415 - likewise
    from sundial.schedule import format_rfc3339, load_zone  # noqa: PLC0415 - likewise

    obj = ScheduledJob.from_dict(kubectl.get(args.name))
    if obj.spec_error is not None:
        print(f"scheduledjob/{args.name} is invalid: {obj.spec_error}", file=sys.stderr)
        return 2
    calendars = CalendarReader(kubectl).of(obj)
    if calendars.problem is not None:
        print(f"scheduledjob/{args.name} runs nothing: {calendars.problem}", file=sys.stderr)
        return 2
    times = nextruns.next_times(obj, after=now(), count=args.count, exclusion=calendars.exclusion)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML):
        print(outputs.dump([format_rfc3339(t) for t in times], args.output))
    else:
        zone = load_zone(nextruns.zone_name(obj))
        for instant in times:
            print(f"{format_rfc3339(instant)}  {instant.astimezone(zone).isoformat()}")
    return 0
