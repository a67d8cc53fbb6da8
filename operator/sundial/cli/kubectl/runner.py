"""The bottom of ``kubectl sundial``: the kubectl runner and its error, kubectl's global flags, and how a verb
module adds its sub-command (``add_command`` with the handler itself, the function that runs the command).

Every other module of the plugin may import this one; it imports nothing but the standard library, so it
loads no Kubernetes client, kopf or pydantic.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

RESOURCE = "scheduledjobs.sundial.dev"

Clock = Callable[[], datetime]


class PluginError(RuntimeError):
    """A failed kubectl call or an unusable object; printed without a traceback."""


class UnreachableError(PluginError):
    """kubectl could not reach the API server (refused, unknown host, timeout): says so in one line."""


_KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")
_UNREACHABLE = (
    "The connection to the server",
    "Unable to connect to the server",
    "couldn't get current server API group list",
)


def failure(stderr: str, returncode: int) -> PluginError:
    """The error of a failed kubectl call: its message without client-go's log lines (``E1201 ...
    memcache.go:265] ...``, repeated once per discovery attempt) when kubectl said something else too, and an
    :class:`UnreachableError` naming only kubectl's own summary when the server could not be reached."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    plain = [line for line in lines if not _KLOG_LINE.match(line)] or lines
    if any(marker in line for line in lines for marker in _UNREACHABLE):
        summary = next((line for line in reversed(plain) if any(m in line for m in _UNREACHABLE[:2])), plain[-1])
        return UnreachableError(f"the cluster is unreachable: {_KLOG_LINE.sub('', summary).strip()}")
    return PluginError("\n".join(plain) or f"kubectl exited with {returncode}")


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
            raise failure(result.stderr, result.returncode)
        return result.stdout

    def get(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", RESOURCE, name, "-o", "json"))
        return body

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body


def scheduled_jobs(kubectl: Kubectl, *, names: Sequence[str], all_namespaces: bool) -> list[dict[str, Any]]:
    """The ScheduledJobs named (all of the namespace without names, of every namespace with ``all_namespaces``)."""
    if names:
        body = kubectl.get_json(RESOURCE, *names)
    elif all_namespaces:
        body = kubectl.get_json(RESOURCE, "--all-namespaces", namespaced=False)
    else:
        body = kubectl.get_json(RESOURCE)
    items: list[dict[str, Any]] = body.get("items") or [] if body.get("kind", "").endswith("List") else [body]
    return items


Handler = Callable[[argparse.Namespace, Kubectl, Clock], int]
"""Runs one command: the parsed arguments, the kubectl runner, the clock; returns the exit code."""


def add_command(
    commands: Any, name: str, handler: Handler, helptext: str, *, aliases: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """Add the sub-command ``name`` to ``commands`` (the sub-parsers of :func:`~.main.build_parser`), run by
    ``handler``; its description is ``helptext`` as a sentence."""
    description = helptext[:1].upper() + helptext[1:] + "."
    sub: argparse.ArgumentParser = commands.add_parser(
        name, aliases=list(aliases), help=helptext, description=description
    )
    sub.set_defaults(handler=handler)
    return sub
