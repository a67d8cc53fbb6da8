"""A flood of crafted AdmissionReviews against the webhook port leaves the planning loop alone (issue 30 item 1).

One operator serves the webhook for one namespace and plans per-2-second ScheduledJobs of another tenant. For
:data:`PHASE` seconds nothing is posted (baseline), then for :data:`PHASE` seconds a peer without credentials
posts crafted 838 KiB UPDATE reviews (``object`` and ``oldObject`` with different wide jobTemplates: what kopf
decoded and diffed on the main loop) to the webhook at :data:`RATE` a second, as any pod may while the
NetworkPolicy is off. Meanwhile ``/healthz`` and ``/readyz`` are probed every 0.5 s with a 2 s timeout, and a
legitimate review (an invalid ScheduledJob, ``kubectl create --dry-run=server``) is sent every 3 s.

Then: the tenant's runs (nominal time -> Job creationTimestamp, whole seconds) stay within +1 s p99 of the
baseline, no probe missed, and every legitimate review was answered by the webhook (refused naming the field).
The numbers are printed (``-s``) for the record.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from bench.crafted import crafted_review
from tests.e2e.harness.namespaces import create_namespace, delete_namespace
from tests.e2e.harness.operators import http_get

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.webhooks import AdmissionWebhook, AdmissionWebhookLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(360)]

PHASE = 30.0
"""Seconds of the baseline, and of the flood."""
RATE = 10.0
"""Crafted reviews posted a second during the flood."""
OBJECTS = 4
"""The other tenant's ScheduledJobs, each every 2 seconds."""
SLACK = 1.0
"""The goal: flood p99 <= baseline p99 + this (seconds)."""

LABEL = names.SCHEDULED_JOB_LABEL
INVALID = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": "legitimate"},
    "spec": {
        "schedule": "0 0 30 2 *",
        "jobTemplate": {
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}
        },
    },
}


def _stamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _lags(cluster: Cluster, ns: str, start: dt.datetime, end: dt.datetime) -> list[float]:
    """Seconds from each run's nominal time to its Job's creation, for runs nominally in [START, END)."""
    items = (cluster.get_json("jobs", "-n", ns, "-l", LABEL) or {}).get("items") or []
    lags = []
    for job in items:
        nominal = _stamp(job["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION])
        if start <= nominal < end:
            lags.append((_stamp(job["metadata"]["creationTimestamp"]) - nominal).total_seconds())
    return sorted(lags)


def _p99(values: list[float]) -> float:
    return values[max(0, int(len(values) * 0.99) - 1)]


class Observer:
    """Probes every 0.5 s (2 s timeout) and a legitimate review every 3 s, on a thread, until :meth:`stop`."""

    def __init__(self, cluster: Cluster, webhook: AdmissionWebhook, namespace: str) -> None:
        self.cluster, self.webhook, self.namespace = cluster, webhook, namespace
        self.probes = self.misses = 0
        self.reviews: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        health = self.webhook.operator.health_url
        tick = 0
        while not self._stop.wait(0.5):
            for path in ("/healthz", "/readyz"):
                self.probes += 1
                self.misses += http_get(health + path, timeout=2.0)[0] != 200
            tick += 1
            if tick % 6 == 0:
                result = self.cluster.kubectl(
                    "create", "--dry-run=server", "-n", self.namespace, "-f", "-",
                    input=json.dumps(INVALID), check=False,
                )  # fmt: skip
                self.reviews.append(result.stderr.strip())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def _flood(url: str, seconds: float) -> dict[int, int]:
    """Post crafted reviews at RATE a second for SECONDS without credentials (no certificate check either:
    a peer needs none); the answers' HTTP statuses counted (0: no answer within 10 s)."""
    data = crafted_review()
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE

    def one() -> int:
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as response:
                response.read()
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)
        except OSError:
            return 0

    statuses: dict[int, int] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=int(RATE * 2)) as pool:
        futures = []
        due, end = time.monotonic(), time.monotonic() + seconds
        while due < end:
            futures.append(pool.submit(one))
            due += 1 / RATE
            time.sleep(max(0.0, due - time.monotonic()))
        for future in futures:
            status = future.result()
            statuses[status] = statuses.get(status, 0) + 1
    return statuses


def _scheduled_job(cluster: Cluster, name: str) -> dict[str, Any]:
    template = cluster.job_manifest("x", duration_seconds=0)
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/2 * * * * *",
            "successfulJobsHistoryLimit": 100,
            "jobTemplate": {"spec": template["spec"]},
        },
    }


def test_a_flood_of_crafted_reviews_leaves_runs_probes_and_legitimate_reviews_on_time(
    cluster: Cluster, namespace: str, start_admission_webhook: AdmissionWebhookLauncher
) -> None:
    tenant = create_namespace(cluster, "flood-tenant")
    webhook = start_admission_webhook(namespaces=[namespace, tenant])
    webhook.cover(namespace)
    try:
        for i in range(OBJECTS):
            cluster.apply(_scheduled_job(cluster, f"on-time-{i}"), tenant)
        ever = (dt.datetime.min.replace(tzinfo=dt.UTC), dt.datetime.max.replace(tzinfo=dt.UTC))
        cluster.wait_for(
            lambda: len(_lags(cluster, tenant, *ever)) >= OBJECTS, timeout=60, message="the tenant's first runs"
        )
        phases: dict[str, Any] = {}
        for phase in ("baseline", "flood"):
            observer = Observer(cluster, webhook, namespace)
            start = dt.datetime.now(dt.UTC)
            answers = _flood(webhook.url, PHASE) if phase == "flood" else time.sleep(PHASE)
            end = dt.datetime.now(dt.UTC)
            observer.stop()
            phases[phase] = {"start": start, "end": end, "observer": observer, "answers": answers}
        last = phases["flood"]["end"] - dt.timedelta(seconds=2)
        cluster.wait_for(
            lambda: _lags(cluster, tenant, last, phases["flood"]["end"]), timeout=60, message="the flood's last runs"
        )
        lags = {name: _lags(cluster, tenant, p["start"], p["end"]) for name, p in phases.items()}
        record = {
            name: {
                "runs": len(lags[name]),
                "p50_s": lags[name][len(lags[name]) // 2],
                "p99_s": _p99(lags[name]),
                "max_s": lags[name][-1],
                "probes": p["observer"].probes,
                "probe_misses": p["observer"].misses,
                "legitimate_reviews": len(p["observer"].reviews),
                "flood_answers": p["answers"],
            }
            for name, p in phases.items()
        }
        print("admission flood:", json.dumps(record, default=str))

        expected = OBJECTS * PHASE / 2
        for name in phases:
            assert len(lags[name]) >= expected * 0.8, record  # every run happened (give or take the edges)
            assert record[name]["probe_misses"] == 0, record
            assert record[name]["legitimate_reviews"] >= 3, record
            for answer in phases[name]["observer"].reviews:  # answered by the webhook, naming the field
                assert "denied the request" in answer and "spec.schedule" in answer, answer
        assert sum(record["flood"]["flood_answers"].values()) >= RATE * PHASE * 0.9, record
        assert record["flood"]["p99_s"] <= record["baseline"]["p99_s"] + SLACK, record
    finally:
        webhook.uncover(namespace)
        delete_namespace(cluster, tenant)
