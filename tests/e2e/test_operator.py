"""The operator end to end: ``sundial run`` as a subprocess against a real API server.

The module fixture starts one ``python -m sundial run`` (``start_module_operator`` in conftest) watching
the module's per-test namespaces (its log is kept under the pytest temp directory and printed on
failure). Every test polls with a deadline; schedules are seconds-level so the whole module takes well
under a minute of schedule time.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

LABEL = names.SCHEDULED_JOB_LABEL


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces) -> Operator:
    """One operator for the module, watching exactly the module's test namespaces."""
    return start_module_operator(namespaces=module_namespaces.all)


@pytest.fixture
def namespace(module_namespace: str) -> str:
    """This module's tests run in the namespaces the shared operator watches."""
    return module_namespace


# Helpers ---------------------------------------------------------------------------------------------


def _scheduled_job(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    job_spec = template["spec"]
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"metadata": {"labels": {"team": "e2e"}}, "spec": job_spec}},
    }


def _jobs(cluster: Cluster, namespace: str, owner: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", namespace, "-l", f"{LABEL}={owner}") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return sorted(items, key=lambda job: job["metadata"]["name"])


def _sj(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", namespace) or {}
    return body


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _is_true(obj: dict[str, Any], kind: str) -> bool:
    condition = _condition(obj, kind)
    return bool(condition and condition.get("status") == "True")


def _soon(seconds: float) -> str:
    at = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _events(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listing = (
        cluster.get_json(
            "events",
            "-n",
            namespace,
            "--field-selector",
            f"involvedObject.kind=ScheduledJob,involvedObject.name={name}",
        )
        or {}
    )
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


# Tests -----------------------------------------------------------------------------------------------


def test_readyz_and_metrics(operator: Operator) -> None:
    assert operator.probe("/healthz") == 200
    assert operator.probe("/readyz") == 200
    text = operator.metrics()
    for name in (
        "sundial_leases_held",
        "sundial_due_index_size",
        "sundial_api_requests_total",
        "sundial_schedule_lag_seconds",
        "sundial_runs_started_total",
    ):
        assert name in text
    assert "sundial_leases_held 1.0" in text


def test_cron_every_five_seconds_creates_contract_jobs(operator: Operator, cluster: Cluster, namespace: str) -> None:
    cluster.apply(_scheduled_job("every5", cluster.job_manifest("x"), schedule="*/5 * * * * *"), namespace)
    jobs = cluster.wait_for(
        lambda: (found := _jobs(cluster, namespace, "every5")) and len(found) >= 2 and found,
        timeout=30,
        message="two Jobs of a */5-second schedule",
    )
    sj = _sj(cluster, namespace, "every5")
    uid = sj["metadata"]["uid"]
    for job in jobs:
        meta = job["metadata"]
        assert meta["labels"][LABEL] == "every5"
        assert meta["labels"]["team"] == "e2e"
        annotations = meta["annotations"]
        scheduled = dt.datetime.fromisoformat(annotations[names.SCHEDULED_TIME_ANNOTATION].replace("Z", "+00:00"))
        assert scheduled.second % 5 == 0
        assert annotations[names.ATTEMPT_ANNOTATION] == "1"
        assert annotations[names.TRIGGER_ANNOTATION] == "schedule"
        assert annotations[names.IDEMPOTENCY_KEY_ANNOTATION]
        assert annotations[names.FENCING_TOKEN_ANNOTATION].startswith("0-")
        owners = [ref for ref in meta["ownerReferences"] if ref.get("controller")]
        assert [(ref["kind"], ref["name"], ref["uid"]) for ref in owners] == [("ScheduledJob", "every5", uid)]
        env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["SUNDIAL_SCHEDULED_TIME"] == annotations[names.SCHEDULED_TIME_ANNOTATION]
        assert env["SUNDIAL_ATTEMPT"] == "1"
        assert env["SUNDIAL_IDEMPOTENCY_KEY"] == annotations[names.IDEMPOTENCY_KEY_ANNOTATION]
        assert env["SUNDIAL_FENCING_TOKEN"] == annotations[names.FENCING_TOKEN_ANNOTATION]

    sj = cluster.wait_for(
        lambda: (
            (obj := _sj(cluster, namespace, "every5")) and (obj.get("status") or {}).get("lastSuccessfulTime") and obj
        ),
        timeout=30,
        message="status.lastSuccessfulTime",
    )
    status = sj["status"]
    assert status["lastScheduleTime"]
    assert status["nextScheduleTime"]
    assert _is_true(sj, "Ready")
    # The operator writes nothing of its own onto the object: no kopf-style annotations, no finalizers.
    metadata = sj["metadata"]
    assert not [key for key in metadata.get("annotations") or {} if "kopf" in key]
    assert not metadata.get("finalizers")
    cluster.wait_for(  # Events are sent in the background
        lambda: "SuccessfulCreate" in {event["reason"] for event in _events(cluster, namespace, "every5")},
        timeout=20,
        message="a SuccessfulCreate Event",
    )
    cluster.kubectl("delete", "scheduledjob", "every5", "-n", namespace, "--wait=false")


def test_invalid_template_is_dead_lettered_while_others_keep_firing(
    operator: Operator, cluster: Cluster, namespace: str
) -> None:
    poison = cluster.job_manifest("x")
    # The CRD accepts any pod template; the Job API requires restartPolicy Never or OnFailure (422).
    poison["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    cluster.apply(_scheduled_job("poison", poison, runAt=_soon(1)), namespace)
    cluster.apply(_scheduled_job("healthy", cluster.job_manifest("x"), schedule="*/2 * * * * *"), namespace)
    sj = cluster.wait_for(
        lambda: (obj := _sj(cluster, namespace, "poison")) and (obj.get("status") or {}).get("deadLetters") and obj,
        timeout=30,
        message="InvalidJobTemplate dead letter",
    )
    [letter] = sj["status"]["deadLetters"]
    assert letter["reason"] == "InvalidJobTemplate"
    assert letter["message"]
    assert _jobs(cluster, namespace, "poison") == []
    started = len(_jobs(cluster, namespace, "healthy"))
    cluster.wait_for(
        lambda: len(_jobs(cluster, namespace, "healthy")) >= started + 2,
        timeout=20,
        message="the healthy ScheduledJob keeps firing",
    )
    cluster.kubectl("delete", "scheduledjob", "healthy", "-n", namespace, "--wait=false")


def test_forbid_skips_while_a_run_is_active(operator: Operator, cluster: Cluster, namespace: str) -> None:
    slow = cluster.job_manifest("x", duration_seconds=6)
    cluster.apply(_scheduled_job("forbid", slow, schedule="*/2 * * * * *", concurrencyPolicy="Forbid"), namespace)
    sj = cluster.wait_for(
        lambda: (
            (obj := _sj(cluster, namespace, "forbid"))
            and ((obj.get("status") or {}).get("counters") or {}).get("skipped", 0) >= 1
            and obj
        ),
        timeout=30,
        message="a skipped run under Forbid",
    )
    assert len(sj["status"].get("active") or []) <= 1
    assert "RunSkipped" in {event["reason"] for event in _events(cluster, namespace, "forbid")}
    cluster.kubectl("delete", "scheduledjob", "forbid", "-n", namespace, "--wait=false")


def test_trigger_annotation_starts_a_manual_run(operator: Operator, cluster: Cluster, namespace: str) -> None:
    cluster.apply(_scheduled_job("manual", cluster.job_manifest("x"), schedule="0 0 1 1 *"), namespace)
    cluster.wait_for(
        lambda: (_sj(cluster, namespace, "manual").get("status") or {}).get("nextScheduleTime"),
        timeout=20,
        message="the ScheduledJob is planned",
    )
    assert _jobs(cluster, namespace, "manual") == []
    cluster.kubectl("annotate", "scheduledjob", "manual", "-n", namespace, "sundial.dev/trigger=token-1")
    [job] = cluster.wait_for(
        lambda: _jobs(cluster, namespace, "manual"), timeout=20, message="a manually triggered Job"
    )
    assert job["metadata"]["annotations"][names.TRIGGER_ANNOTATION] == "manual"
    cluster.wait_for(
        lambda: (_sj(cluster, namespace, "manual").get("status") or {}).get("lastHandledTrigger") == "token-1",
        timeout=20,
        message="status.lastHandledTrigger echoes the token",
    )


def test_operator_log_is_structured_json_without_credentials(operator: Operator) -> None:
    lines = [line for line in operator.log.read_text(errors="replace").splitlines() if line.startswith("{")]
    assert lines, operator.log_tail()
    parsed = [json.loads(line) for line in lines]
    assert all({"time", "level", "logger", "message"} <= set(entry) for entry in parsed)
    assert not [line for line in lines if "BEGIN" in line or "Bearer" in line]
