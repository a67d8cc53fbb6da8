"""``kubectl sundial``: trigger, redrive, suspend, resume, describe and preview ScheduledJobs.

Installed as the ``kubectl-sundial`` executable, so kubectl finds it as a plugin. It drives ``kubectl``
itself (inheriting ``--context`` / ``--kubeconfig``), and reads times with the operator's own code.
Manual actions are token annotations (DESIGN §5): the spec stays as it is in Git.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from sundial import schedule
from sundial.model import ScheduledJob

TRIGGER_ANNOTATION = "sundial.dev/trigger"
REDRIVE_ANNOTATION = "sundial.dev/redrive"
RESOURCE = "scheduledjobs.sundial.dev"

Clock = Callable[[], datetime]


class PluginError(RuntimeError):
    """A failed kubectl call or an unusable object; printed without a traceback."""


class Kubectl:
    """Runs kubectl with the user's global flags."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.base = ["kubectl"]
        if args.kubeconfig:
            self.base.append(f"--kubeconfig={args.kubeconfig}")
        if args.context:
            self.base.append(f"--context={args.context}")
        self.namespace: str | None = args.namespace

    def run(self, *args: str, namespaced: bool = True) -> str:
        command = [*self.base]
        if namespaced and self.namespace:
            command.append(f"--namespace={self.namespace}")
        command.extend(args)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise PluginError(result.stderr.strip() or f"kubectl exited with {result.returncode}")
        return result.stdout

    def get(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", RESOURCE, name, "-o", "json"))
        return body


def _token(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.5)
    return predicate()


def _annotate_token(kubectl: Kubectl, name: str, key: str, token: str) -> None:
    kubectl.run("annotate", RESOURCE, name, f"{key}={token}", "--overwrite")


def cmd_trigger(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    token = _token(now())
    _annotate_token(kubectl, args.name, TRIGGER_ANNOTATION, token)
    print(f"scheduledjob/{args.name}: run requested (token {token})")
    if not args.wait:
        return 0

    def handled() -> bool:
        status = kubectl.get(args.name).get("status") or {}
        return bool(status.get("lastHandledTrigger") == token)

    if not _wait_for(handled, args.timeout):
        print(f"the operator has not handled the trigger within {args.timeout:.0f}s", file=sys.stderr)
        return 1
    print(
        kubectl.run(
            "get", "jobs", "-l", f"sundial.dev/scheduledjob={args.name}", "--sort-by=.metadata.creationTimestamp"
        ),
        end="",
    )
    return 0


def cmd_redrive(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    body = kubectl.get(args.name)
    letters = (body.get("status") or {}).get("deadLetters") or []
    token = _token(now())
    _annotate_token(kubectl, args.name, REDRIVE_ANNOTATION, token)
    print(f"scheduledjob/{args.name}: redrive of {len(letters)} dead letter(s) requested (token {token})")
    if args.wait:

        def handled() -> bool:
            status = kubectl.get(args.name).get("status") or {}
            return bool(status.get("lastHandledRedrive") == token)

        if not _wait_for(handled, args.timeout):
            print(f"the operator has not handled the redrive within {args.timeout:.0f}s", file=sys.stderr)
            return 1
    return 0


def _set_suspend(args: argparse.Namespace, kubectl: Kubectl, value: bool) -> int:
    print(
        "warning: this edits spec.suspend; if the object is managed by GitOps (Argo CD, Flux), "
        "change it in Git instead or it will be reverted",
        file=sys.stderr,
    )
    patch = json.dumps({"spec": {"suspend": value}})
    kubectl.run("patch", RESOURCE, args.name, "--type=merge", "-p", patch)
    print(f"scheduledjob/{args.name} {'suspended' if value else 'resumed'}")
    return 0


def cmd_suspend(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, True)


def cmd_resume(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, False)


def next_times(obj: ScheduledJob, *, after: datetime, count: int) -> list[datetime]:
    """The next ``count`` nominal times of a ScheduledJob, exactly as the operator computes them."""
    spec = obj.spec
    if spec is None:
        return []
    when = spec.when(uid=obj.metadata.uid, created=obj.metadata.creation_timestamp or after)
    result: list[datetime] = []
    for instant in when.iter_after(after):
        result.append(instant)
        if len(result) >= count:
            break
    return result


def describe(body: dict[str, Any], *, now: datetime, count: int) -> str:
    """A human-readable description of one ScheduledJob."""
    obj = ScheduledJob.from_dict(body)
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    lines = [
        f"Name:        {obj.metadata.name}",
        f"Namespace:   {obj.metadata.namespace}",
        f"Schedule:    {spec.get('schedule') or spec.get('runAt') or '(once, as soon as possible)'}",
        f"Time zone:   {spec.get('timeZone', 'UTC')}",
        f"Suspend:     {spec.get('suspend', False)}",
    ]
    if obj.spec_error is not None:
        lines.append(f"Invalid:     {obj.spec_error}")
    else:
        zone = schedule.load_zone(obj.spec.time_zone if obj.spec else "UTC")
        lines.append("Next runs:")
        for instant in next_times(obj, after=now, count=count):
            local = instant.astimezone(zone).isoformat()
            lines.append(f"  {schedule.format_rfc3339(instant)}  ({local})")
    lines.append("Conditions:")
    for condition in status.get("conditions") or []:
        lines.append(
            f"  {condition.get('type')}={condition.get('status')} {condition.get('reason', '')}: "
            f"{condition.get('message', '')}"
        )
    counters = status.get("counters") or {}
    if counters:
        lines.append("Counters:    " + ", ".join(f"{k}={v}" for k, v in counters.items()))
    for title, key, fields in (
        ("Active", "active", ("scheduledTime", "attempt", "job", "trigger")),
        ("Pending retries", "pendingRetries", ("scheduledTime", "attempt", "notBefore", "lastFailure")),
        ("Recent runs", "recentRuns", ("scheduledTime", "attempts", "result", "job", "finishedAt")),
        ("Dead letters", "deadLetters", ("scheduledTime", "attempts", "reason", "lastJob", "message")),
    ):
        entries = status.get(key) or []
        lines.append(f"{title}: {len(entries) or 'none'}")
        for entry in entries:
            lines.append("  " + "  ".join(f"{f}={entry.get(f, '')}" for f in fields))
    return "\n".join(lines)


def cmd_describe(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    if args.name:
        bodies = [kubectl.get(args.name)]
    else:
        listing = json.loads(
            kubectl.run(
                "get",
                RESOURCE,
                "-o",
                "json",
                *(["-A"] if args.all_namespaces else []),
                namespaced=not args.all_namespaces,
            )
        )
        bodies = listing.get("items") or []
    print("\n\n".join(describe(body, now=now(), count=args.count) for body in bodies))
    return 0


def cmd_preview(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    obj = ScheduledJob.from_dict(kubectl.get(args.name))
    if obj.spec_error is not None:
        print(f"scheduledjob/{args.name} is invalid: {obj.spec_error}", file=sys.stderr)
        return 2
    times = next_times(obj, after=now(), count=args.count)
    if args.output == "json":
        print(json.dumps([schedule.format_rfc3339(t) for t in times]))
    else:
        zone = schedule.load_zone(obj.spec.time_zone if obj.spec else "UTC")
        for instant in times:
            print(f"{schedule.format_rfc3339(instant)}  {instant.astimezone(zone).isoformat()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kubectl sundial", description=__doc__)
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--context", default=None)
    parser.add_argument("-n", "--namespace", default=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, handler: Callable[..., int], helptext: str, *, named: bool = True) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=helptext)
        if named:
            sub.add_argument("name")
        sub.add_argument("-n", "--namespace", default=argparse.SUPPRESS)
        sub.set_defaults(handler=handler)
        return sub

    trigger = add("trigger", cmd_trigger, "run once now (annotation sundial.dev/trigger)")
    redrive = add("redrive", cmd_redrive, "give every dead letter new attempts (annotation sundial.dev/redrive)")
    for sub in (trigger, redrive):
        sub.add_argument("--wait", action="store_true", help="wait until the operator handled the request")
        sub.add_argument("--timeout", type=float, default=60.0)
    add("suspend", cmd_suspend, "set spec.suspend=true (prefer Git for GitOps-managed objects)")
    add("resume", cmd_resume, "set spec.suspend=false")
    desc = add("describe", cmd_describe, "next times, conditions, recent runs, dead letters", named=False)
    desc.add_argument("name", nargs="?")
    desc.add_argument("-A", "--all-namespaces", action="store_true")
    desc.add_argument("--count", type=int, default=5)
    preview = add("preview", cmd_preview, "the next nominal run times of an object")
    preview.add_argument("--count", type=int, default=5)
    preview.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return parser


def main(argv: Sequence[str] | None = None, *, now: Clock = lambda: datetime.now(UTC)) -> int:
    args = build_parser().parse_args(argv)
    try:
        result: int = args.handler(args, Kubectl(args), now)
    except PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return result


if __name__ == "__main__":
    sys.exit(main())
