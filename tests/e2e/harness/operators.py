"""The operator under test: ``python -m sundial run`` as a subprocess (:class:`Operator`), started and
stopped by an :class:`OperatorLauncher` (the ``start_operator`` / ``start_module_operator`` fixtures)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import REPO, Cluster, WaitTimeoutError


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 3.0) -> tuple[int, str]:
    """(status, body) of a GET; (0, "") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


@dataclass
class Operator:
    """One ``sundial run`` subprocess started by :func:`start_operator`."""

    process: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    health_url: str
    lease_prefix: str
    lease_namespace: str
    identity: str
    namespaces: tuple[str, ...]
    command: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def lease_names(self) -> list[str]:
        """The shard Leases (shard 0 only unless started with ``--shards``)."""
        shards = 1
        if "--shards" in self.command:
            shards = int(self.command[self.command.index("--shards") + 1])
        return [f"{self.lease_prefix}-shard-{i}" for i in range(shards)]

    def alive(self) -> bool:
        return self.process.poll() is None

    def probe(self, path: str) -> int:
        """HTTP status of GET <health port><PATH> (``/healthz``, ``/readyz``); 0 when nothing answers."""
        return http_get(self.health_url + path)[0]

    def ready(self) -> bool:
        return self.alive() and self.probe("/readyz") == 200

    def metrics(self) -> str:
        code, text = http_get(self.metrics_url)
        if code != 200:
            raise AssertionError(f"GET {self.metrics_url} answered {code}")
        return text

    def kill(self, sig: int = signal.SIGKILL, timeout: float | None = 20.0) -> int | None:
        """Send SIG (if still running); with a TIMEOUT wait that long for the exit. The exit code, or None."""
        if self.alive():
            self.process.send_signal(sig)
        if timeout is None:
            return self.process.poll()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 20.0) -> int:
        """Graceful stop (SIGTERM: releases its Leases); SIGKILL when it has not exited within TIMEOUT."""
        code = self.kill(signal.SIGTERM, timeout=timeout)
        if code is None:
            self.process.kill()
            code = self.process.wait()
        return code

    def log_tail(self, lines: int = 80) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class OperatorLauncher:
    """``launcher(*extra_args, namespaces=..., lease_prefix=..., env=...) -> Operator``; :meth:`close`
    stops everything it started."""

    def __init__(self, cluster: Cluster, directory: Path) -> None:
        self.cluster = cluster
        self.directory = directory
        self.started: list[Operator] = []

    def __call__(
        self,
        *extra_args: str,
        namespaces: Sequence[str],
        lease_prefix: str | None = None,
        lease_namespace: str = "default",
        identity: str | None = None,
        env: Mapping[str, str] | None = None,
        log_format: str = "json",
        wait_ready: bool = True,
        ready_timeout: float = 60.0,
        kubeconfig: Path | None = None,
    ) -> Operator:
        """Start ``python -m sundial run``. NAMESPACES: the ``--namespace`` flags; ``()`` = cluster-wide.
        LEASE_PREFIX: default a fresh one (replicas that should compete for one Lease pass the same).
        EXTRA_ARGS go last (e.g. ``"--lease-duration", "4"``). With WAIT_READY, returns once /readyz is 200.
        KUBECONFIG: the operator's credentials (default the cluster's admin kubeconfig), e.g. a
        ServiceAccount token to run under an install's RBAC."""
        index = len(self.started)
        identity = identity or f"e2e-operator-{index}-{uuid.uuid4().hex[:4]}"
        prefix = lease_prefix or f"e2e-{uuid.uuid4().hex[:6]}"
        metrics_port, health_port = free_port(), free_port()
        command = [
            sys.executable, "-m", "sundial", "run",
            "--kubeconfig", str(kubeconfig or self.cluster.kubeconfig),
            "--lease-namespace", lease_namespace,
            "--lease-name-prefix", prefix,
            "--identity", identity,
            "--metrics-port", str(metrics_port),
            "--health-port", str(health_port),
            "--log-format", log_format,
        ]  # fmt: skip
        for name in namespaces:
            command += ["--namespace", name]
        command += list(extra_args)
        log = self.directory / f"operator-{index}-{identity}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                command,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, **(env or {})},
            )
        operator = Operator(
            process=process,
            log=log,
            metrics_url=f"http://127.0.0.1:{metrics_port}/metrics",
            health_url=f"http://127.0.0.1:{health_port}",
            lease_prefix=prefix,
            lease_namespace=lease_namespace,
            identity=identity,
            namespaces=tuple(namespaces),
            command=command,
        )
        self.started.append(operator)
        if wait_ready:
            try:
                self.cluster.wait_for(
                    lambda: operator.ready() or not operator.alive() or None,
                    timeout=ready_timeout,
                    message=f"/readyz of operator {identity}",
                )
            except WaitTimeoutError as error:
                raise AssertionError(f"{error}\n--- operator log:\n{operator.log_tail()}") from None
            if not operator.alive():
                raise AssertionError(
                    f"operator {identity} exited with {operator.process.returncode}:\n{operator.log_tail()}"
                )
        return operator

    def close(self, *, show_logs: bool = True, deadline: float = 20.0) -> None:
        for operator in self.started:
            if operator.alive():
                operator.process.send_signal(signal.SIGTERM)
        for operator in self.started:
            try:
                operator.process.wait(timeout=deadline)
            except subprocess.TimeoutExpired:
                operator.process.kill()
                operator.process.wait()
            if show_logs:
                print(
                    f"--- operator {operator.identity} (exit {operator.process.returncode}, log {operator.log}):\n"
                    + operator.log_tail()
                )
