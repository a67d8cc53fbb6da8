"""A measuring window: a snapshot of the API server's counters, the processes' CPU and the operator's own request
counters before and after, and what happened in between (per run where the caller says how many runs)."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any

from bench import apiserver, env


@dataclass(frozen=True)
class Snapshot:
    server: apiserver.Sample
    cpu: dict[str, float]  # utime+stime seconds by process name ("apiserver", "kcm", "operator")
    own: dict[str, float]  # the operator's sundial_api_requests_total by verb|resource (empty without one)


async def take(api: apiserver.MetricsSource, pids: dict[str, int], operator: env.Operator | None) -> Snapshot:
    own = env.operator_requests(operator.metrics(), with_code=False) if operator is not None else {}
    server = await apiserver.sample(api, pids["apiserver"])
    return Snapshot(server, cpu(pids), own)


def cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: env.cpu_seconds(pid) for name, pid in pids.items()}


def cpu_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before[name], 2) for name in after if name in before}


def between(before: Snapshot, after: Snapshot, runs: int) -> dict[str, Any]:
    """CPU seconds (and ms per run), the API server's window (:func:`apiserver.window`) and the operator's own
    requests between BEFORE and AFTER."""
    spent = cpu_delta(before.cpu, after.cpu)
    return {
        "runs": runs,
        "cpu_seconds": spent,
        "cpu_ms_per_run": {name: round(1000 * v / max(1, runs), 2) for name, v in spent.items()},
        "apiserver": apiserver.window(before.server, after.server),
        "operator_requests": {
            k: round(v - before.own.get(k, 0.0), 1) for k, v in after.own.items() if v != before.own.get(k, 0.0)
        },
    }


def processes(cluster: env.BenchCluster, watch: env.JobWatch) -> dict[str, int]:
    """The pids whose CPU a window records (the operator's is added when it runs)."""
    return {
        "apiserver": cluster.pid("kube-apiserver"),
        "etcd": cluster.pid("etcd"),
        "kcm": cluster.pid(env.KCM),
        "scheduler": cluster.pid("kube-scheduler"),
        "kwok": cluster.pid("kwok"),
        "watcher": watch.process.pid,
        "bench": os.getpid(),
    }


async def settle(api: apiserver.MetricsSource, quiet: float = 5.0, limit: float = 90.0) -> float:
    """Wait until the API server's write counters (Leases and Events aside) stop moving for QUIET seconds."""
    start, last, since = time.monotonic(), -1.0, time.monotonic()
    while time.monotonic() - start < limit:
        counts = env.parse_requests(await api.text("/metrics"))
        writes = sum(
            v
            for (verb, resource, _), v in counts.items()
            if verb in ("POST", "PUT", "PATCH", "DELETE") and resource not in ("coordination.k8s.io/leases", "events")
        )
        if writes != last:
            last, since = writes, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
        await asyncio.sleep(1.0)
    return time.monotonic() - start
