"""``kubectl sundial``: the command line, kubectl's global flags and the kubectl runner of the plugin.

Installed as the ``kubectl-sundial`` executable, so kubectl finds it as a plugin, and as
``kubectl_complete-sundial``, which kubectl (1.26 and later) asks for completions. The commands are in
:mod:`sundial.cli.plugin_commands`, output formats in :mod:`sundial.cli.plugin_outputs` and shell
completion in :mod:`sundial.cli.plugin_completions`. This module imports no Kubernetes client, kopf or
pydantic, so ``--help`` and completion start fast; commands import what they need when they run.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

RESOURCE = "scheduledjobs.sundial.dev"

Clock = Callable[[], datetime]

DESCRIPTION = """\
Trigger, redrive, suspend, resume, inspect and preview Sundial ScheduledJobs.

Manual actions set a token annotation (sundial.dev/trigger, sundial.dev/redrive, sundial.dev/backfill)
that the operator acts on once; the spec stays as it is in Git. kubectl's global flags (--context, -n, --kubeconfig,
--as, ...) are accepted anywhere on the line and passed to every kubectl call."""

EXAMPLES = """\
examples:
  kubectl sundial get -A
  kubectl sundial describe nightly-report -n team-a -o yaml
  kubectl sundial preview nightly-report --count 10
  kubectl sundial trigger nightly-report --wait
  kubectl sundial create job report-rerun --from=scheduledjob/nightly-report
  kubectl sundial redrive nightly-report --wait
  kubectl sundial backfill nightly-report --from 2026-12-01T00:00:00Z --to 2026-12-07T00:00:00Z --wait
  source <(kubectl sundial completion bash)"""


class PluginError(RuntimeError):
    """A failed kubectl call or an unusable object; printed without a traceback."""


@dataclass(frozen=True)
class GlobalFlag:
    """One of kubectl's global flags that takes a value."""

    names: tuple[str, ...]
    dest: str
    help: str
    repeatable: bool = False


GLOBAL_FLAGS: tuple[GlobalFlag, ...] = (
    GlobalFlag(("-n", "--namespace"), "namespace", "the namespace of the ScheduledJob"),
    GlobalFlag(("--context",), "context", "the kubeconfig context to use"),
    GlobalFlag(("--kubeconfig",), "kubeconfig", "path to the kubeconfig file"),
    GlobalFlag(("--cluster",), "cluster", "the kubeconfig cluster to use"),
    GlobalFlag(("--user",), "user", "the kubeconfig user to use"),
    GlobalFlag(("--as",), "as_user", "user to impersonate"),
    GlobalFlag(("--as-group",), "as_group", "group to impersonate (repeatable)", repeatable=True),
    GlobalFlag(("--as-uid",), "as_uid", "UID to impersonate"),
    GlobalFlag(("-s", "--server"), "server", "address of the Kubernetes API server"),
    GlobalFlag(("--request-timeout",), "request_timeout", "how long to wait for a single server request"),
)
_BY_NAME = {name: flag for flag in GLOBAL_FLAGS for name in flag.names}


@dataclass
class GlobalOptions:
    """The kubectl global flags found on the command line, by ``GlobalFlag.dest``."""

    values: dict[str, list[str]] = field(default_factory=dict)

    def get(self, dest: str) -> str | None:
        found = self.values.get(dest)
        return found[-1] if found else None

    @property
    def namespace(self) -> str | None:
        return self.get("namespace")

    def kubectl_args(self) -> list[str]:
        """``--flag=value`` for every flag but the namespace, in the order of :data:`GLOBAL_FLAGS`."""
        args: list[str] = []
        for flag in GLOBAL_FLAGS:
            if flag.dest == "namespace" or flag.dest not in self.values:
                continue
            option = flag.names[-1]
            chosen = self.values[flag.dest] if flag.repeatable else self.values[flag.dest][-1:]
            args.extend(f"{option}={value}" for value in chosen)
        return args


def split_global_flags(argv: Sequence[str]) -> tuple[GlobalOptions, list[str]]:
    """Take kubectl's global flags out of ``argv`` wherever they are (up to ``--``); return the rest."""
    options = GlobalOptions()
    rest: list[str] = []
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            rest.extend(words[index - 1 :])
            break
        name, equals, value = word.partition("=")
        if name.startswith("-n") and not name.startswith("--") and len(name) > 2 and not equals:
            name, value, equals = "-n", name[2:], "="
        flag = _BY_NAME.get(name)
        if flag is None:
            rest.append(word)
            continue
        if not equals:
            if index >= len(words):
                raise PluginError(f"flag needs an argument: {name}")
            value = words[index]
            index += 1
        options.values.setdefault(flag.dest, []).append(value)
    return options, rest


