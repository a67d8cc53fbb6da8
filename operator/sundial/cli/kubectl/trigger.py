"""``kubectl sundial trigger NAME [--wait]``: request one run now (annotation ``sundial.dev/trigger``).

With ``--wait``, waits until the operator handled the request and its manual Job appeared (:mod:`.requests`,
imported when the command runs: it loads the model).
"""

from __future__ import annotations

import argparse
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command


def register(commands: Any) -> None:
    sub = add_command(commands, "trigger", run, "request one run now (annotation sundial.dev/trigger)")
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--wait", action="store_true", help="wait until the operator handled the request")
    sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
    outputs.flag(sub, "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import requests  # noqa: PLC0415 - the model, only when the command runs
    from sundial.model import names  # noqa: PLC0415 - likewise

    token = requests.request_token(now())
    requested = f"scheduledjob/{args.name}: run requested (token {token})"
    if not args.wait:
        body = requests.annotate(kubectl, args.name, names.TRIGGER_ANNOTATION, token)
        print(outputs.result(args.output, body, resource=outputs.SCHEDULED_JOB, default=requested))
        return 0
    job = requests.request_run(kubectl, args.name, token, timeout=args.timeout)
    if args.output:
        print(outputs.objects([job], args.output, resource=outputs.JOB))
    else:
        print(requested)
        print(kubectl.run("get", "jobs", job["metadata"]["name"]), end="")
    return 0
