"""``kubectl sundial redrive NAME [--wait]``: give every dead letter new attempts (annotation
``sundial.dev/redrive``); with ``--wait``, until the operator handled the request (:mod:`.requests`, imported
when the command runs: it loads the model).
"""

from __future__ import annotations

import argparse
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, add_command


def register(commands: Any) -> None:
    sub = add_command(commands, "redrive", run, "give every dead letter new attempts (annotation sundial.dev/redrive)")
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--wait", action="store_true", help="wait until the operator handled the request")
    sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
    outputs.flag(sub, "json", "yaml", "name")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import requests  # noqa: PLC0415 - the model, only when the command runs
    from sundial.model import names  # noqa: PLC0415 - likewise

    letters = (kubectl.get(args.name).get("status") or {}).get("deadLetters") or []
    token = requests.request_token(now())
    body = requests.annotate(kubectl, args.name, names.REDRIVE_ANNOTATION, token)
    if args.wait:
        body = requests.wait_handled(kubectl, args.name, "lastHandledRedrive", token, args.timeout)
    requested = f"scheduledjob/{args.name}: redrive of {len(letters)} dead letter(s) requested (token {token})"
    print(outputs.result(args.output, body, resource=outputs.SCHEDULED_JOB, default=requested))
    return 0
