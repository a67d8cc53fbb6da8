"""failover: two replicas, SIGKILL the Lease holder, time until the standby's first Job (its fencing token
differs from the dead leader's), with short Lease settings and with the defaults. One fresh sandbox."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any

from bench import env
from bench.kube import Api, credentials, scheduled_job, sj_path

EVERY_SECOND = "* * * * * *"
SETTINGS = {
    "short": ["--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1"],
    "default": [],
}


class Failover:
    def __init__(self, *, out: Path, objects: int, operator_args: list[str], name: str = "failover") -> None:
        self.out, self.objects, self.operator_args, self.name = out, objects, operator_args, name

    def run(self) -> dict[str, Any]:
        return env.run_on_cluster(self.name, self.out, self._run)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        watch = env.JobWatch(cluster.kubeconfig, self.out / f"{self.name}-jobs.jsonl")
        results: dict[str, Any] = {"objects": self.objects, "cases": {}}
        try:
            async with Api(credentials(cluster.kubeconfig)) as api:
                for case, flags in SETTINGS.items():
                    results["cases"][case] = await self._case(cluster, api, watch, case, flags)
                    print(f"[failover] {case}: {results['cases'][case]}", flush=True)
        finally:
            watch.close()
        return results

    async def _case(
        self, cluster: env.BenchCluster, api: Api, watch: env.JobWatch, case: str, flags: list[str]
    ) -> dict[str, Any]:
        namespace = f"failover-{case}"
        await api.namespaces([namespace])
        prefix = f"fo-{case}"
        args = [*self.operator_args, *flags, "--namespace", namespace]
        replicas = {
            name: env.start_operator(cluster.kubeconfig, self.out, *args, identity=name, lease_prefix=prefix)
            for name in (f"{case}-a", f"{case}-b")
        }
        try:
            for replica in replicas.values():
                replica.wait_ready()
            await api.create_many((sj_path(namespace), scheduled_job(f"tick-{i:02d}", EVERY_SECOND))
                                  for i in range(self.objects))  # fmt: skip
            lease_path = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{prefix}-shard-0"
            deadline = time.monotonic() + 90
            holder = ""
            while time.monotonic() < deadline:
                mine = [r for r in watch.records() if r["namespace"] == namespace]
                lease = await api.call("GET", lease_path) if mine else {}
                holder = (lease.get("spec") or {}).get("holderIdentity", "")
                if len(mine) >= 3 * self.objects and holder in replicas:
                    break
                await asyncio.sleep(0.5)
            before = [r for r in watch.records() if r["namespace"] == namespace]
            old_tokens = {r["fencing"] for r in before}
            leader = replicas[holder]
            killed = time.time()
            leader.stop(signal.SIGKILL)
            first: dict[str, Any] | None = None
            while time.time() - killed < 120 and first is None:
                await asyncio.sleep(0.1)
                fresh = [
                    r
                    for r in watch.records()
                    if r["namespace"] == namespace and r["received"] > killed and r["fencing"] not in old_tokens
                ]
                first = min(fresh, key=lambda r: r["received"]) if fresh else None
            await asyncio.sleep(3)
            last_old = max((r["received"] for r in before), default=killed)
            return {
                "flags": flags or "defaults (lease 15 s, renew deadline 10 s, retry 2 s)",
                "leader": holder,
                "old_tokens": sorted(t for t in old_tokens if t),
                "new_token": first["fencing"] if first else None,
                "seconds_to_standby_first_job": round(first["received"] - killed, 2) if first else None,
                "seconds_since_last_job_of_old_leader": round(first["received"] - last_old, 2) if first else None,
                "load": env.load(),
            }
        finally:
            for replica in replicas.values():
                replica.stop()
            await api.delete_namespaces([namespace], wait=30)
