"""``kubectl sundial``: the command line and its dispatch, the entry points of the plugin.

Installed as the ``kubectl-sundial`` executable, so kubectl finds it as a plugin, and as
``kubectl_complete-sundial``, which kubectl (1.26 and later) asks for completions. Each command is a module of
:mod:`sundial.cli.kubectl` that adds its sub-command with its handler (:func:`~.runner.add_command`); this module
takes kubectl's global flags off the line (:mod:`.runner`), parses the rest and calls the handler. Nothing it
imports loads a Kubernetes client or pydantic, so ``--help`` and completion start fast; the commands
import what they need when they run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime

from sundial.cli.kubectl import (
    backfill,
    check,
    completion,
    create,
    describe,
    forecast,
    get,
    imports,
    lint,
    outputs,
    preview,
    redrive,
    runs,
    suspend,
    trigger,
    version,
)
from sundial.cli.kubectl.runner import GLOBAL_FLAGS, Clock, Kubectl, PluginError, split_global_flags

DESCRIPTION = """\
Trigger, redrive, suspend, resume, inspect, preview and forecast Sundial ScheduledJobs.

Manual actions set a token annotation (sundial.dev/trigger, sundial.dev/redrive, sundial.dev/backfill)
that the operator acts on once; the spec stays as it is in Git. kubectl's global flags (--context, -n, --kubeconfig,
--as, --token, --certificate-authority, -v, ...) are accepted anywhere on the line and passed to every kubectl
call."""

EXAMPLES = """\
examples:
  kubectl sundial check --wait 2m
  kubectl sundial get -A
  kubectl sundial describe nightly-report -n team-a -o yaml
  kubectl sundial preview nightly-report --count 10
  kubectl sundial forecast -A --hours 24 --output-file herds.svg
  kubectl sundial trigger nightly-report --wait
  kubectl sundial create job report-rerun --from=scheduledjob/nightly-report
  kubectl sundial redrive nightly-report --wait
  kubectl sundial backfill nightly-report --from 2026-12-01T00:00:00Z --to 2026-12-07T00:00:00Z --wait
  source <(kubectl sundial completion bash)
  kubectl sundial import cronjob/nightly-report --hand-over -n team-a"""


#: The modules of the commands, in the order of the help.
COMMANDS = (get, describe, preview, forecast, version, check, completion, trigger, redrive, backfill, create, suspend)
COMMANDS_ADOPTION = (runs, imports, lint)
"""``runs``, ``import`` and ``lint`` (issue 33), after the others in the help."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl sundial",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # --client is version's own flag, not an abbreviation of --client-key
    )
    kubectl = parser.add_argument_group("kubectl global flags (accepted anywhere on the line)")
    for flag in GLOBAL_FLAGS:
        if flag.switch:
            kubectl.add_argument(*flag.names, dest=flag.dest, action="store_true", help=flag.help)
        else:
            kubectl.add_argument(*flag.names, dest=flag.dest, metavar=flag.dest.upper(), help=flag.help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in (*COMMANDS, *COMMANDS_ADOPTION):
        command.register(commands)
    return parser


def _system_now() -> datetime:
    from sundial.schedule import clock  # noqa: PLC0415 - the one default clock, loaded only when a command runs

    return clock.utcnow()


def main(argv: Sequence[str] | None = None, *, now: Clock = _system_now) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if words[:1] == ["__complete"]:
        return completion.complete(words[1:], parser=parser)
    try:
        options, rest = split_global_flags(words)
    except PluginError as error:
        parser.error(str(error))
    args = parser.parse_args(rest)
    with outputs.sanitized():  # what is printed comes from the cluster: no terminal escapes
        try:
            result: int = args.handler(args, Kubectl(options), now)
        except PluginError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
    return result


def complete_main() -> int:
    """``kubectl_complete-sundial``: kubectl runs it with the words after ``kubectl sundial``."""
    return main(["__complete", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
