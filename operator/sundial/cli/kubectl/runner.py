"""The bottom of ``kubectl sundial``: the kubectl runner and its error, kubectl's global flags, and how a verb
module adds its sub-command (``add_command`` with the handler itself, the function that runs the command).

Every other module of the plugin may import this one; it imports nothing but the standard library, so it
loads no Kubernetes client or pydantic.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

RESOURCE = "scheduledjobs.sundial.dev"

Clock = Callable[[], datetime]


class PluginError(RuntimeError):
    """A failed kubectl call or an unusable object; printed without a traceback."""


class UnreachableError(PluginError):
    """kubectl could not reach the API server (refused, unknown host, timeout): says so in one line."""


class LoginError(PluginError):
    """The API server refused the credentials (an expired token or certificate, a failed exec plugin)."""


class MissingCRDError(PluginError):
    """The API server has no ScheduledJob resource: Sundial's CRDs are not installed."""


INSTALL_HINT = (
    "install Sundial first: `helm install sundial charts/sundial -n sundial-system --create-namespace` or "
    "`kubectl apply --server-side -k config/default` (docs/install.md)"
)
#: The operator's Deployments: the chart and the kustomize base both label them so.
OPERATOR_SELECTOR = "app.kubernetes.io/name=sundial"

_KLOG_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")
_UNREACHABLE = (
    "The connection to the server",
    "Unable to connect to the server",
    "couldn't get current server API group list",
)
_LOGIN = (
    "You must be logged in to the server",
    "the server has asked for the client to provide credentials",
    "getting credentials: exec",
)
_NO_RESOURCE = "the server doesn't have a resource type"


def failure(stderr: str, returncode: int) -> PluginError:
    """The error of a failed kubectl call: its message without client-go's log lines (``E1201 ...
    memcache.go:265] ...``, repeated once per discovery attempt) and without kubectl's own ``error:`` prefix;
    a :class:`LoginError` when the server refused the credentials (checked first: client-go's discovery logs
    an expired login as an API group list it could not get), an :class:`UnreachableError` naming only kubectl's
    own summary when the server could not be reached, a :class:`MissingCRDError` saying how to install Sundial
    when the server has no ScheduledJob resource."""
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    plain = [line for line in lines if not _KLOG_LINE.match(line)] or lines
    plain = [_KLOG_LINE.sub("", line).strip().removeprefix("error: ") for line in plain]
    if any(marker in line for line in lines for marker in _LOGIN):
        summary = next((line for line in reversed(plain) if any(m in line for m in _LOGIN)), plain[-1])
        return LoginError(
            f"the cluster refused your credentials (an expired or invalid login): {summary}; "
            "log in again or refresh the kubeconfig's user"
        )
    if any(marker in line for line in lines for marker in _UNREACHABLE):
        summary = next((line for line in reversed(plain) if any(m in line for m in _UNREACHABLE[:2])), plain[-1])
        return UnreachableError(f"the cluster is unreachable: {summary}")
    if any(_NO_RESOURCE in line for line in plain):
        summary = next(line for line in plain if _NO_RESOURCE in line)
        return MissingCRDError(
            f"{summary}: Sundial's CRDs are not installed on this cluster; {INSTALL_HINT}; "
            "`kubectl sundial check` says what else is missing"
        )
    return PluginError("\n".join(plain) or f"kubectl exited with {returncode}")


