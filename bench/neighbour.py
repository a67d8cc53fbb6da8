"""neighbour: victims' lag alone, then next to a hostile namespace (issue 21 item 3), on one fresh sandbox.

Victims: V namespaces, each with one ScheduledJob every 5 seconds. Phase ``alone`` measures their lag (nominal
time -> Job seen by the independent watch) for S seconds. Then a hostile namespace moves in and phase
``hostile`` measures the same for S seconds while it:

* has 16 maximal ScheduleCalendars (100 entries sharing the 1,000 dates allowed in all) referred to by a per-second
  ScheduledJob that also has a maximal ``spec.exclude``;
* floods the webhook port with AdmissionReviews of a maximal ScheduleCalendar, FLOOD at a time, without
  credentials (as any network peer can; loopback only, bounded by the phase's deadline);
* has T objects carrying a big ``sundial.dev/trigger`` token (TOKEN_KB KiB, below the annotation limit);
* asks one ``Allow`` object for a backfill of 100 runs.

During both phases ``/readyz`` is probed every second with a 2 s timeout (misses counted). The result's
``latest`` is what ``docs/benchmarks/latest.json`` keeps under ``neighbour``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from bench import env
from bench.kube import Api, credentials, scheduled_job, sj_path
from bench.stats import summary
from sundial.model import calendars
from sundial_sandbox.webhook import issue_serving_certificate

CALENDARS_PATH = "/apis/sundial.dev/v1alpha1/namespaces/{}/schedulecalendars"
HOSTILE = "nb-hostile"
GOAL_SLACK_S = 1.0
"""The goal: hostile p99 <= alone p99 + this."""


def maximal_exclude() -> list[dict[str, Any]]:
    """The most a list may hold: 100 entries sharing the 1,000 dates allowed in all (10 each), distinct and far in
    the future (they never exclude a victim's or its own run)."""
    start = date(2100, 1, 1)
    per_entry = calendars.MAX_DATES_IN_ALL // 100
    return [
        {"dates": [(start + timedelta(days=per_entry * entry + i)).isoformat() for i in range(per_entry)]}
        for entry in range(100)
    ]


def calendar(name: str, exclude: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduleCalendar",
        "metadata": {"name": name},
        "spec": {"timeZone": "Etc/UTC", "exclude": exclude},
    }


def review(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": "sundial.dev", "version": "v1alpha1", "kind": "ScheduleCalendar"},
            "resource": {"group": "sundial.dev", "version": "v1alpha1", "resource": "schedulecalendars"},
            "operation": "CREATE",
            "namespace": HOSTILE,
            "name": body["metadata"]["name"],
            "object": body,
            "userInfo": {"username": "nobody"},
        },
    }


