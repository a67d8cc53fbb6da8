"""sharding (issue 8): herd completion time and operator CPU per run with 1 versus 3 replicas.

``python -m bench.sharding [--kubeconfig K | --sandbox-dir D] [--objects 300] [--herds 3] [--replicas 1,3]``

For each replica count R, in a namespace of its own: N ScheduledJobs due every PERIOD seconds (Jobs created
suspended: no pods, so the controller manager does not compete), R ``sundial run --shards 12`` processes;
once the shard Leases are balanced, K herds are measured:

* herd completion = receive time (an independent ``kubectl get jobs --watch``) of the herd's last Job minus
  its nominal time; also the median Job;
* CPU per run = utime+stime of all R operator processes over the measured herds / the runs they created.

Writes ``results.json`` and ``report.md`` to ``--out`` (default ``bench/results/sharding-<UTC time>``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import env
from bench.stats import summary
from sundial_sandbox import install_crds

REPO = Path(__file__).resolve().parents[1]
SHARDS = 12


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", f"--kubeconfig={kubeconfig}", *args], input=stdin, capture_output=True, text=True, check=True
    )
    return done.stdout


def scheduled_jobs(count: int, period: int) -> str:
    spec = {
        "suspend": True,
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox:1.37", "command": ["true"]}],
            }
        },
    }
    items = [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": f"herd-{i:04d}"},
            "spec": {"schedule": f"*/{period} * * * * *", "jobTemplate": {"spec": spec}},
        }
        for i in range(count)
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


class Watcher:
    """``kubectl get jobs --watch``: first receive time of each Job name, by its scheduled time."""

    TEMPLATE = '{.metadata.name}{" "}{.metadata.annotations.sundial\\.dev/scheduled-time}{"\\n"}'

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        self.seen: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            ["kubectl", f"--kubeconfig={kubeconfig}", "get", "jobs", "-n", namespace, "--watch",
             "-o", f"jsonpath={self.TEMPLATE}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            parts = line.split()
            if len(parts) == 2:
                with self._lock:
                    self.seen.setdefault(parts[0], (parts[1], time.time()))

    def by_time(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = defaultdict(list)
        with self._lock:
            for nominal, received in self.seen.values():
                out[nominal].append(received)
        return out

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=10)


def holders(kubeconfig: Path, prefix: str) -> dict[str, int]:
    listing = json.loads(kubectl(kubeconfig, "get", "leases", "-n", "default", "-o", "json"))
    counts: dict[str, int] = defaultdict(int)
    for item in listing["items"]:
        if item["metadata"]["name"].startswith(f"{prefix}-shard-"):
            holder = (item.get("spec") or {}).get("holderIdentity")
            if holder:
                counts[holder] += 1
    return dict(counts)


def wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def run_one(
    kubeconfig: Path, replicas: int, *, objects: int, herds: int, period: int, out: Path, qps: float
) -> dict[str, Any]:
    namespace = f"bench-shard-{replicas}-{uuid.uuid4().hex[:5]}"
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    kubectl(kubeconfig, "create", "namespace", namespace)
    kubectl(kubeconfig, "apply", "-n", namespace, "-f", "-", stdin=scheduled_jobs(objects, period))
    watcher = Watcher(kubeconfig, namespace)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(replicas):
            identity = f"bench-{replicas}-{i}"
            command = [
                sys.executable, "-m", "sundial", "run", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
                "--lease-namespace", "default", "--lease-name-prefix", prefix, "--identity", identity,
                "--shards", str(SHARDS), "--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1",
                "--metrics-port", "0", "--health-port", str(env.free_port()), "--log-format", "json",
                "--qps", str(qps), "--burst", str(max(100, int(qps * 2))),
            ]  # fmt: skip
            with (out / f"operator-{replicas}-{i}.log").open("wb") as sink:
                processes.append(subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO))
        share = {SHARDS // replicas}
        wait(
            lambda: (
                (h := holders(kubeconfig, prefix))
                and len(h) == replicas
                and set(h.values()) == share
                and sum(h.values()) == SHARDS
            ),
            90,
            "balanced shard Leases",
        )
        # The first herd at least 3 s from now; measure CPU from 1 s before it.
        first = (int(time.time() + 3) // period + 1) * period
        wait(lambda: time.time() >= first - 1, period + 5, "the first herd")
        cpu_before = sum(env.cpu_seconds(p.pid) for p in processes)
        nominals = [first + k * period for k in range(herds)]
        results: list[dict[str, Any]] = []
        for nominal in nominals:
            key = datetime.fromtimestamp(nominal, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            got = wait(
                lambda key=key: (r := watcher.by_time().get(key, [])) and len(r) >= objects and r,
                period * 3,
                f"the {objects} Jobs of {key}",
            )
            lags = sorted(received - nominal for received in got)
            results.append({"nominal": key, "jobs": len(got), "completion_s": round(lags[-1], 3),
                            "median_s": round(lags[len(lags) // 2], 3)})  # fmt: skip
            print(f"  R={replicas} herd {key}: {len(got)} Jobs, last after {lags[-1]:.2f}s", flush=True)
        cpu = sum(env.cpu_seconds(p.pid) for p in processes) - cpu_before
        runs = objects * herds
        return {
            "replicas": replicas,
            "qps_per_replica": qps,
            "objects": objects,
            "shards": SHARDS,
            "period_s": period,
            "herds": results,
            "completion_s": summary([h["completion_s"] for h in results]),
            "operator_cpu_s": round(cpu, 3),
            "cpu_ms_per_run": round(1000 * cpu / runs, 3),
            "load_after": env.load(),
        }
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        watcher.stop()
        kubectl(kubeconfig, "delete", "namespace", namespace, "--wait=false")


def render(results: dict[str, Any]) -> str:
    lines = [
        f"# Sharding benchmark ({results['started']})",
        "",
        f"Machine: {results['machine']['cores']} cores, {results['machine']['cpu_model']}; "
        f"{results['objects']} ScheduledJobs every {results['period_s']} s, {SHARDS} shards, Jobs suspended.",
        "",
        "| replicas | QPS per replica | herd completion (median of herds) | herd completion (max) | median Job lag | "
        "operator CPU per run |",
        "|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        medians = sorted(h["median_s"] for h in run["herds"])
        lines.append(
            f"| {run['replicas']} | {run['qps_per_replica']:g} | {run['completion_s']['p50']} s | "
            f"{run['completion_s']['max']} s | "
            f"{medians[len(medians) // 2]} s | {run['cpu_ms_per_run']} ms |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sharding", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, default=None, help="an existing cluster (default: a sandbox)")
    parser.add_argument("--sandbox-dir", type=Path, default=None, help="start/reuse a sandbox in this folder")
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--herds", type=int, default=3)
    parser.add_argument("--period", type=int, default=30, help="seconds between herds (divides 60)")
    parser.add_argument("--replicas", default="1,3")
    parser.add_argument("--qps", default="50", help="client-side QPS per replica; comma-separated: one pass each")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out: Path = args.out or REPO / "bench" / "results" / f"sharding-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out.mkdir(parents=True, exist_ok=True)
    sandbox = None
    kubeconfig: Path | None = args.kubeconfig
    if kubeconfig is None:
        from sundial_sandbox import Sandbox  # noqa: PLC0415 - only without --kubeconfig

        sandbox = Sandbox(args.sandbox_dir or Path(tempfile.mkdtemp(prefix="bench-sharding-")))
        kubeconfig = sandbox.start()
    try:
        install_crds(kubeconfig, REPO / "crds")
        results: dict[str, Any] = {
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": env.machine(),
            "load_before": env.load(),
            "objects": args.objects,
            "period_s": args.period,
            "runs": [],
        }
        for qps in (float(q) for q in args.qps.split(",")):
            for replicas in (int(r) for r in args.replicas.split(",")):
                print(f"== {replicas} replica(s), --qps {qps:g}", flush=True)
                results["runs"].append(
                    run_one(
                        kubeconfig,
                        replicas,
                        objects=args.objects,
                        herds=args.herds,
                        period=args.period,
                        out=out,
                        qps=qps,
                    )
                )
        (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        (out / "report.md").write_text(render(results), encoding="utf-8")
        print(render(results))
        print(f"results in {out}")
    finally:
        if sandbox is not None and args.sandbox_dir is None:
            sandbox.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