@dataclass(frozen=True)
class GlobalFlag:
    """One of kubectl's global flags (``kubectl options``): one that takes a value, or a switch."""

    names: tuple[str, ...]
    dest: str
    help: str
    repeatable: bool = False
    switch: bool = False


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
    GlobalFlag(("--token",), "token", "bearer token for the API server"),
    GlobalFlag(("--username",), "username", "username for basic authentication"),
    GlobalFlag(("--password",), "password", "password for basic authentication"),
    GlobalFlag(("--certificate-authority",), "certificate_authority", "path to a CA certificate file"),
    GlobalFlag(("--client-certificate",), "client_certificate", "path to a client certificate file"),
    GlobalFlag(("--client-key",), "client_key", "path to a client key file"),
    GlobalFlag(("--tls-server-name",), "tls_server_name", "server name for the server certificate's check"),
    GlobalFlag(
        ("--insecure-skip-tls-verify",), "insecure_skip_tls_verify", "skip the server certificate's check", switch=True
    ),
    GlobalFlag(("--cache-dir",), "cache_dir", "kubectl's discovery cache directory"),
    GlobalFlag(("--disable-compression",), "disable_compression", "no response compression", switch=True),
    GlobalFlag(("--match-server-version",), "match_server_version", "require the server's version", switch=True),
    GlobalFlag(("--warnings-as-errors",), "warnings_as_errors", "treat server warnings as errors", switch=True),
    GlobalFlag(("--profile",), "profile", "name of the profile to capture"),
    GlobalFlag(("--profile-output",), "profile_output", "file to write the profile to"),
    GlobalFlag(("-v", "--v"), "v", "log level verbosity of kubectl"),
    GlobalFlag(("--vmodule",), "vmodule", "per-file log verbosity of kubectl"),
    GlobalFlag(("--log-flush-frequency",), "log_flush_frequency", "seconds between log flushes"),
)
_BY_NAME = {name: flag for flag in GLOBAL_FLAGS for name in flag.names}
#: Short flags that take a value may be joined to it (``-nteam-a``, ``-v6``).
_JOINABLE = {name: flag for name, flag in _BY_NAME.items() if len(name) == 2 and not flag.switch}


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
    """Take kubectl's global flags out of ``argv`` wherever they are (up to ``--``); return the rest.

    A flag with a value is ``--flag value`` or ``--flag=value`` (a short one also ``-n value``, ``-nvalue``);
    a switch is ``--flag`` or ``--flag=true|false``."""
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
        if name[:2] in _JOINABLE and len(name) > 2 and not equals:
            name, value, equals = name[:2], name[2:], "="
        flag = _BY_NAME.get(name)
        if flag is None:
            rest.append(word)
            continue
        if flag.switch:
            if equals and value.lower() not in ("true", "false"):
                raise PluginError(f"{name}: must be true or false, not {value!r}")
            value = value.lower() if equals else "true"
        elif not equals:
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

    def run(self, *args: str, namespaced: bool = True, stdin: str | None = None) -> str:
        """kubectl's output of ``kubectl ARGS`` (``STDIN`` as its input, for ``-f -``)."""
        command = [*self.base]
        if namespaced and self.namespace:
            command.append(f"--namespace={self.namespace}")
        command.extend(args)
        try:
            result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise PluginError("kubectl is not on PATH") from None
        if result.returncode != 0:
            raise failure(result.stderr, result.returncode)
        return result.stdout

    def get(self, name: str) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", RESOURCE, name, "-o", "json"))
        return body

    def stream(self, *args: str, namespaced: bool = True) -> Iterator[dict[str, Any]]:
        """The objects ``kubectl ARGS -o json`` prints one after another while it runs (``get -w``), each as
        soon as kubectl printed it; raises the call's error when kubectl fails."""
        command = [*self.base]
        if namespaced and self.namespace:
            command.append(f"--namespace={self.namespace}")
        command.extend([*args, "-o", "json"])
        with tempfile.TemporaryFile("w+") as errors:
            try:
                process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)
            except FileNotFoundError:
                raise PluginError("kubectl is not on PATH") from None
            try:
                assert process.stdout is not None
                yield from json_documents(process.stdout)
            finally:
                if process.poll() is None:
                    process.terminate()
                returncode = process.wait()
            if returncode != 0:
                errors.seek(0)
                raise failure(errors.read(), returncode)

    def get_json(self, *args: str, namespaced: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.run("get", *args, "-o", "json", namespaced=namespaced))
        return body


def json_documents(lines: Iterator[str] | Any) -> Iterator[dict[str, Any]]:
    """The JSON objects in LINES, one after another as kubectl prints them (each ends with a ``}`` line)."""
    buffer: list[str] = []
    for line in lines:
        buffer.append(line)
        if line.rstrip("\n") == "}":
            document: dict[str, Any] = json.loads("".join(buffer))
            buffer.clear()
            yield document


def listing_args(*, names: Sequence[str], all_namespaces: bool, selector: str | None = None) -> list[str]:
    """The words after ``kubectl get`` that list these ScheduledJobs."""
    args = [RESOURCE, *names]
    if all_namespaces and not names:
        args.append("--all-namespaces")
    if selector:
        args.extend(["-l", selector])
    return args


def scheduled_jobs(
    kubectl: Kubectl, *, names: Sequence[str], all_namespaces: bool, selector: str | None = None
) -> list[dict[str, Any]]:
    """The ScheduledJobs named (all of the namespace without names, of every namespace with ``all_namespaces``),
    only those matching the label ``selector`` when one is given."""
    args = listing_args(names=names, all_namespaces=all_namespaces, selector=selector)
    body = kubectl.get_json(*args, namespaced=not (all_namespaces and not names))
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
