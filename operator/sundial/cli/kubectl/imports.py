"""``kubectl sundial import cronjob/NAME... | cronjobs [-A] [-l SELECTOR] [--apply | --hand-over]``: the
ScheduledJob equivalent to each CronJob (:mod:`.cronjobs`), printed as YAML with every difference as a comment
above it (the output applies as it is), or created (``--apply``), or taken over live (``--hand-over``,
:mod:`.handover`).

Exit codes: 0 when every CronJob was imported, 1 when one could not be (its error names the CronJob and the
field; the others are still imported).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command

_KINDS = ("cronjob", "cronjobs", "cj", "cronjob.batch", "cronjobs.batch")


def register(commands: Any) -> None:
    sub = add_command(commands, "import", run, "turn CronJobs into ScheduledJobs (print, apply or hand over)")
    sub.add_argument("targets", nargs="+", metavar="cronjob/NAME", help="cronjob/NAME..., or cronjobs with -A or -l")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="every CronJob of every namespace")
    sub.add_argument("-l", "--selector", help="only the CronJobs with these labels (as kubectl's -l)")
    action = sub.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="create the ScheduledJobs (kubectl apply)")
    action.add_argument(
        "--hand-over",
        action="store_true",
        help="suspend each CronJob and create its ScheduledJob so every run after the switch runs exactly once",
    )
    outputs.flag(sub, "yaml", "json", default="yaml")


def names(targets: list[str]) -> list[str]:
    """The CronJob names of ``targets`` (``cronjob/NAME``, or the kind then names); [] means "all selected"."""
    found: list[str] = []
    rest = list(targets)
    if rest and rest[0].lower() in _KINDS:
        rest = rest[1:]
        found += rest
        return found
    for target in rest:
        kind, slash, name = target.partition("/")
        if not slash or kind.lower() not in _KINDS or not name:
            raise PluginError(f"{target!r}: name a CronJob as cronjob/NAME (or: cronjobs -A, cronjobs -l SELECTOR)")
        found.append(name)
    return found


def cronjobs(kubectl: Kubectl, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The CronJobs the arguments select."""
    wanted = names(args.targets)
    if not wanted and not (args.all_namespaces or args.selector):
        raise PluginError("name the CronJobs (cronjob/NAME) or select them with -A or -l")
    query = ["cronjobs.batch", *wanted]
    if args.selector:
        query.append(f"--selector={args.selector}")
    if args.all_namespaces:
        query.append("--all-namespaces")
    body = kubectl.get_json(*query, namespaced=not args.all_namespaces)
    items: list[dict[str, Any]] = body.get("items") or [] if body.get("kind", "").endswith("List") else [body]
    return items


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import cronjobs as mapping  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl import handover  # noqa: PLC0415 - likewise

    found = cronjobs(kubectl, args)
    if not found:
        print(outputs.none_found(kubectl.namespace, all_namespaces=args.all_namespaces), file=sys.stderr)
        return 0
    failed = 0
    documents: list[str] = []
    for cronjob in found:
        meta = cronjob.get("metadata") or {}
        where = f"cronjob/{meta.get('name', '')} (namespace {meta.get('namespace', '')})"
        try:
            conversion = mapping.convert(cronjob)
        except mapping.ConversionError as error:
            print(f"error: {where}: {error}", file=sys.stderr)
            failed += 1
            continue
        if args.hand_over:
            try:
                done = handover.hand_over(kubectl, cronjob, conversion, now=now)
                print(done.describe())
                if done.warning():
                    print(done.warning(), file=sys.stderr)
            except PluginError as error:
                print(f"error: {where}: hand-over stopped: {error}", file=sys.stderr)
                failed += 1
            continue
        if args.apply or args.output == "json":
            for note in conversion.notes:
                print(f"{where}: {note.line()}", file=sys.stderr)
        if args.apply:
            handover.write(kubectl, conversion.manifest)
            print(f"scheduledjob.sundial.dev/{conversion.name} applied from {where}")
        else:
            documents.append(_document(conversion, args.output))
    if documents:
        print(("\n" if args.output == "json" else "\n---\n").join(documents))
    return 1 if failed else 0


def _document(conversion: Any, output: str) -> str:
    """The manifest, in YAML with the differences as comments above it."""
    if output == "json":
        return outputs.dump(conversion.manifest, "json")
    comments = [f"# {outputs.printable(note.line())}" for note in conversion.notes]
    return "\n".join([*comments, outputs.dump(conversion.manifest, "yaml")])
