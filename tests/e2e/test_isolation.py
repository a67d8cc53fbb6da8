"""CPU isolation on the real API server (DESIGN §11.1, issue 21 item 1): a maximal-exclude object next to a
plain one, both per-second, under one operator that also serves the webhook; the plain one's runs still
happen, and an exclude list (or a ScheduleCalendar) over the bound is refused naming the field."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names
from sundial.model.calendars import MAX_DATES, MAX_DATES_IN_ALL, MAX_EXCLUDE_ENTRIES

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
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
