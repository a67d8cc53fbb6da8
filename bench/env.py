"""The bench's environment: a fresh sandbox per scenario, the controller manager's flags, the operator and the
independent watcher as subprocesses, process CPU/RSS from ``/proc``, the API server's own ``/metrics``."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sundial_sandbox import Sandbox, install_crds
from sundial_sandbox.api import probe_https
from sundial_sandbox.processes import ProcessTable

REPO = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
KCM = "kube-controller-manager"

T = TypeVar("T")


def load() -> tuple[float, float, float]:
    one, five, fifteen = os.getloadavg()
    return round(one, 2), round(five, 2), round(fifteen, 2)


def machine() -> dict[str, Any]:
    meminfo = Path("/proc/meminfo").read_text(encoding="utf-8").split("\n")[0].split()
    model = ""
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gb": round(int(meminfo[1]) / 1024 / 1024, 1),
        "python": sys.version.split()[0],
        "kernel": os.uname().release,
    }


def cpu_seconds(pid: int) -> float:
    """utime + stime of PID (and its waited-for children) in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """PID's resident set (``field="VmHWM"``: its high-water mark since start) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_status(url: str, timeout: float = 2.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def http_text(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return str(response.read().decode())


def parse_rfc3339(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# -- the control plane -------------------------------------------------------------------------------------


class BenchCluster:
    """A fresh sandbox in a temporary directory (removed at close unless KEEP)."""

    def __init__(self, name: str, keep: bool = False) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=f"sundial-bench-{name}-"))
        self.keep = keep
        self.sandbox = Sandbox(self.directory / "sandbox")
        self.kubeconfig = self.sandbox.start()
        self.kcm_flags: list[str] = []
        try:
            install_crds(self.kubeconfig, REPO / "crds")
        except BaseException:
            self.close()  # the caller never gets an object to close: do not leak the control plane
            raise

    def pid(self, component: str) -> int:
        for record in ProcessTable(self.sandbox.directory).records():
            if record.name == component:
                return record.pid
        raise KeyError(component)

    def restart_kcm(self, extra: Sequence[str]) -> None:
        """Restart the controller manager with its original flags plus EXTRA (e.g. ``--kube-api-qps=50``)."""
        table = ProcessTable(self.sandbox.directory)
        record = next(r for r in table.records() if r.name == KCM)
        base = [arg for arg in record.argv if not any(arg.startswith(f.split("=")[0] + "=") for f in self.kcm_flags)]
        os.killpg(record.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while table.alive(record) and time.monotonic() < deadline:
            time.sleep(0.1)
        if table.alive(record):
            os.killpg(record.pid, signal.SIGKILL)
            time.sleep(0.5)
        self.kcm_flags = list(extra)
        table.start(KCM, [*base, *extra], env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"})
        state = json.loads((self.sandbox.directory / "state.json").read_text(encoding="utf-8"))
        port = state["ports"]["controller_manager"]
        deadline = time.monotonic() + 60
        while not probe_https(f"https://127.0.0.1:{port}/healthz"):
            if time.monotonic() > deadline:
                raise RuntimeError("controller manager did not come back")
            time.sleep(0.3)
        time.sleep(2.0)  # informers sync

    def close(self) -> None:
        self.sandbox.stop()
        if not self.keep:
            shutil.rmtree(self.directory, ignore_errors=True)


def run_on_cluster(
    name: str,
    out: Path,
    scenario: Callable[[BenchCluster], Coroutine[Any, Any, T]],
    cluster: BenchCluster | None = None,
) -> T:
    """A scenario's ``run()``: create OUT, then run SCENARIO(cluster) to completion on CLUSTER (left running), or
    on a fresh sandbox named after NAME, closed afterwards."""
    out.mkdir(parents=True, exist_ok=True)
    if cluster is not None:
        return asyncio.run(scenario(cluster))
    cluster = BenchCluster(name)
    try:
        return asyncio.run(scenario(cluster))
    finally:
        cluster.close()


# -- the API server's own metrics --------------------------------------------------------------------------


def operator_requests(text: str, *, with_code: bool = True) -> dict[str, float]:
    """The operator's ``sundial_api_requests_total`` by ``verb|resource|code`` (``verb|resource``, codes
    summed, without ``with_code``)."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("sundial_api_requests_total{"):
            labels_text, value = line[len("sundial_api_requests_total{") :].rsplit("} ", 1)
            labels = {k: v.strip('"') for k, v in (p.split("=", 1) for p in labels_text.split('",') if "=" in p)}
            key = f"{labels.get('verb')}|{labels.get('resource')}"
            if with_code:
                key += f"|{labels.get('code')}"
            totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def parse_requests(text: str, metric: str = "apiserver_request_total") -> dict[tuple[str, str, str], float]:
    """``apiserver_request_total`` (or another METRIC with those labels, e.g.
    ``apiserver_request_duration_seconds_sum``) summed by (verb, group/resource, subresource)."""
    totals: dict[tuple[str, str, str], float] = defaultdict(float)
    prefix = metric + "{"
    for line in text.splitlines():
        if not line.startswith(prefix):
            continue
        labels_text, value = line[len(prefix) :].rsplit("} ", 1)
        labels = dict(part.split("=", 1) for part in labels_text.split('",') if "=" in part)
        labels = {k: v.strip('"') for k, v in labels.items()}
        resource = (labels.get("group", "") + "/" if labels.get("group") else "") + labels.get("resource", "")
        totals[(labels.get("verb", ""), resource, labels.get("subresource", ""))] += float(value)
    return dict(totals)


def delta(
    after: dict[tuple[str, str, str], float], before: dict[tuple[str, str, str], float]
) -> dict[tuple[str, str, str], float]:
    return {key: after[key] - before.get(key, 0.0) for key in after if after[key] - before.get(key, 0.0) > 0}


# -- the operator ------------------------------------------------------------------------------------------


@dataclass
class Operator:
    process: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    health_url: str
    identity: str
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def ready(self) -> bool:
        return http_status(self.health_url + "/readyz") == 200

    def wait_ready(self, timeout: float = 120.0) -> float:
        """Seconds from process start to /readyz 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return time.monotonic() - self.started
            if not self.alive():
                raise RuntimeError(f"operator exited: {self.log.read_text()[-3000:]}")
            time.sleep(0.1)
        raise RuntimeError("operator not ready in time")

    def metric(self, name: str) -> float:
        total = 0.0
        for line in http_text(self.metrics_url).splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def metrics(self) -> str:
        return http_text(self.metrics_url)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        if self.alive():
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_operator(
    kubeconfig: Path,
    directory: Path,
    *args: str,
    identity: str = "bench-0",
    lease_prefix: str = "bench",
    env: dict[str, str] | None = None,
) -> Operator:
    metrics_port, health_port = free_port(), free_port()
    command = [
        sys.executable, "-m", "sundial", "run",
        "--kubeconfig", str(kubeconfig),
        "--lease-name-prefix", lease_prefix,
        "--identity", identity,
        "--metrics-port", str(metrics_port),
        "--health-port", str(health_port),
        "--log-format", "json",
        "--log-level", "WARNING",
        *args,
    ]  # fmt: skip
    log = directory / f"operator-{identity}.log"
    directory.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, env={**os.environ, **(env or {})}
        )
    return Operator(
        process, log, f"http://127.0.0.1:{metrics_port}/metrics", f"http://127.0.0.1:{health_port}", identity
    )


# -- the independent watch ---------------------------------------------------------------------------------


class JsonLines:
    """The records of a JSON-lines file another process appends to, read incrementally: each :meth:`read` parses
    only the complete lines added since the last one (a line being written waits for the next call). The herd
    polls its watcher's file every half second through many repetitions; re-reading the whole file each time made
    the bench's own CPU grow with every repetition, on the cores the contenders share."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._records: list[dict[str, Any]] = []
        self._offset = 0

    def read(self) -> list[dict[str, Any]]:
        """Every record so far (a new list)."""
        if self.path.exists():
            with self.path.open("rb") as source:
                source.seek(self._offset)
                added = source.read()
            complete = added[: added.rfind(b"\n") + 1]
            self._offset += len(complete)
            for line in complete.splitlines():
                try:
                    self._records.append(json.loads(line))
                except ValueError:
                    continue
        return list(self._records)


class JobWatch:
    """``python -m bench.watcher`` in its own process; :meth:`records` reads what it wrote so far."""

    def __init__(self, kubeconfig: Path, out: Path) -> None:
        self.out = out
        self._lines = JsonLines(out)
        out.unlink(missing_ok=True)  # never mix in an earlier run's records (same namespaces and Job names)
        ready = out.with_suffix(out.suffix + ".ready")
        ready.unlink(missing_ok=True)
        self.process = subprocess.Popen([sys.executable, "-m", "bench.watcher", str(kubeconfig), str(out)], cwd=REPO)
        deadline = time.monotonic() + 60
        while not ready.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("watcher did not start")
            time.sleep(0.1)

    def records(self) -> list[dict[str, Any]]:
        return self._lines.read()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
