"""Isolation on the real API server (DESIGN §11.1, issue 21).

CPU (item 1): a maximal-exclude object next to a plain one, both per-second, under one operator that also
serves the webhook; the plain one's runs still happen, and an exclude list (or a ScheduleCalendar) over the
bound is refused naming the field.

Fairness (item 3): backfills in one namespace draw from its budget of catch-up and backfill creates, measured
by their Jobs' creationTimestamps in whole seconds, while another namespace's runs still land.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.harness.namespaces import create_namespace, delete_namespace

from sundial.model import Trigger, names
from sundial.model.calendars import MAX_DATES, MAX_DATES_IN_ALL, MAX_EXCLUDE_ENTRIES

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher
    from tests.e2e.harness.webhooks import AdmissionWebhookLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

LABEL = names.SCHEDULED_JOB_LABEL


def _maximal_exclude(extra_dates: int = 0) -> list[dict[str, Any]]:
    """The largest exclude list the bounds admit (none of it matches today); EXTRA_DATES more dates beyond."""
    start = dt.date(2040, 1, 1)
    days = [(start + dt.timedelta(days=i)).isoformat() for i in range(MAX_DATES_IN_ALL + extra_dates)]
    entries: list[dict[str, Any]] = [{"dates": days[i : i + MAX_DATES]} for i in range(0, len(days), MAX_DATES)]
    masks = [{"schedule": f"{m % 60} {m % 24} 29 2 *"} for m in range(MAX_EXCLUDE_ENTRIES - len(entries))]
    return entries + masks


def _scheduled_job(cluster: Cluster, name: str, **spec: Any) -> dict[str, Any]:
    template = cluster.job_manifest("x", duration_seconds=0)
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/2 * * * * *",
            "successfulJobsHistoryLimit": 100,
            **spec,
            "jobTemplate": {"spec": template["spec"]},
        },
    }


def _jobs(cluster: Cluster, ns: str, owner: str) -> int:
    items = (cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}).get("items") or []
    return len(items)


def _create(cluster: Cluster, ns: str, manifest: dict[str, Any]) -> Any:
    return cluster.kubectl("create", "-n", ns, "-f", "-", input=json.dumps(manifest), check=False)


def test_a_maximal_exclude_next_to_a_plain_object(
    cluster: Cluster, namespace: str, start_admission_webhook: AdmissionWebhookLauncher
) -> None:
    webhook = start_admission_webhook(namespaces=[namespace])
    webhook.cover(namespace)
    try:
        maximal = _create(cluster, namespace, _scheduled_job(cluster, "maximal", exclude=_maximal_exclude()))
        assert maximal.returncode == 0, maximal.stderr
        plain = _create(cluster, namespace, _scheduled_job(cluster, "plain"))
        assert plain.returncode == 0, plain.stderr

        # The plain object keeps firing next to the maximal one, and the maximal one fires too.
        cluster.wait_for(lambda: _jobs(cluster, namespace, "plain") >= 3, timeout=90, message="plain's runs")
        cluster.wait_for(lambda: _jobs(cluster, namespace, "maximal") >= 3, timeout=90, message="maximal's runs")

        over = _create(cluster, namespace, _scheduled_job(cluster, "over", exclude=_maximal_exclude(extra_dates=1)))
        assert over.returncode != 0
        assert f"spec.exclude: at most {MAX_DATES_IN_ALL} dates in all" in over.stderr, over.stderr
        calendar = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduleCalendar",
            "metadata": {"name": "over"},
            "spec": {"exclude": _maximal_exclude(extra_dates=1)},
        }
        refused = _create(cluster, namespace, calendar)
        assert refused.returncode != 0
        assert f"spec.exclude: at most {MAX_DATES_IN_ALL} dates in all" in refused.stderr, refused.stderr
        assert cluster.get_json("scheduledjob", "over", "-n", namespace) is None

        before = _jobs(cluster, namespace, "plain")
        cluster.wait_for(lambda: _jobs(cluster, namespace, "plain") > before, timeout=60, message="plain runs on")
    finally:
        webhook.uncover(namespace)


RATE, BURST = 2, 4
"""The hostile namespace's budget (``--backlog-qps``, ``--backlog-burst``)."""
FLOODS, RUNS = 3, 10
"""Objects of the hostile namespace, each backfilling this many minutes."""


