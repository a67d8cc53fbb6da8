"""steady: M objects firing every minute for T minutes, Sundial then CronJobs, on one fresh sandbox.

Counted from the independent watcher: for each object and each nominal minute of the window, how many Jobs
(0: missed, >1: duplicated) and their lag. CPU: utime+stime of the operator and of the controller manager over
the window (``/proc/<pid>/stat``); the controller manager also runs the Job controller for both contenders, so
its CPU during Sundial's window is the baseline the CronJob controller's share is measured against.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import env
from bench.herd import _delete_all, minute_after, wait_until
from bench.kube import Api, cj_path, credentials, cron_job, scheduled_job, sj_path
from bench.stats import summary


class Steady:
    def __init__(
        self, *, out: Path, m: int, minutes: int, namespaces: int, operator_args: list[str], name: str = "steady"
    ) -> None:
        self.out, self.m, self.minutes, self.k = out, m, minutes, namespaces
        self.operator_args, self.name = operator_args, name

    def run(
        self, contenders: tuple[str, ...] = ("sundial", "cronjob"), cluster: env.BenchCluster | None = None
    ) -> dict[str, Any]:
        """On CLUSTER (left running), or on a fresh sandbox of its own."""
        return env.run_on_cluster(self.name, self.out, lambda c: self._run(c, contenders), cluster)

    async def _run(self, cluster: env.BenchCluster, contenders: tuple[str, ...]) -> dict[str, Any]:
        watch = env.JobWatch(cluster.kubeconfig, self.out / f"{self.name}-jobs.jsonl")
        results: dict[str, Any] = {"m": self.m, "minutes": self.minutes, "contenders": {}}
        self.operators: list[env.Operator] = []
        try:
            async with Api(credentials(cluster.kubeconfig)) as api:
                for contender in contenders:
                    print(f"[{self.name}] {contender}: m={self.m} T={self.minutes}m load={env.load()}", flush=True)
                    result = await self._contender(cluster, api, watch, contender)
                    results["contenders"][contender] = result
                    brief = {k: result[k] for k in ("missed", "duplicated", "lag", "cpu_per_run_ms")}
                    print(f"[{self.name}] {contender}: {brief}", flush=True)
        finally:
            watch.close()
            for operator in self.operators:
                operator.stop()
        return results

    async def _contender(
        self, cluster: env.BenchCluster, api: Api, watch: env.JobWatch, contender: str
    ) -> dict[str, Any]:
        namespaces = [f"{self.name}-{contender}-{i:02d}" for i in range(self.k)]
        await api.namespaces(namespaces)
        names = [(namespaces[i % self.k], f"{contender[:4]}-{i:05d}") for i in range(self.m)]
        result: dict[str, Any] = {"load_before": env.load()}
        operator: env.Operator | None = None
        if contender == "sundial":
            operator = env.start_operator(cluster.kubeconfig, self.out, *self.operator_args, identity="steady")
            self.operators.append(operator)
            operator.wait_ready()
            await api.create_many((sj_path(ns), scheduled_job(name, "* * * * *")) for ns, name in names)
        else:
            await api.create_many((cj_path(ns), cron_job(name, "* * * * *")) for ns, name in names)
        first = minute_after(15).timestamp()
        last = first + (self.minutes - 1) * 60
        await wait_until(first - 2)
        pids = {"kcm": cluster.pid(env.KCM), "apiserver": cluster.pid("kube-apiserver")}
        if operator is not None:
            pids["operator"] = operator.pid
        cpu_before = {k: env.cpu_seconds(p) for k, p in pids.items()}
        requests_before = env.operator_requests(operator.metrics(), with_code=False) if operator is not None else {}
        loads = [env.load()]
        while time.time() < last + 58:
            await asyncio.sleep(min(30.0, max(0.1, last + 58 - time.time())))
            loads.append(env.load())
        cpu = {k: round(env.cpu_seconds(p) - cpu_before[k], 2) for k, p in pids.items()}
        if operator is not None:
            requests_after = env.operator_requests(operator.metrics(), with_code=False)
            result["operator_requests"] = {
                k: round(v - requests_before.get(k, 0.0), 1)
                for k, v in requests_after.items()
                if v != requests_before.get(k)
            }
            result["operator_rss_mb"] = env.rss_mb(operator.pid)
            result["operator_missed_counter"] = operator.metric("sundial_runs_missed_total")
            operator.stop()
        else:
            await _delete_all(api, namespaces, cj_path)
        wanted = set(namespaces)
        per_run: Counter[tuple[str, str, float]] = Counter()
        lag: list[float] = []
        for record in watch.records():
            if record["namespace"] not in wanted or not record.get("nominal"):
                continue
            nominal = env.parse_rfc3339(record["nominal"])
            if first - 0.5 <= nominal <= last + 0.5:
                per_run[(record["namespace"], record["owner"], nominal)] += 1
                lag.append(record["received"] - nominal)
        expected = self.m * self.minutes
        runs = sum(1 for _ in per_run)
        result.update(
            {
                "expected": expected,
                "runs": runs,
                "missed": expected - runs,
                "duplicated": sum(count - 1 for count in per_run.values()),
                "lag": summary(lag),
                "lags": [round(v, 3) for v in sorted(lag)],
                "cpu_seconds": cpu,
                "cpu_per_run_ms": {k: round(1000 * v / max(1, runs), 2) for k, v in cpu.items()},
                "operator_writes_per_run": writes_per_run(result.get("operator_requests", {}), runs),
                "load_during": loads,
                "window": [first, last],
            }
        )
        result["cleanup_seconds"] = round(await api.delete_namespaces(namespaces), 1)
        return result


def writes_per_run(deltas: dict[str, float], runs: int) -> dict[str, float]:
    """The operator's own writes per run over the window, by resource (Leases apart), and their sum."""
    writes = {
        key: round(value / max(1, runs), 3)
        for key, value in deltas.items()
        if key.split("|")[0] in ("create", "update", "patch", "delete") and not key.endswith("|leases")
    }
    writes["total"] = round(sum(writes.values()), 3)
    return writes
