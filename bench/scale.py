"""scale: N idle ScheduledJobs (a yearly schedule): operator RSS, start → /readyz 200, idle CPU; then N idle
CronJobs: the controller manager's RSS and idle CPU, against its own baseline. One fresh sandbox."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench import env
from bench.kube import Api, cj_path, credentials, cron_job, scheduled_job, sj_path

YEARLY = "0 0 1 1 *"


async def idle(pid: int, seconds: float) -> float:
    """Percent of one core PID used over SECONDS."""
    before = env.cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return round(100 * (env.cpu_seconds(pid) - before) / seconds, 2)


async def quiet(operator: env.Operator, limit: float, still: float = 10.0) -> float:
    """Seconds until the operator's ``sundial_api_requests_total`` (Leases aside) stopped moving for STILL s."""
    start, last, since = time.monotonic(), -1.0, time.monotonic()
    while time.monotonic() - start < limit:
        total = sum(
            float(line.rsplit(" ", 1)[1])
            for line in operator.metrics().splitlines()
            if line.startswith("sundial_api_requests_total{") and 'resource="leases"' not in line
        )
        if total != last:
            last, since = total, time.monotonic()
        elif time.monotonic() - since >= still:
            break
        await asyncio.sleep(1.0)
    return round(time.monotonic() - start, 1)


async def settle(pid: int, limit: float, below: float = 2.0, window: float = 10.0) -> float:
    """Seconds until PID used less than BELOW percent of a core over a WINDOW (LIMIT at most): the backlog of
    watch events (e.g. the echoes of the operator's own first status writes) is digested."""
    start = time.monotonic()
    while time.monotonic() - start < limit and await idle(pid, window) >= below:
        pass
    return round(time.monotonic() - start, 1)


class Scale:
    def __init__(
        self,
        *,
        out: Path,
        n: int,
        namespaces: int,
        idle_seconds: float,
        operator_args: list[str],
        name: str = "scale",
        cronjobs: bool = True,
    ) -> None:
        self.out, self.n, self.k, self.idle_seconds = out, n, namespaces, idle_seconds
        self.operator_args, self.name, self.cronjobs = operator_args, name, cronjobs

    def run(self) -> dict[str, Any]:
        return env.run_on_cluster(self.name, self.out, self._run)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        kcm = cluster.pid(env.KCM)
        result: dict[str, Any] = {"n": self.n, "load_before": env.load()}
        async with Api(credentials(cluster.kubeconfig), connections=100) as api:
            sj_ns = [f"scale-sj-{i:02d}" for i in range(self.k)]
            cj_ns = [f"scale-cj-{i:02d}" for i in range(self.k)]
            await api.namespaces(sj_ns + cj_ns)
            result["kcm_rss_mb_baseline"] = env.rss_mb(kcm)
            result["kcm_idle_cpu_pct_baseline"] = await idle(kcm, self.idle_seconds)
            print(f"[scale] creating {self.n} ScheduledJobs load={env.load()}", flush=True)
            seconds = await api.create_many(
                ((sj_path(sj_ns[i % self.k]), scheduled_job(f"idle-{i:06d}", YEARLY)) for i in range(self.n)),
                concurrency=100,
            )
            result["sj_create_seconds"] = round(seconds, 1)
            result["sj_create_per_second"] = round(self.n / max(seconds, 0.001), 1)
            result["sj_count"] = await api.count("/apis/sundial.dev/v1alpha1/scheduledjobs")
            result["kcm_rss_mb_with_sj"] = env.rss_mb(kcm)
            result["load_at_operator_start"] = env.load()
            operator = env.start_operator(cluster.kubeconfig, self.out, *self.operator_args, identity="scale")
            try:
                result["operator_ready_seconds"] = round(operator.wait_ready(timeout=600), 2)
                result["operator_rss_mb_at_ready"] = env.rss_mb(operator.pid)
                # Objects created while no operator ran get their first status write after start (at the
                # operator's --qps): idle is measured only once its API requests have stopped for 10 s.
                result["operator_settle_seconds"] = await quiet(operator, limit=max(120.0, self.n / 40))
                # The first window right after the writes stop, then again once CPU has settled (the issue's
                # "idle": nothing left to digest).
                result["operator_cpu_pct_after_writes"] = await idle(operator.pid, self.idle_seconds)
                result["operator_cpu_settle_seconds"] = await settle(operator.pid, limit=600.0)
                result["operator_idle_cpu_pct"] = await idle(operator.pid, self.idle_seconds)
                result["operator_rss_mb"] = env.rss_mb(operator.pid)
                result["operator_rss_peak_mb"] = env.rss_mb(operator.pid, "VmHWM")
                result["operator_due_index_size"] = operator.metric("sundial_due_index_size")
                result["load_operator_idle"] = env.load()
            finally:
                operator.stop()
            print(f"[scale] operator: {result} load={env.load()}", flush=True)
            if self.cronjobs:
                await self._cronjobs(cluster, api, cj_ns, result)
            result["load_end"] = env.load()
        return result

    async def _cronjobs(self, cluster: env.BenchCluster, api: Api, cj_ns: list[str], result: dict[str, Any]) -> None:
        """N idle CronJobs: the controller manager's RSS and idle CPU, and its RSS after a restart."""
        kcm = cluster.pid(env.KCM)
        print(f"[scale] creating {self.n} CronJobs load={env.load()}", flush=True)
        seconds = await api.create_many(
            ((cj_path(cj_ns[i % self.k]), cron_job(f"idle-{i:06d}", YEARLY)) for i in range(self.n)),
            concurrency=100,
        )
        result["cj_create_seconds"] = round(seconds, 1)
        result["cj_count"] = await api.count("/apis/batch/v1/cronjobs")
        await asyncio.sleep(10)
        result["kcm_rss_mb_with_sj_and_cj"] = env.rss_mb(kcm)
        result["kcm_idle_cpu_pct_with_cj"] = await idle(kcm, self.idle_seconds)
        # A fresh controller manager holding the N CronJobs (and the N ScheduledJobs in its GC's metadata
        # informer, like the operator's world): RSS after a restart, comparable to the operator's.
        start = time.monotonic()
        cluster.restart_kcm(["--kube-api-qps=20", "--kube-api-burst=30"])
        result["kcm_restart_healthy_seconds"] = round(time.monotonic() - start, 1)
        await asyncio.sleep(20)
        result["kcm_rss_mb_restarted"] = env.rss_mb(cluster.pid(env.KCM))
