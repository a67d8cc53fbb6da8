"""``kubectl sundial create job NAME --from=scheduledjob/SJ``: one manual run of SJ, as ``kubectl create job
--from=cronjob/...`` does for a CronJob; NAME is the request's trigger token (the operator names the Job). Waits
for the Job (:mod:`.requests`, imported when the command runs: it loads the model).
"""

from __future__ import annotations

import argparse
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command

FROM_PREFIXES = ("scheduledjob/", "scheduledjobs/", "sj/", "scheduledjob.sundial.dev/", "scheduledjobs.sundial.dev/")


def register(commands: Any) -> None:
    sub = add_command(commands, "create", run, "create a resource from a ScheduledJob (only: job)")
    sub.add_argument("kind", choices=("job",), metavar="job")
    sub.add_argument("name", metavar="NAME", help="names the request (the trigger token); the operator names the Job")
    sub.add_argument("--from", dest="source", required=True, metavar="scheduledjob/NAME", help="the ScheduledJob")
    sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the Job (default: 60)")
    outputs.flag(sub, "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import requests  # noqa: PLC0415 - the model, only when the command runs
    from sundial.model import names  # noqa: PLC0415 - likewise

    source = next((args.source[len(p) :] for p in FROM_PREFIXES if args.source.startswith(p)), "")
    if not source:
        raise PluginError(f"--from: expected scheduledjob/NAME, got {args.source!r}")
    current = (kubectl.get(source).get("metadata") or {}).get("annotations") or {}
    if current.get(names.TRIGGER_ANNOTATION) == args.name:
        raise PluginError(f"a run named {args.name!r} was already requested from scheduledjob/{source}: use a new NAME")
    job = requests.request_run(kubectl, source, args.name, timeout=args.timeout)
    created = f"{outputs.name_of(outputs.JOB, job)} created"
    print(outputs.result(args.output, job, resource=outputs.JOB, default=created))
    return 0
