"""``kubectl sundial suspend|resume NAME``: set ``spec.suspend`` (a merge patch), warning that a GitOps-managed
object should be changed in Git instead."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import RESOURCE, Clock, Kubectl, add_command


def register(commands: Any) -> None:
    for name, handler, helptext in (
        ("suspend", suspend, "set spec.suspend=true (for GitOps-managed objects, change Git instead)"),
        ("resume", resume, "set spec.suspend=false"),
    ):
        sub = add_command(commands, name, handler, helptext)
        sub.add_argument("name", metavar="NAME")
        outputs.flag(sub, "name")


def suspend(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, True)


def resume(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, False)


def _set_suspend(args: argparse.Namespace, kubectl: Kubectl, value: bool) -> int:
    print(
        "warning: this edits spec.suspend; if the object is managed by GitOps (Argo CD, Flux), "
        "change it in Git instead or it will be reverted",
        file=sys.stderr,
    )
    patch = json.dumps({"spec": {"suspend": value}})
    body = json.loads(kubectl.run("patch", RESOURCE, args.name, "--type=merge", "-p", patch, "-o", "json"))
    default = f"scheduledjob/{args.name} {'suspended' if value else 'resumed'}"
    print(outputs.result(args.output, body, resource=outputs.SCHEDULED_JOB, default=default))
    return 0
