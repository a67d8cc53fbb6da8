"""``kubectl sundial describe [NAME]``: next run times (with the ScheduleCalendars referred to), conditions,
runs, dead letters and recent Events (:mod:`.events`, as ``kubectl describe`` lists them) of ScheduledJobs, as
text or ``-o json|yaml``.

The texts come from :mod:`.printers` and the calendars from :mod:`.calendars`, imported when the command runs
(they load the model).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sundial.cli.kubectl import events, outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command, scheduled_jobs


def register(commands: Any) -> None:
    sub = add_command(commands, "describe", run, "show next run times, conditions, runs and dead letters")
    sub.add_argument("name", nargs="?", metavar="NAME")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="describe across all namespaces")
    sub.add_argument("--count", type=int, default=5, help="how many next run times (default: 5)")
    outputs.flag(sub, "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import printers  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl.calendars import CalendarReader  # noqa: PLC0415 - likewise

    bodies = scheduled_jobs(kubectl, names=[args.name] if args.name else [], all_namespaces=args.all_namespaces)
    if args.output == outputs.Output.NAME:
        print(outputs.objects(bodies, args.output))
    elif args.output in (outputs.Output.JSON, outputs.Output.YAML):
        reader = CalendarReader(kubectl)
        found = [printers.description(body, now=now(), count=args.count, reader=reader) for body in bodies]
        for item, body in zip(found, bodies, strict=True):
            item["events"] = events.of(kubectl, body)
        print(outputs.dump(found[0] if len(found) == 1 else {"items": found}, args.output))
    elif not bodies:
        print(outputs.none_found(kubectl.namespace, all_namespaces=args.all_namespaces), file=sys.stderr)
    else:
        reader = CalendarReader(kubectl)
        texts = [
            printers.text(body, now=now(), count=args.count, reader=reader)
            + "\n"
            + events.text(events.of(kubectl, body), now=now())
            for body in bodies
        ]
        print("\n\n".join(texts))
    return 0
