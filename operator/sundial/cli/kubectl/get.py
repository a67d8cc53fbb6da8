"""``kubectl sundial get [NAME...]`` (alias ``list``): ScheduledJobs with their next and last runs; ``-l`` selects
by label and ``-w`` goes on printing a line for every change, as ``kubectl get`` does.

The table comes from :mod:`.printers`, imported when the command runs (it loads the model).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command, listing_args, scheduled_jobs


def register(commands: Any) -> None:
    sub = add_command(commands, "get", run, "list ScheduledJobs with their next and last runs", aliases=("list",))
    sub.add_argument("names", nargs="*", metavar="NAME")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    sub.add_argument("-l", "--selector", metavar="SELECTOR", help="label selector (e.g. -l team=a,tier!=batch)")
    sub.add_argument(
        "-w", "--watch", action="store_true", help="after listing, print a line for every change (Ctrl-C stops)"
    )
    outputs.flag(sub, "wide", "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    if args.watch:
        return watch(args, kubectl, now)
    bodies = scheduled_jobs(kubectl, names=args.names, all_namespaces=args.all_namespaces, selector=args.selector)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML, outputs.Output.NAME):
        print(outputs.objects(bodies, args.output))
    elif not bodies:
        print(outputs.none_found(kubectl.namespace, all_namespaces=args.all_namespaces), file=sys.stderr)
    else:
        from sundial.cli.kubectl import printers  # noqa: PLC0415 - the model, only when the command runs

        wide = args.output == outputs.Output.WIDE
        print(printers.rows(bodies, now=now(), wide=wide, namespaces=args.all_namespaces))
    return 0


def watch(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    """``get -w``: kubectl's watch (the objects first, then each change), one table line per object as it comes,
    the header once; ``-o json|yaml|name`` print each object as it comes. Ends when kubectl ends (its
    ``--request-timeout``) or on Ctrl-C."""
    from sundial.cli.kubectl import printers  # noqa: PLC0415 - the model, only when the command runs

    every_namespace = args.all_namespaces and not args.names
    words = listing_args(names=args.names, all_namespaces=args.all_namespaces, selector=args.selector)
    wide = args.output == outputs.Output.WIDE
    header = printers.header(wide=wide, namespaces=every_namespace)
    try:
        for index, body in enumerate(kubectl.stream("get", *words, "--watch", namespaced=not every_namespace)):
            if args.output in (outputs.Output.JSON, outputs.Output.YAML, outputs.Output.NAME):
                text = outputs.objects([body], args.output)
                print(text if args.output != outputs.Output.YAML or index == 0 else f"---\n{text}", flush=True)
                continue
            cells = printers.row(body, now=now(), wide=wide, namespaces=every_namespace)
            print(outputs.watch_line(header, cells, first=index == 0), flush=True)
    except KeyboardInterrupt:
        return 130
    return 0
