"""steady: M objects firing every minute for T minutes, per contender, on one fresh sandbox.

Contenders, in this order, each in its own namespaces (deleted before the next starts): ``raw`` (no scheduler:
at second 0 of each minute the bench POSTs M Jobs, bodies made and connections opened before the instant,
200 in flight, the floor a
same-second herd of M has on this machine), ``sundial`` (the operator, M ScheduledJobs ``* * * * *``),
``cronjob`` (M CronJobs at the controller manager's default client QPS).

Counted from the independent watcher: for each object and each nominal minute of the window, how many Jobs
(0: missed, >1: duplicated) and their lag. CPU: utime+stime of the operator, the controller manager and the
API server (``/proc/<pid>/stat``) over the window, over each minute's instant (1 s before the nominal time until
the watcher has seen that minute's M Jobs, or 55 s) and over the recurring window (second 57 of the first
minute to second 57 of the last: (T - 1) x M runs of objects that ran before; :mod:`bench.cost`). The
controller manager also runs the Job controller for every contender, so its CPU beside raw is what any Job costs.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import env, window
from bench.herd import RAW_CONNECTIONS, _delete_all, minute_after, wait_until
from bench.kube import Api, Credentials, cj_path, credentials, cron_job, job_path, plain_job, scheduled_job, sj_path
from bench.stats import summary

INSTANT_LIMIT = 55.0  # an instant window closes this long after the nominal time even if Jobs are missing
RECURRING_PHASE = 57.0  # the recurring window's ends: this second of the first and of the last minute


class Steady:
    def __init__(
        self, *, out: Path, m: int, minutes: int, namespaces: int, operator_args: list[str], name: str = "steady"
    ) -> None:
        self.out, self.m, self.minutes, self.k = out, m, minutes, namespaces
        self.operator_args, self.name = operator_args, name

    def run(
        self, contenders: tuple[str, ...] = ("raw", "sundial", "cronjob"), cluster: env.BenchCluster | None = None
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
        elif contender != "raw":
            await api.create_many((cj_path(ns), cron_job(name, "* * * * *")) for ns, name in names)
        first = minute_after(15).timestamp()
        last = first + (self.minutes - 1) * 60
        client = asyncio.create_task(self._raw_client(api.creds, names, first)) if contender == "raw" else None
        await wait_until(first - 2)
        pids = {"kcm": cluster.pid(env.KCM), "apiserver": cluster.pid("kube-apiserver")}
        if operator is not None:
            pids["operator"] = operator.pid
        wanted = set(namespaces)
        start = await window.take(api, pids, operator)
        loads, instants, recurring = [env.load()], [], []
        for minute in range(self.minutes):
            at = first + 60 * minute
            await wait_until(at - 1)
            before = window.cpu(pids)
            await self._minute_seen(watch, wanted, at)
            instants.append(window.cpu_delta(before, window.cpu(pids)))
            loads.append(env.load())
            if self.minutes >= 2 and minute in (0, self.minutes - 1):
                await wait_until(at + RECURRING_PHASE)
                recurring.append(await window.take(api, pids, operator))
        await wait_until(last + 58)
        end = await window.take(api, pids, operator)
        if client is not None:
            result["client_seconds"] = await client
        if operator is not None:
            result["operator_rss_mb"] = env.rss_mb(operator.pid)
            result["operator_missed_counter"] = operator.metric("sundial_runs_missed_total")
            operator.stop()
        elif contender != "raw":
            await _delete_all(api, namespaces, cj_path)
        result.update(self._count(watch.records(), wanted, first, last))
        whole = window.between(start, end, result["runs"])
        instant = {name: round(sum(i.get(name, 0.0) for i in instants), 2) for name in pids}
        result.update(
            {
                "cpu_seconds": whole["cpu_seconds"],
                "cpu_per_run_ms": whole["cpu_ms_per_run"],
                "cpu_seconds_instant": instant,
                "cpu_ms_per_run_instant": {k: round(1000 * v / max(1, result["runs"]), 2) for k, v in instant.items()},
                "operator_requests": whole["operator_requests"],
                "operator_writes_per_run": writes_per_run(whole["operator_requests"], result["runs"]),
                "apiserver": whole["apiserver"],
                "load_during": loads,
                "window": [first, last],
            }
        )
        if len(recurring) == 2:
            runs = self._count(watch.records(), wanted, first + 60, last)["runs"]
            result["recurring"] = window.between(recurring[0], recurring[1], runs)
        result["cleanup_seconds"] = round(await api.delete_namespaces(namespaces), 1)
        return result

    async def _raw_client(self, creds: Credentials, names: list[tuple[str, str]], first: float) -> list[float]:
        """At second 0 of each minute of the window, M Job POSTs (bodies made before); the seconds each took."""
        took: list[float] = []
        async with Api(creds, connections=RAW_CONNECTIONS, user_agent="bench-raw") as raw:
            for minute in range(self.minutes):
                at = first + 60 * minute
                stamp = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                bodies = [(job_path(ns), plain_job(f"{name}-{int(at) // 60}", stamp)) for ns, name in names]
                await wait_until(at - 4)
                await raw.warm(RAW_CONNECTIONS)  # connections open before the instant, as an operator's are
                await wait_until(at)
                took.append(round(await raw.create_many(bodies, concurrency=RAW_CONNECTIONS), 3))
        return took

    async def _minute_seen(self, watch: env.JobWatch, wanted: set[str], at: float) -> None:
        """Until the watcher has seen the M Jobs of the minute AT (or :data:`INSTANT_LIMIT` s have passed)."""
        while time.time() < at + INSTANT_LIMIT:
            seen = sum(
                1
                for r in watch.records()
                if r["namespace"] in wanted and r.get("nominal") and abs(env.parse_rfc3339(r["nominal"]) - at) < 0.5
            )
            if seen >= self.m:
                return
            await asyncio.sleep(0.5)

    def _count(self, records: list[dict[str, Any]], wanted: set[str], first: float, last: float) -> dict[str, Any]:
        """Per object and nominal minute in [FIRST, LAST]: runs, missed, duplicated, lags."""
        per_run: Counter[tuple[str, str, float]] = Counter()
        lag: list[float] = []
        for record in records:
            if record["namespace"] not in wanted or not record.get("nominal"):
                continue
            nominal = env.parse_rfc3339(record["nominal"])
            if first - 0.5 <= nominal <= last + 0.5:
                per_run[(record["namespace"], object_of(record), nominal)] += 1
                lag.append(record["received"] - nominal)
        expected = self.m * (round((last - first) / 60) + 1)
        return {
            "expected": expected,
            "runs": len(per_run),
            "missed": expected - len(per_run),
            "duplicated": sum(count - 1 for count in per_run.values()),
            "lag": summary(lag),
            "lags": [round(v, 3) for v in sorted(lag)],
        }


def object_of(record: dict[str, Any]) -> str:
    """The object a Job ran for: its owner, or for the raw client's Jobs (no owner) the name less the minute."""
    return str(record.get("owner") or str(record["name"]).rsplit("-", 1)[0])


def writes_per_run(deltas: dict[str, float], runs: int) -> dict[str, float]:
    """The operator's own writes per run over the window, by resource (Leases apart), and their sum."""
    writes = {
        key: round(value / max(1, runs), 3)
        for key, value in deltas.items()
        if key.split("|")[0] in ("create", "update", "patch", "delete") and not key.endswith("|leases")
    }
    writes["total"] = round(sum(writes.values()), 3)
    return writes