def _job_items(cluster: Cluster, ns: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (cluster.get_json("jobs", "-n", ns) or {}).get("items") or []
    return found


def _created(job: dict[str, Any]) -> dt.datetime:
    return dt.datetime.fromisoformat(job["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def _backfill(start: dt.datetime) -> str:
    end = start + dt.timedelta(minutes=RUNS - 1)
    stamp = "%Y-%m-%dT%H:%M:%SZ"
    return json.dumps({"token": "flood", "from": start.strftime(stamp), "to": end.strftime(stamp), "maxRuns": RUNS})


def test_backfills_keep_to_their_namespaces_budget_while_another_namespace_runs_on(
    cluster: Cluster, namespace: str, start_operator: OperatorLauncher
) -> None:
    hostile, victim = namespace, create_namespace(cluster, "budget-victim")
    try:
        start_operator("--backlog-qps", str(RATE), "--backlog-burst", str(BURST), namespaces=[hostile, victim])
        quiet = _create(cluster, victim, _scheduled_job(cluster, "on-time"))  # every 2 s
        assert quiet.returncode == 0, quiet.stderr
        cluster.wait_for(lambda: _jobs(cluster, victim, "on-time") >= 1, timeout=60, message="the victim's first run")
        # Suspended per-minute objects: only their backfills run (a backfill runs while suspended).
        start = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0) - dt.timedelta(minutes=RUNS + 5)
        for i in range(FLOODS):
            manifest = _scheduled_job(cluster, f"flood-{i}", schedule="* * * * *", suspend=True)
            manifest["metadata"]["annotations"] = {names.BACKFILL_ANNOTATION: _backfill(start)}
            made = _create(cluster, hostile, manifest)
            assert made.returncode == 0, made.stderr
        total = FLOODS * RUNS
        flood = cluster.wait_for(
            lambda: (items := _job_items(cluster, hostile)) and len(items) >= total and items,
            timeout=120,
            message=f"{total} backfill Jobs",
        )

        # Nothing lost, nothing twice: each object's ten minutes, once each, all backfill runs.
        assert len(flood) == total
        runs = sorted((j["metadata"]["labels"][LABEL], j["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION])
                      for j in flood)  # fmt: skip
        minutes = [(start + dt.timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M:%SZ") for m in range(RUNS)]
        assert runs == sorted((f"flood-{i}", t) for i in range(FLOODS) for t in minutes)
        assert {j["metadata"]["annotations"][names.TRIGGER_ANNOTATION] for j in flood} == {Trigger.BACKFILL}

        # At most burst + rate x seconds in every window of whole seconds (+2 s: a token is taken when the
        # pass plans, its Job created after the claim), so the flood takes its time.
        seconds = sorted(int(_created(j).timestamp()) for j in flood)
        for i, low in enumerate(seconds):
            for j in range(i, len(seconds)):
                assert j - i + 1 <= BURST + RATE * (seconds[j] - low + 2), (seconds, low, seconds[j])
        assert seconds[-1] - seconds[0] >= (total - BURST) / RATE - 4, seconds

        # The other namespace's runs kept landing while the flood was going on.
        during = [j for j in _job_items(cluster, victim) if seconds[0] <= int(_created(j).timestamp()) <= seconds[-1]]
        assert len(during) >= 2, [j["metadata"]["creationTimestamp"] for j in _job_items(cluster, victim)]
    finally:
        delete_namespace(cluster, victim)
