"""``kubectl sundial get [NAME...]`` (alias ``list``): ScheduledJobs with their next and last runs.

The table comes from :mod:`.printers`, imported when the command runs (it loads the model).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command, scheduled_jobs


def register(commands: Any) -> None:
    sub = add_command(commands, "get", run, "list ScheduledJobs with their next and last runs", aliases=("list",))
    sub.add_argument("names", nargs="*", metavar="NAME")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    outputs.flag(sub, "wide", "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    bodies = scheduled_jobs(kubectl, names=args.names, all_namespaces=args.all_namespaces)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML, outputs.Output.NAME):
        print(outputs.objects(bodies, args.output))
    elif not bodies:
        print(outputs.none_found(kubectl.namespace, all_namespaces=args.all_namespaces), file=sys.stderr)
    else:
        from sundial.cli.kubectl import printers  # noqa: PLC0415 - the model, only when the command runs

        wide = args.output == outputs.Output.WIDE
        print(printers.rows(bodies, now=now(), wide=wide, namespaces=args.all_namespaces))
    return 0
