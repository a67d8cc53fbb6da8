"""Operator replicas as separate ``python -m sundial run`` processes competing for one Lease.

Each replica has a fixed identity (``--identity``, so the Lease names the holder) and its own kubeconfig
(the API server, or its own fault-proxy listener). Replicas can be SIGKILLed, SIGSTOPped/SIGCONTed,
stopped and started again with the same identity.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]

#: Short leases so failover fits in seconds: a standby takes over LEASE_DURATION after the last renewal.
LEASE_ARGS = ("--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1")
LEASE_DURATION = 4.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Replica:
    identity: str
    kubeconfig: Path
    log: Path
    namespaces: tuple[str, ...]
    lease_prefix: str
    env: dict[str, str] = field(default_factory=dict)
    lease_args: tuple[str, ...] = LEASE_ARGS
    extra_args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    metrics_port: int = 0
    """Of the current process (``/metrics`` on 127.0.0.1)."""
    health_port: int = 0
    """Of the current process (``/healthz``, ``/readyz`` on 127.0.0.1)."""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        if self.alive():
            return
        self.metrics_port, self.health_port = free_port(), free_port()
        command = [
            sys.executable, "-m", "sundial", "run",
            "--kubeconfig", str(self.kubeconfig),
            "--lease-namespace", "default",
            "--lease-name-prefix", self.lease_prefix,
            "--identity", self.identity,
            "--metrics-port", str(self.metrics_port),
            "--health-port", str(self.health_port),
            "--log-format", "json",
            *self.lease_args,
            *self.extra_args,
        ]  # fmt: skip
        for namespace in self.namespaces:
            command += ["--namespace", namespace]
        self.starts += 1
        with self.log.open("ab") as sink:
            sink.write(f"\n===== start {self.starts}: {' '.join(command)}\n".encode())
            sink.flush()
            self.process = subprocess.Popen(
                command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, **self.env}
            )

    def signal(self, sig: int) -> None:
        if self.alive():
            assert self.process is not None
            self.process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL (no lease release) and reap."""
        if self.process is None:
            return
        if self.alive():
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait(timeout=20)

    def stop(self) -> None:
        """Graceful: SIGTERM (the Lease is released), SIGKILL after 20 s."""
        if self.process is None or not self.alive():
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def metrics(self) -> str:
        """The replica's ``/metrics`` text ("" when it does not answer)."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=3) as response:
                return str(response.read().decode())
        except OSError:
            return ""

    def probe(self, path: str) -> int:
        """HTTP status of GET PATH (``/readyz``, ``/healthz``) on the health port; 0 when nothing answers."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}{path}", timeout=2) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except OSError:
            return 0

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


class Fleet:
    def __init__(self, replicas: Sequence[Replica], lease_reader: Callable[[], Mapping[str, Any]]) -> None:
        self.replicas = {replica.identity: replica for replica in replicas}
        self._lease = lease_reader

    def start(self) -> None:
        for replica in self.replicas.values():
            replica.start()

    def stop(self) -> None:
        for replica in self.replicas.values():
            replica.stop()

    def lease(self) -> Mapping[str, Any]:
        return self._lease()

    def holder(self) -> Replica | None:
        identity = self.lease().get("holderIdentity")
        return self.replicas.get(str(identity)) if identity else None

    def wait_for_holder(self, timeout: float, *, other_than: str | None = None) -> Replica:
        """Poll the Lease until a live replica (not OTHER_THAN) holds it."""
        deadline = time.monotonic() + timeout
        while True:
            holder = self.holder()
            if holder is not None and holder.alive() and holder.identity != other_than:
                return holder
            if time.monotonic() > deadline:
                raise AssertionError(f"no live Lease holder after {timeout:.0f}s (lease: {dict(self.lease())})")
            time.sleep(0.3)

    def holder_record(self, timeout: float) -> tuple[Replica, Mapping[str, Any]]:
        """Poll until one Lease read names a live holder: (that replica, that read)."""
        deadline = time.monotonic() + timeout
        while True:
            record = self.lease()
            replica = self.replicas.get(str(record.get("holderIdentity") or ""))
            if replica is not None and replica.alive():
                return replica, record
            if time.monotonic() > deadline:
                raise AssertionError(f"no live Lease holder after {timeout:.0f}s (lease: {dict(record)})")
            time.sleep(0.3)

    def tails(self, lines: int = 40) -> str:
        out = []
        for replica in self.replicas.values():
            text = replica.log_text().splitlines()[-lines:]
            out.append(f"--- {replica.identity} (exit {replica.exit_code()})\n" + "\n".join(text))
        return "\n".join(out)


def lease_spec(kubectl: Callable[..., subprocess.CompletedProcess[str]], name: str) -> dict[str, Any]:
    result = kubectl("get", "lease", name, "-n", "default", "-o", "json", check=False)
    if result.returncode != 0:
        return {}
    spec: dict[str, Any] = json.loads(result.stdout).get("spec") or {}
    return spec