class Neighbour:
    def __init__(
        self,
        *,
        out: Path,
        victims: int,
        seconds: int,
        operator_args: list[str],
        token_objects: int = 50,
        token_kb: int = 200,
        flood: int = 4,
        backfill: int = 100,
    ) -> None:
        self.out, self.victims, self.seconds, self.operator_args = out, victims, seconds, operator_args
        self.token_objects, self.token_kb, self.flood, self.backfill = token_objects, token_kb, flood, backfill

    def run(self, cluster: env.BenchCluster | None = None) -> dict[str, Any]:
        return env.run_on_cluster("neighbour", self.out, self._run, cluster)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        tls = issue_serving_certificate(self.out / "webhook-tls", ips=("127.0.0.1",), dns_names=())
        port = env.free_port()
        operator = env.start_operator(
            cluster.kubeconfig, self.out, *self.operator_args,
            "--webhook-port", str(port), "--webhook-addr", "127.0.0.1", "--webhook-host", "127.0.0.1",
            "--webhook-cert-file", str(tls.cert), "--webhook-key-file", str(tls.key),
            identity="neighbour",
        )  # fmt: skip
        watch = env.JobWatch(cluster.kubeconfig, self.out / "neighbour-jobs.jsonl")
        victims = [f"nb-victim-{i:02d}" for i in range(self.victims)]
        try:
            operator.wait_ready()
            async with Api(credentials(cluster.kubeconfig)) as api:
                await api.namespaces([*victims, HOSTILE])
                await api.create_many((sj_path(ns), scheduled_job("victim", "*/5 * * * * *")) for ns in victims)
                await asyncio.sleep(10)  # the victims' first passes
                print(f"[neighbour] alone: {self.victims} victims, {self.seconds} s, load={env.load()}", flush=True)
                alone = await self._phase(operator, watch, set(victims))
                print(f"[neighbour] alone: {alone['p99_s']} s p99", flush=True)
                setup = await self._move_in(api)
                url = f"https://127.0.0.1:{port}/validate-schedulecalendar"
                stop = time.monotonic() + self.seconds + 10
                flood = asyncio.gather(*(self._flood(url, stop) for _ in range(self.flood)))
                hostile = await self._phase(operator, watch, set(victims))
                floods = await flood
                hostile["webhook_flood"] = {
                    "concurrency": self.flood,
                    "reviews": sum(f["reviews"] for f in floods),
                    "errors": sum(f["errors"] for f in floods),
                    "latency_s": summary([s for f in floods for s in f["latencies"]]),
                }
                hostile["setup"] = setup
                print(f"[neighbour] hostile: {hostile['p99_s']} s p99", flush=True)
                hostile["operator_rss_mb"] = env.rss_mb(operator.pid)
        finally:
            watch.close()
            operator.stop()
        latest = {
            "alone": {k: alone[k] for k in ("p99_s", "p50_s", "runs", "missed", "load", "readyz_misses")},
            "hostile": {k: hostile[k] for k in ("p99_s", "p50_s", "runs", "missed", "load", "readyz_misses")},
            "goal": f"hostile.p99_s <= alone.p99_s + {GOAL_SLACK_S}",
            "goal_met": hostile["p99_s"] <= alone["p99_s"] + GOAL_SLACK_S,
            "victims": self.victims,
            "phase_seconds": self.seconds,
        }
        return {"alone": alone, "hostile": hostile, "latest": latest}

    async def _move_in(self, api: Api) -> dict[str, Any]:
        """The hostile namespace's objects; the seconds each kind took to create."""
        took: dict[str, float] = {}
        exclude = maximal_exclude()
        path = CALENDARS_PATH.format(HOSTILE)
        took["calendars"] = round(
            await api.create_many(((path, calendar(f"max-{i:02d}", exclude)) for i in range(16)), concurrency=4), 1
        )
        per_second = scheduled_job("per-second", "* * * * * *")
        per_second["spec"]["calendarRefs"] = [f"max-{i:02d}" for i in range(16)]
        per_second["spec"]["exclude"] = exclude
        token = "t" * (self.token_kb * 1024)
        tokens = []
        for i in range(self.token_objects):
            body = scheduled_job(f"token-{i:03d}", "0 0 1 1 *")
            body["metadata"]["annotations"] = {"sundial.dev/trigger": f"{i}-{token}"}
            tokens.append((sj_path(HOSTILE), body))
        now = datetime.now(UTC).replace(microsecond=0)
        backfill = scheduled_job("backfill", "* * * * *")
        backfill["spec"]["concurrencyPolicy"] = "Allow"
        request = {
            "token": "b1",
            "from": (now - timedelta(minutes=self.backfill - 1)).isoformat().replace("+00:00", "Z"),
            "to": now.isoformat().replace("+00:00", "Z"),
            "maxRuns": self.backfill,
        }
        backfill["metadata"]["annotations"] = {"sundial.dev/backfill": json.dumps(request)}
        took["objects"] = round(
            await api.create_many([(sj_path(HOSTILE), per_second), (sj_path(HOSTILE), backfill), *tokens], 8), 1
        )
        return {"seconds": took, "token_objects": self.token_objects, "token_kb": self.token_kb}

    async def _phase(self, operator: env.Operator, watch: env.JobWatch, victims: set[str]) -> dict[str, Any]:
        first = time.time() + 1
        last = first + self.seconds
        load_before = env.load()
        misses = probes = 0
        while time.time() < last:
            probes += 1
            started = time.monotonic()
            status = await asyncio.to_thread(env.http_status, operator.health_url + "/readyz", 2.0)
            misses += status != 200
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        await asyncio.sleep(8)  # the window's last runs reach the watch
        seen: dict[tuple[str, float], float] = {}
        for record in watch.records():
            if record["namespace"] not in victims or not record.get("nominal"):
                continue
            nominal = env.parse_rfc3339(record["nominal"])
            if first <= nominal <= last:
                key = (record["namespace"], nominal)
                seen[key] = min(seen.get(key, float("inf")), record["received"] - nominal)
        lags = sorted(seen.values())
        expected = len(victims) * int(self.seconds // 5)
        stats = summary(lags)
        return {
            "p99_s": stats.get("p99"),
            "p50_s": stats.get("p50"),
            "max_s": stats.get("max"),
            "runs": len(lags),
            "expected": expected,
            "missed": max(0, expected - len(lags)),
            "load": {"before": load_before, "after": env.load()},
            "readyz_misses": misses,
            "readyz_probes": probes,
        }

    async def _flood(self, url: str, stop: float) -> dict[str, Any]:
        """Post maximal ScheduleCalendar reviews one after another until STOP (a bounded loop)."""
        body = json.dumps(review(calendar("flood", maximal_exclude())))
        reviews = errors = 0
        latencies: list[float] = []
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False), timeout=timeout) as session:
            while time.monotonic() < stop:
                started = time.monotonic()
                try:
                    async with session.post(url, data=body, headers={"Content-Type": "application/json"}) as answer:
                        await answer.read()
                        errors += answer.status >= 300
                except (aiohttp.ClientError, TimeoutError):
                    errors += 1
                    await asyncio.sleep(0.5)
                reviews += 1
                latencies.append(time.monotonic() - started)
        return {"reviews": reviews, "errors": errors, "latencies": latencies}
