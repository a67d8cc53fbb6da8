"""herd (and cost): N objects all due at the same instant, per contender, on one fresh sandbox.

Contenders, each in its own namespaces (deleted before the next one starts):
``raw`` (N Job creates from a tight concurrent client at the nominal instant: the API server's limit),
``raw-shaped`` (the same client POSTing exactly the Jobs Sundial's operator would create - its labels,
annotations, env and the controller ownerReference to a suspended ScheduledJob, made by
``sundial.planner.manifests.build_job`` with a production-length fencing token: the API server's limit for
Sundial's Jobs, without an operator; with ``production`` it POSTs them as the operator's ServiceAccount, so the
fencing policy admits them exactly as it admits Sundial's),
``raw-cronjob-shaped`` (the same client POSTing exactly the Jobs the CronJob controller would create for
suspended CronJobs with the same template, :mod:`bench.shapes`),
``sundial`` (the operator; with ``production`` the chart's flags and its fencing policy installed, enforced and
proved by the operator's own probe, :mod:`bench.production`), ``cronjob-default`` (CronJobs under the
controller manager's default client QPS 20/burst 30), ``cronjob-raised`` (the controller manager restarted with
Sundial's QPS/burst; every other contender runs under the default flags).
With ``repetitions`` > 1 every contender runs that many times on the same control plane, interleaved
(:mod:`bench.repetitions`): each contender's result is its median repetition's, with all repetitions and the
medians. Lag = the independent watcher's receive time of a Job's ADDED event - the Job's nominal time.

With ``priority_share`` > 0 (``--set herd_priority_share=0.1``) that share of Sundial's objects (every
k-th one, spread over the namespaces) has ``spec.priority: 100`` and the report adds ``priority``: the
lag summaries and the time to the last Job of the high-priority share and of the rest (DESIGN §4.3).

Each contender is measured in two windows: the **instant** (1 s before the nominal time until the watcher has seen
the last Job) and, with ``settle_writes`` (the cost scenario), the **whole** (just before the objects are created
until the API server's writes have settled): CPU seconds of the operator, the API server and the controller manager,
the API server's requests and handler time by kind (:mod:`bench.window`), and, where ``perf`` and ``go`` are found
(``--set apiserver_profile=0`` to skip), a CPU profile of the API server over the instant classified by request kind
(:mod:`bench.apiprofile`). ``--profile`` records the operator with py-spy (``BENCH_PROFILE_NATIVE=1``: with its C
frames, where the garbage collector shows). CPU seconds are read from ``/proc`` for every process of the run: the
API server, etcd, the controller manager, the scheduler, kwok, the operator, the independent watcher and the bench
itself (``bench``: the raw client's process, which for the other contenders only polls). The first repetition of
each contender also weighs one of its Jobs (``job_bytes``: compact JSON sent, and the Job as a GET returns it);
``raw-shaped``'s also weighs the previous version's shape (run stamps on the pod template too) for comparison."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import apiprofile, env, production, repetitions, shapes, window
from bench.kube import Api, cj_path, credentials, cron_job, job_path, plain_job, scheduled_job, sj_path
from bench.stats import summary

HIGH_PRIORITY = 100
PY_SPY = str(Path(sys.executable).parent / "py-spy")
RAW_CONNECTIONS = 200  # the raw client's connections and requests in flight
KCM_DEFAULT = ("--kube-api-qps=20", "--kube-api-burst=30")  # the controller manager's defaults, made explicit


def minute_after(seconds: float) -> datetime:
    """The first whole minute at least SECONDS from now (UTC)."""
    target = math.ceil((time.time() + seconds) / 60) * 60
    return datetime.fromtimestamp(target, UTC)


def fixed_cron(at: datetime) -> str:
    return f"{at.minute} {at.hour} {at.day} {at.month} *"


def lags(records: list[dict[str, Any]], namespaces: set[str]) -> tuple[list[float], list[dict[str, Any]]]:
    mine = [r for r in records if r["namespace"] in namespaces and r.get("nominal")]
    return [r["received"] - env.parse_rfc3339(r["nominal"]) for r in mine], mine


async def wait_until(at: float) -> None:
    while (remaining := at - time.time()) > 0:
        await asyncio.sleep(min(remaining, 0.5) if remaining > 0.05 else remaining)


class Herd:
    def __init__(
        self,
        *,
        out: Path,
        n: int,
        namespaces: int,
        operator_args: list[str],
        kcm_raised: list[str],
        contenders: list[str],
        profile: bool = False,
        settle_writes: bool = False,
        name: str = "herd",
        priority_share: float = 0.0,
        apiserver_profile: bool = True,
        repetitions: int = 1,
        as_in_production: bool = False,
    ) -> None:
        self.out, self.n, self.k = out, n, namespaces
        self.repetitions, self.production = repetitions, as_in_production
        self.fencing: production.Fencing | None = None
        self.previous_shape: dict[str, Any] | None = None
        self.shaped: list[tuple[str, dict[str, Any]]] = []
        self.sa_token = ""
        self.operator_args, self.kcm_raised, self.contenders = operator_args, kcm_raised, contenders
        self.profile, self.settle_writes, self.name = profile, settle_writes, name
        self.apiserver_profile = apiserver_profile and apiprofile.available()
        self.priority_every = round(1 / priority_share) if priority_share > 0 else 0
        self.seconds_precision = not any(c.startswith("cronjob") for c in contenders)

    def run(self, cluster: env.BenchCluster | None = None) -> dict[str, Any]:
        """On CLUSTER (left running), or on a fresh sandbox of its own."""
        return env.run_on_cluster(self.name, self.out, self._run, cluster)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        watch = env.JobWatch(cluster.kubeconfig, self.out / f"{self.name}-jobs.jsonl")
        creds = credentials(cluster.kubeconfig)
        order = repetitions.order(self.contenders, self.repetitions)
        results: dict[str, Any] = {
            "n": self.n, "namespaces": self.k, "contenders": {}, "repetitions": self.repetitions,
            "order": [[r, c] for r, c in order], "production": self.production, "operator_args": self.operator_args,
        }  # fmt: skip
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in self.contenders}
        try:
            async with Api(creds, connections=100) as api:
                if self.production:
                    self.fencing = await production.Fencing(api, self.out / "fencing").install()
                    self.sa_token = await self.fencing.token()
                    results["fencing_policies"] = self.fencing.policies
                for rep, contender in order:
                    print(f"[{self.name}] {contender} #{rep + 1}: n={self.n} load={env.load()}", flush=True)
                    result = await self._contender(cluster, api, watch, contender, rep)
                    result["repetition"] = rep
                    runs[contender].append(result)
                    print(f"[{self.name}] {contender} #{rep + 1}: {_brief(result)}", flush=True)
        finally:
            watch.close()
        results["contenders"] = {c: repetitions.combine(runs[c]) for c in self.contenders if runs[c]}
        return results

    def _high(self, index: int) -> bool:
        """Object ``index`` is one of the high-priority share."""
        return bool(self.priority_every) and index % self.priority_every == 0

    async def _contender(
        self, cluster: env.BenchCluster, api: Api, watch: env.JobWatch, contender: str, rep: int = 0
    ) -> dict[str, Any]:
        self.operator: env.Operator | None = None
        try:
            return await self._contender_run(cluster, api, watch, contender, rep)
        finally:
            if self.operator is not None:
                self.operator.stop()

    async def _contender_run(
        self, cluster: env.BenchCluster, api: Api, watch: env.JobWatch, contender: str, rep: int
    ) -> dict[str, Any]:
        namespaces = [f"{self.name}-{contender}-r{rep}-{i:02d}" for i in range(self.k)]
        await api.namespaces(namespaces)
        names = [(namespaces[i % self.k], f"{contender[:4]}-{i:05d}") for i in range(self.n)]
        profiler: subprocess.Popen[bytes] | None = None
        result: dict[str, Any] = {"load_before": env.load()}
        setup_start = time.monotonic()
        nominal = self._nominal(contender)
        at = nominal.timestamp()
        stamp = nominal.strftime("%Y-%m-%dT%H:%M:%SZ")
        # A 6-field cron only where the contender's objects accept one (CronJobs do not; the shaped contenders'
        # objects are suspended: their Jobs carry NOMINAL whatever the cron says).
        seconds = self.seconds_precision and contender != "raw-cronjob-shaped"
        cron = f"{nominal.second} {fixed_cron(nominal)}" if seconds else fixed_cron(nominal)
        operator = await self._start(cluster, api, contender, result)
        pids = window.processes(cluster, watch)
        if operator is not None:
            pids["operator"] = operator.pid
        # "whole": from just before the objects exist until the writes settle (cost: a new object's first run)
        whole_before = await window.take(api, pids, operator)
        await self._create(
            api, contender=contender, names=names, cron=cron, nominal=nominal, result=result, operator=operator
        )
        result["setup_seconds"] = round(time.monotonic() - setup_start, 2)
        result["slack_seconds"] = round(at - time.time(), 2)  # < 0: the setup ran past the nominal time
        if self.profile and operator is not None:  # the instant only: from 2 s before it (py-spy attaches)
            await wait_until(at - 2.0)
            profiler = subprocess.Popen(
                [PY_SPY, "record", "--pid", str(operator.pid), "--rate", "250", "--format", "raw",
                 "--output", str(self.out / f"{self.name}-profile.txt"), "--nonblocking",
                 *(["--native"] if os.environ.get("BENCH_PROFILE_NATIVE") == "1" else [])],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        instant_before, instant_after, perf_data = await self._instant(
            api, watch, contender=contender, names=names, stamp=stamp, pids=pids, operator=operator, result=result
        )
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
        if self.settle_writes:
            result["settle_seconds"] = round(await window.settle(api, limit=max(90.0, self.n * 0.6)), 1)
            result["load_settled"] = env.load()
        whole_after = await window.take(api, pids, operator) if self.settle_writes else instant_after
        values, mine = lags(watch.records(), set(namespaces))
        result["instant"] = window.between(instant_before, instant_after, len(mine))
        result["whole"] = window.between(whole_before, whole_after, len(mine))
        result["cpu_seconds"] = result["instant"]["cpu_seconds"]
        if perf_data is not None:
            binary = Path(os.readlink(f"/proc/{pids['apiserver']}/exe"))
            try:
                result["apiserver_profile"] = apiprofile.breakdown(
                    perf_data, binary, result["cpu_seconds"]["apiserver"]
                )
            except (OSError, subprocess.CalledProcessError, ValueError) as error:  # the herd's numbers still count
                result["apiserver_profile"] = {"error": f"{type(error).__name__}: {error}"}
        if operator is not None:
            result["operator_lag_histogram_count"] = operator.metric("sundial_schedule_lag_seconds_count")
            operator.stop()
        result["nominal"] = stamp
        result["jobs_seen"] = len(mine)
        result["missing"] = self.n - len({(r["namespace"], r["name"]) for r in mine})
        result["lag"] = summary(values)
        result["lags"] = [round(v, 3) for v in sorted(values)]
        result["time_to_last_job"] = round(max(values), 3) if values else None
        result["time_to_first_job"] = round(min(values), 3) if values else None
        if contender == "sundial" and self.priority_every:
            high = {name for i, (_, name) in enumerate(names) if self._high(i)}
            result["priority"] = priority_split(mine, high, share=1 / self.priority_every)
        if rep == 0 and mine:
            sent = plain_job(mine[0]["name"], stamp) if contender == "raw" else None
            previous = self.previous_shape if contender == "raw-shaped" else None
            result["job_bytes"] = await shapes.weigh(
                api, self._client_creds(api, contender), mine[0], sent=sent, shaped=self.shaped, previous=previous
            )
        if contender.startswith("cronjob"):
            await _delete_all(api, namespaces, cj_path)
        result["cleanup_seconds"] = round(await api.delete_namespaces(namespaces), 1)
        return result

    async def _instant(
        self,
        api: Api,
        watch: env.JobWatch,
        *,
        contender: str,
        names: list[tuple[str, str]],
        stamp: str,
        pids: dict[str, int],
        operator: env.Operator | None,
        result: dict[str, Any],
    ) -> tuple[window.Snapshot, window.Snapshot, Path | None]:
        """From 1 s before the nominal time STAMP until the watcher has seen the last Job: the snapshots at both
        ends and the API server's perf data (None without). The raw client POSTs its Jobs at the instant, their
        bodies made and its connections opened before it, as an operator's are."""
        at = env.parse_rfc3339(stamp)
        perf_data = self.out / f"{self.name}-{contender}-apiserver.perf"
        async with contextlib.AsyncExitStack() as stack:
            raw_api: Api | None = None
            if contender.startswith("raw"):
                bodies = [(job_path(ns), plain_job(name, stamp)) for ns, name in names]
                if contender in ("raw-shaped", "raw-cronjob-shaped"):
                    bodies = self.shaped
                raw_api = Api(self._client_creds(api, contender), connections=RAW_CONNECTIONS, user_agent="bench-raw")
                await stack.enter_async_context(raw_api)
                await raw_api.warm(RAW_CONNECTIONS)
            await wait_until(at - 1.0)
            perf = apiprofile.start(pids["apiserver"], perf_data) if self.apiserver_profile else None
            before = await window.take(api, pids, operator)
            result["load_at_nominal"] = env.load()
            if raw_api is not None:
                await wait_until(at)
                result["client_seconds"] = round(await raw_api.create_many(bodies, concurrency=RAW_CONNECTIONS), 3)
        wanted = {ns for ns, _ in names}
        timeout = max(120.0, self.n * 0.35)
        while time.time() - at < timeout:
            if sum(1 for r in watch.records() if r["namespace"] in wanted) >= self.n:
                break
            await asyncio.sleep(0.5)
        after = await window.take(api, pids, operator)
        apiprofile.stop(perf)
        result["load_after"] = env.load()
        return before, after, perf_data if perf is not None else None

    def _nominal(self, contender: str) -> datetime:
        if contender == "raw":  # time to open the raw client's connections first
            return datetime.fromtimestamp(math.ceil(time.time() + 6), UTC)
        if self.seconds_precision or contender.startswith("raw-"):  # no wait for a whole minute
            return datetime.fromtimestamp(math.ceil(time.time() + 20 + self.n / 40), UTC)
        return minute_after(25 + self.n / 40)

    def _client_creds(self, api: Api, contender: str) -> Any:
        """The raw client's credentials: the operator's ServiceAccount for ``raw-shaped`` in production (the
        fencing policy admits its Jobs as it admits Sundial's), else the admin's."""
        if contender == "raw-shaped" and self.sa_token:
            return dataclasses.replace(api.creds, token=self.sa_token)
        return api.creds

    async def _start(
        self, cluster: env.BenchCluster, api: Api, contender: str, result: dict[str, Any]
    ) -> env.Operator | None:
        """Sundial's operator (ready; in production as its ServiceAccount, fencing proved enforced), and the
        controller manager with the contender's client flags (the defaults for every contender but
        ``cronjob-raised``)."""
        flags = self.kcm_raised if contender == "cronjob-raised" else list(KCM_DEFAULT)
        if cluster.kcm_flags != flags and (cluster.kcm_flags or contender.startswith("cronjob")):
            cluster.restart_kcm(flags)
        result["kcm_flags"] = cluster.kcm_flags or list(KCM_DEFAULT)
        if contender != "sundial":
            return None
        kubeconfig = cluster.kubeconfig
        if self.fencing is not None:
            token = await self.fencing.token(pod="herd")
            kubeconfig = self.fencing.kubeconfig(api.creds, token, "herd")
        self.operator = env.start_operator(kubeconfig, self.out, *self.operator_args, identity="herd")
        result["ready_seconds"] = round(self.operator.wait_ready(), 2)
        if self.fencing is not None:
            result["fencing_enforced"] = await production.fencing_enforced(self.operator)
            if result["fencing_enforced"] != 1:
                raise RuntimeError("the operator's fencing probe was not refused: the policy is not enforced")
        return self.operator

    async def _create(
        self,
        api: Api,
        *,
        contender: str,
        names: list[tuple[str, str]],
        cron: str,
        nominal: datetime,
        result: dict[str, Any],
        operator: env.Operator | None,
    ) -> None:
        """The contender's objects (none for raw); for Sundial, wait until its due index holds them all."""
        if contender == "sundial" and operator is not None:
            bodies = (
                (sj_path(ns), scheduled_job(name, cron, priority=HIGH_PRIORITY if self._high(i) else 0))
                for i, (ns, name) in enumerate(names)
            )
            result["create_seconds"] = round(await api.create_many(bodies), 2)
            result["created"] = {"POST|sundial.dev/scheduledjobs|": len(names)}
            deadline = time.monotonic() + 120
            while operator.metric("sundial_due_index_size") < self.n and time.monotonic() < deadline:
                await asyncio.sleep(0.5)
            result["indexed"] = operator.metric("sundial_due_index_size")
        elif contender == "raw-shaped":
            started = time.monotonic()
            lease = await self.fencing.shard_lease() if self.fencing is not None else None
            token = production.fencing_token(0, lease, fallback_uid=str(uuid.uuid4()))
            shaped = await shapes.shaped_jobs(api, names, cron=cron, nominal=nominal, token=token)
            self.shaped, self.previous_shape = shaped
            result["create_seconds"] = round(time.monotonic() - started, 2)
            result["created"] = {"POST|sundial.dev/scheduledjobs|": len(names)}
            result["fencing_token"] = token
        elif contender == "raw-cronjob-shaped":
            started = time.monotonic()
            self.shaped = await shapes.cronjob_shaped_jobs(api, names, cron=cron, nominal=nominal)
            result["create_seconds"] = round(time.monotonic() - started, 2)
            result["created"] = {"POST|batch/cronjobs|": len(names)}
        elif contender.startswith("cronjob"):
            result["create_seconds"] = round(
                await api.create_many(((cj_path(ns), cron_job(name, cron)) for ns, name in names)), 2
            )
            result["created"] = {"POST|batch/cronjobs|": len(names)}


def priority_split(records: list[dict[str, Any]], high: set[str], *, share: float) -> dict[str, Any]:
    """Lags of the Jobs of the high-priority objects (by owner name) and of the rest."""
    split: dict[str, list[float]] = {"high": [], "rest": []}
    for r in records:
        split["high" if r.get("owner") in high else "rest"].append(r["received"] - env.parse_rfc3339(r["nominal"]))
    result: dict[str, Any] = {"share": share, "priority": HIGH_PRIORITY}
    for part, values in split.items():
        result[part] = {
            "jobs": len(values),
            "lag": summary(values),
            "time_to_last_job": round(max(values), 3) if values else None,
        }
    return result


async def _delete_all(api: Api, namespaces: list[str], path: Any) -> None:
    for ns in namespaces:
        with contextlib.suppress(Exception):  # best effort before the namespace goes
            await api.call("DELETE", path(ns))


def _brief(result: dict[str, Any]) -> str:
    lag = result.get("lag", {})
    return (
        f"seen={result.get('jobs_seen')} missing={result.get('missing')} p50={lag.get('p50')} p99={lag.get('p99')} "
        f"last={result.get('time_to_last_job')} slack={result.get('slack_seconds')} load={result.get('load_after')}"
    )
