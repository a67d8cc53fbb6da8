"""Backfill and buffered overlap end to end (DESIGN §4.1, §4.2, issue 16): one operator, one namespace per test.

The backfill goes through the installed ``kubectl-sundial`` (as a user would run it); Jobs "run" for the
sandbox's duration annotation. Every wait polls with a deadline.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names
from sundial.planner import manifests

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

PLUGIN = Path(sys.executable).with_name("kubectl-sundial")
LABEL = names.SCHEDULED_JOB_LABEL
STEP = 10
"""Seconds between the nominal times of the backfilled schedule."""


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces) -> Operator:
    return start_module_operator("--event-series-interval", "1", namespaces=module_namespaces.all)


@pytest.fixture
def ns(operator: Operator, module_namespace: str) -> str:
    return module_namespace


def _manifest(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _body(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", ns) or {}
    return found


def _status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = _body(cluster, ns, name).get("status") or {}
    return found


def _jobs(cluster: Cluster, ns: str, owner: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}).get(
        "items"
    ) or []
    return items


def _annotation(job: dict[str, Any], key: str) -> str:
    return str(job["metadata"]["annotations"][key])


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _rfc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reasons(cluster: Cluster, ns: str, name: str) -> set[str]:
    selector = f"involvedObject.kind=ScheduledJob,involvedObject.name={name}"
    items = (cluster.get_json("events", "-n", ns, "--field-selector", selector) or {}).get("items") or []
    return {str(event["reason"]) for event in items}


def _plugin(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    if not PLUGIN.is_file():
        pytest.fail(f"{PLUGIN} is not installed (pip install -e .)")
    result = subprocess.run(
        [str(PLUGIN), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=100,
    )
    assert result.returncode == 0, f"kubectl-sundial {' '.join(args)} ({result.returncode}):\n{result.stderr}"
    return result


def test_a_backfill_runs_exactly_the_times_without_a_run_under_their_scheduled_names(cluster: Cluster, ns: str) -> None:
    name = "filled"
    quick = cluster.job_manifest("x", duration_seconds=1)
    spec = {"schedule": f"*/{STEP} * * * * *", "successfulJobsHistoryLimit": 100}
    cluster.apply(_manifest(name, quick, **spec), ns)

    def two_scheduled_runs() -> list[dict[str, Any]] | None:
        done = [r for r in _status(cluster, ns, name).get("recentRuns") or [] if r.get("result") == "Succeeded"]
        return done if len(done) >= 2 else None

    cluster.wait_for(two_scheduled_runs, timeout=60, message="two scheduled runs")
    cluster.kubectl("patch", "scheduledjob", name, "-n", ns, "--type=merge", "-p", '{"spec": {"suspend": true}}')
    cluster.wait_for(
        lambda: (
            not _status(cluster, ns, name).get("active")
            and any(
                c.get("type") == "Suspended" and c.get("status") == "True"
                for c in _status(cluster, ns, name).get("conditions") or []
            )
        ),
        timeout=30,
        message="suspended with nothing active",
    )
    body = _body(cluster, ns, name)
    uid = body["metadata"]["uid"]
    created = _parse(body["metadata"]["creationTimestamp"])
    ran = {_parse(r["scheduledTime"]) for r in body["status"].get("recentRuns") or []}
    start = created.replace(second=created.second - created.second % STEP) - dt.timedelta(seconds=3 * STEP)
    end = max(ran)
    every = [start + dt.timedelta(seconds=STEP * i) for i in range(int((end - start).total_seconds()) // STEP + 1)]
    expected = [t for t in every if t not in ran]
    assert len(expected) >= 3 and len(every) - len(expected) >= 2  # some times before creation, some already run

    out = _plugin(cluster, "-n", ns, "backfill", name, "--from", _rfc(start), "--to", _rfc(end), "--wait").stdout
    assert f"{len(expected)} run(s) started, {len(every) - len(expected)} time(s) already had a run" in out

    filled = [job for job in _jobs(cluster, ns, name) if _annotation(job, names.TRIGGER_ANNOTATION) == "backfill"]
    by_name = {job["metadata"]["name"]: job for job in filled}
    wanted = {manifests.job_name(scheduled_job=name, scheduled_time=t, attempt=1): t for t in expected}
    assert set(by_name) == set(wanted)
    for job_name, nominal in wanted.items():
        job = by_name[job_name]
        assert _parse(_annotation(job, names.SCHEDULED_TIME_ANNOTATION)) == nominal
        key = manifests.idempotency_key(uid=uid, scheduled_time=nominal)
        assert _annotation(job, names.IDEMPOTENCY_KEY_ANNOTATION) == key
    progress = _status(cluster, ns, name)["backfills"][-1]
    assert progress["done"] and progress["started"] == len(expected)

    # Exactly once across backfills: the same range again starts nothing.
    again = _plugin(cluster, "-n", ns, "backfill", name, "--from", _rfc(start), "--to", _rfc(end), "--wait").stdout
    assert f"0 run(s) started, {len(every)} time(s) already had a run" in again
    assert len([j for j in _jobs(cluster, ns, name) if _annotation(j, names.TRIGGER_ANNOTATION) == "backfill"]) == len(
        expected
    )
    assert {"BackfillStarted", "BackfillCompleted"} <= _reasons(cluster, ns, name)
    cluster.kubectl("delete", "scheduledjob", name, "-n", ns, "--wait=false")


def test_a_backfill_of_a_one_off_is_refused(cluster: Cluster, ns: str) -> None:
    name = "once"
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    cluster.apply(_manifest(name, cluster.job_manifest("x"), runAt=_rfc(later)), ns)
    value = json.dumps({"token": "t1", "from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"})
    cluster.kubectl("annotate", "scheduledjob", name, "-n", ns, f"{names.BACKFILL_ANNOTATION}={value}")
    entry = cluster.wait_for(
        lambda: next(iter(_status(cluster, ns, name).get("backfills") or []), None),
        timeout=30,
        message="the refused backfill in status",
    )
    assert entry["done"] and entry["message"].startswith("refused")
    cluster.wait_for(lambda: "BackfillRefused" in _reasons(cluster, ns, name), timeout=20, message="BackfillRefused")
    assert _jobs(cluster, ns, name) == []


def test_buffer_one_starts_the_waiting_run_when_the_long_one_ends(cluster: Cluster, ns: str) -> None:
    name = "buffered"
    slow = cluster.job_manifest("x", duration_seconds=12)
    cluster.apply(_manifest(name, slow, schedule="*/5 * * * * *", concurrencyPolicy="BufferOne"), ns)
    most_active = 0

    def waiting() -> str | None:
        nonlocal most_active
        status = _status(cluster, ns, name)
        most_active = max(most_active, len(status.get("active") or []))
        queued = status.get("buffered") or []
        return str(queued[0]["scheduledTime"]) if queued else None

    held = _parse(cluster.wait_for(waiting, timeout=40, message="a buffered run"))
    wanted = manifests.job_name(scheduled_job=name, scheduled_time=held, attempt=1)

    def started() -> dict[str, Any] | None:
        nonlocal most_active
        most_active = max(most_active, len(_status(cluster, ns, name).get("active") or []))
        return next((job for job in _jobs(cluster, ns, name) if job["metadata"]["name"] == wanted), None)

    job = cluster.wait_for(started, timeout=60, message=f"the buffered run's Job {wanted}")
    assert _annotation(job, names.TRIGGER_ANNOTATION) == "schedule"
    assert _parse(_annotation(job, names.SCHEDULED_TIME_ANNOTATION)) == held
    created = _parse(job["metadata"]["creationTimestamp"])
    assert created - held >= dt.timedelta(seconds=4)  # it waited for the long run instead of starting on time
    status = _status(cluster, ns, name)
    earlier = [r for r in status.get("recentRuns") or [] if _parse(r["scheduledTime"]) < held]
    assert earlier and all(_parse(r["finishedAt"]) <= created for r in earlier)
    assert most_active <= 1
    cluster.wait_for(
        lambda: (_status(cluster, ns, name).get("counters") or {}).get("skipped", 0) >= 1,
        timeout=40,
        message="a run skipped while one already waited",
    )
    assert (_status(cluster, ns, name).get("counters") or {}).get("buffered", 0) >= 1
    cluster.wait_for(lambda: "RunBuffered" in _reasons(cluster, ns, name), timeout=20, message="RunBuffered")
    cluster.kubectl("delete", "scheduledjob", name, "-n", ns, "--wait=false")
