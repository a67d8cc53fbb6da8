"""``kubectl sundial runs NAME [--limit N] [-o wide|json|yaml]``: the runs of one ScheduledJob, newest first -
nominal time, attempt, trigger, Job, outcome, duration, dead letter (:mod:`.runlists`)."""

from __future__ import annotations

import argparse
from typing import Any

from sundial.cli.kubectl import outputs, runlists
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command


def register(commands: Any) -> None:
    sub = add_command(commands, "runs", run, "list the runs of a ScheduledJob, newest first")
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--limit", type=int, default=20, help="at most this many rows (default: 20; 0: all)")
    outputs.flag(sub, "wide", "json", "yaml")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    body = kubectl.get(args.name)
    jobs = kubectl.get_json("jobs.batch", "-l", selector(args.name)).get("items") or []
    rows = runlists.runs(body, jobs)
    if args.limit > 0:
        rows = rows[: args.limit]
    if args.output in (outputs.Output.JSON, outputs.Output.YAML):
        print(outputs.dump(runlists.document(rows), args.output))
    elif rows:
        print(runlists.table(rows, wide=args.output == outputs.Output.WIDE))
    else:
        print(f"scheduledjob/{args.name} has no runs yet")
    return 0


def selector(name: str) -> str:
    """The Jobs' label selector (the model's :func:`~sundial.model.names.job_selector`, loaded only now)."""
    from sundial.model import names  # noqa: PLC0415 - pydantic, only when the command runs

    return names.job_selector(name)