class Kubectl:
    """Runs kubectl with the user's global flags."""

    def __init__(self, options: GlobalOptions) -> None:
        self.base = ["kubectl", *options.kubectl_args()]
        self.namespace: str | None = options.namespace

    def run(self, *args: str, namespaced: bool = True) -> str:
        command = [*self.base]
        if namespaced and self.namespace:
            command.append(f"--namespace={self.namespace}")
        command.extend(args)
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise PluginError("kubectl is not on PATH") from None
        if result.returncode != 0:
            raise PluginError(result.stderr.strip() or f"kubectl exited with {result.returncode}")
        return result.stdout

    def get(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", RESOURCE, name, "-o", "json"))
        return body

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body


def handler_of(spec: str) -> Callable[..., int]:
    """``"<module>:<function>"`` of :mod:`sundial.cli`, imported on use (see the module docstring)."""
    module, _, function = spec.partition(":")
    found: Callable[..., int] = getattr(importlib.import_module(f"sundial.cli.{module}"), function)
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubectl sundial",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kubectl = parser.add_argument_group("kubectl global flags (accepted anywhere on the line)")
    for flag in GLOBAL_FLAGS:
        kubectl.add_argument(*flag.names, dest=flag.dest, metavar=flag.dest.upper(), help=flag.help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add = functools.partial(_add_command, commands)
    _add_reading_commands(add)
    _add_writing_commands(add)
    return parser


_Add = Callable[..., argparse.ArgumentParser]


def _add_command(
    commands: Any, name: str, handler: str, helptext: str, *, aliases: Sequence[str] = ()
) -> argparse.ArgumentParser:
    description = helptext[:1].upper() + helptext[1:] + "."
    sub: argparse.ArgumentParser = commands.add_parser(
        name, aliases=list(aliases), help=helptext, description=description
    )
    sub.set_defaults(handler=handler)
    return sub


def output(sub: argparse.ArgumentParser, *choices: str, default: str | None = None) -> None:
    sub.add_argument("-o", "--output", choices=choices, default=default, help="output format")


def _add_reading_commands(add: _Add) -> None:
    get = add("get", "plugin_commands:cmd_get", "list ScheduledJobs with their next and last runs", aliases=("list",))
    get.add_argument("names", nargs="*", metavar="NAME")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    output(get, "wide", "json", "yaml", "name")

    describe = add("describe", "plugin_commands:cmd_describe", "show next run times, conditions, runs and dead letters")
    describe.add_argument("name", nargs="?", metavar="NAME")
    describe.add_argument("-A", "--all-namespaces", action="store_true", help="describe across all namespaces")
    describe.add_argument("--count", type=int, default=5, help="how many next run times (default: 5)")
    output(describe, "json", "yaml", "name")

    preview = add("preview", "plugin_commands:cmd_preview", "print the next nominal run times of a ScheduledJob")
    preview.add_argument("name", metavar="NAME")
    preview.add_argument("--count", type=int, default=5, help="how many run times (default: 5)")
    output(preview, "table", "json", "yaml", default="table")

    version = add(
        "version",
        "plugin_versions:cmd_version",
        "print the plugin's version and, if reachable, the operator's and CRD's",
    )
    version.add_argument("--client", action="store_true", help="the plugin's version only")
    output(version, "json", "yaml")

    completion = add("completion", "plugin_completions:cmd_completion", "print a shell completion script")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"))


def _add_writing_commands(add: _Add) -> None:
    for name, handler, helptext in (
        ("trigger", "plugin_commands:cmd_trigger", "request one run now (annotation sundial.dev/trigger)"),
        (
            "redrive",
            "plugin_commands:cmd_redrive",
            "give every dead letter new attempts (annotation sundial.dev/redrive)",
        ),
    ):
        sub = add(name, handler, helptext)
        sub.add_argument("name", metavar="NAME")
        sub.add_argument("--wait", action="store_true", help="wait until the operator handled the request")
        sub.add_argument("--timeout", type=float, default=60.0, help="seconds to wait (default: 60)")
        output(sub, "json", "yaml", "name")

    backfill = add(
        "backfill",
        "plugin_backfills:cmd_backfill",
        "run every nominal time in a range that has no run yet (annotation sundial.dev/backfill)",
    )
    backfill.add_argument("name", metavar="NAME")
    backfill.add_argument("--from", dest="start", required=True, metavar="TIME", help="RFC 3339 time, or now")
    backfill.add_argument("--to", dest="end", required=True, metavar="TIME", help="RFC 3339 time, or now")
    backfill.add_argument("--max-runs", type=int, default=100, help="at most this many runs (default: 100)")
    backfill.add_argument("--wait", action="store_true", help="wait until every time of the range was handled")
    backfill.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (default: 600)")
    output(backfill, "json", "yaml", "name")

    create = add("create", "plugin_commands:cmd_create_job", "create a resource from a ScheduledJob (only: job)")
    create.add_argument("kind", choices=("job",), metavar="job")
    create.add_argument(
        "name", metavar="NAME", help="names the request (the trigger token); the operator names the Job"
    )
    create.add_argument("--from", dest="source", required=True, metavar="scheduledjob/NAME", help="the ScheduledJob")
    create.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the Job (default: 60)")
    output(create, "json", "yaml", "name")

    for name, handler, helptext in (
        (
            "suspend",
            "plugin_commands:cmd_suspend",
            "set spec.suspend=true (for GitOps-managed objects, change Git instead)",
        ),
        ("resume", "plugin_commands:cmd_resume", "set spec.suspend=false"),
    ):
        sub = add(name, handler, helptext)
        sub.add_argument("name", metavar="NAME")
        output(sub, "name")


def _system_now() -> datetime:
    return datetime.now(UTC)


def main(argv: Sequence[str] | None = None, *, now: Clock = _system_now) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if words[:1] == ["__complete"]:
        from sundial.cli import plugin_completions  # noqa: PLC0415

        return plugin_completions.complete(words[1:], parser=parser)
    try:
        options, rest = split_global_flags(words)
    except PluginError as error:
        parser.error(str(error))
    args = parser.parse_args(rest)
    try:
        return handler_of(args.handler)(args, Kubectl(options), now)
    except PluginError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def complete_main() -> int:
    """``kubectl_complete-sundial``: kubectl runs it with the words after ``kubectl sundial``."""
    return main(["__complete", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
