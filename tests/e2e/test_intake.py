"""The intake on the real control plane (DESIGN §12.1): objects any tenant may write - each of which used to end
the operator at its first event and again at every restart's LIST - are quarantined while every other object's
runs stay on time; a restart with them present becomes ready; a relist after the API server forgot the watch's
version replaces the store, so a Job deleted while nobody watched no longer holds its run active.

The poisons (all written by the cluster admin here, but each within what a tenant with ``create jobs`` or
``create scheduledjobs`` may write, and created while no webhook covers the namespace):

* a Job labelled ``sundial.dev/scheduledjob`` stamped ``0001-01-01T00:00:00+01:00`` (before year 1 in UTC), and
  one stamped ``9999-12-31T23:59:59-01:00`` (after year 9999);
* a Job whose watch line is over 4 MiB (700,000 ``<`` in one env value: the API server writes each as 6 bytes);
* ScheduledJobs nested 300 levels deep under ``spec.jobTemplate.metadata`` (deeper than the store's encoder
  goes), 1,100 levels (deeper than orjson decodes: the whole LIST page it is in used to be unreadable) and 9,990
  levels (about the deepest the API server accepts; deeper than Python's default recursion limit).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.harness.namespaces import create_namespace, delete_namespace

from sundial.model import names

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

HEALTHY = 4
DEEP = (300, 1100, 9990)


@pytest.fixture
def poisons(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = create_namespace(cluster, f"poison-{request.node.name}")
    yield name
    delete_namespace(cluster, name)


def metric(operator: Operator, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(operator.metrics()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def scheduled_job(cluster: Cluster, name: str, *, schedule: str, **spec: Any) -> dict[str, Any]:
    job = cluster.job_manifest("x")
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": job["spec"]}} | spec,
    }


def create_raw(cluster: Cluster, path: str, text: str, tmp_path: Path) -> None:
    """POST TEXT as it is (kubectl would re-encode it, escaping ``<`` and doubling the request's size)."""
    body = tmp_path / "body.json"
    body.write_text(text)
    cluster.kubectl("create", "--raw", path, "-f", str(body), timeout=120)


def deep_scheduled_job(cluster: Cluster, name: str, namespace: str, levels: int) -> str:
    """A ScheduledJob whose ``spec.jobTemplate.metadata`` holds LEVELS nested objects (unknown fields are kept
    there); as text, since no encoder here writes it."""
    manifest = scheduled_job(cluster, name, schedule="*/5 * * * * *")
    manifest["metadata"]["namespace"] = namespace
    manifest["spec"]["jobTemplate"]["metadata"] = {"deep": "@DEEP@"}
    return json.dumps(manifest).replace('"@DEEP@"', '{"x":' * levels + '"leaf"' + "}" * levels)


def labelled_job(name: str, namespace: str, *, annotations: dict[str, str] | None = None, env: str = "") -> str:
    container: dict[str, Any] = {"name": "c", "image": "busybox"}
    if env:
        container["env"] = [{"name": "X", "value": env}]
    return json.dumps(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {names.SCHEDULED_JOB_LABEL: "healthy-0"},
                "annotations": annotations or {},
            },
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
        }
    )


#: The operator's quarantine series as scraped here, replayed by tests/unit/packaging/test_quarantine_alert.py.
RECORDING = Path(__file__).resolve().parents[1] / "unit" / "packaging" / "promtool" / "series" / "quarantine.json"


def record_quarantine_series(operator: Operator) -> None:
    rows = [
        {"name": sample.name, "labels": dict(sample.labels), "value": sample.value}
        for family in text_string_to_metric_families(operator.metrics())
        for sample in family.samples
        if sample.name in ("sundial_intake_quarantined_objects", "sundial_intake_quarantined_total")
    ]
    note = "scraped by tests/e2e/test_intake.py with SUNDIAL_RECORD_SERIES=1 while its poisons were quarantined"
    RECORDING.write_text(json.dumps({"note": note, "operator": rows}, indent=1, sort_keys=True) + "\n")


def on_time_runs(cluster: Cluster, namespace: str, since: dt.datetime) -> dict[str, list[float]]:
    """For each healthy object, the lag (seconds, from its nominal time to the Job's creation) of its runs due
    after SINCE."""
    listing = cluster.get_json("jobs", "-n", namespace) or {}
    lags: dict[str, list[float]] = {}
    for job in listing.get("items") or []:
        meta = job["metadata"]
        nominal = dt.datetime.fromisoformat(meta["annotations"][names.SCHEDULED_TIME_ANNOTATION])
        if nominal <= since:
            continue
        created = dt.datetime.fromisoformat(meta["creationTimestamp"])
        lags.setdefault(meta["labels"][names.SCHEDULED_JOB_LABEL], []).append((created - nominal).total_seconds())
    return lags


def test_poisons_are_quarantined_and_every_other_object_runs_on_time_also_after_a_restart(
    cluster: Cluster, start_operator: OperatorLauncher, namespace: str, poisons: str, tmp_path: Path
) -> None:
    for i in range(HEALTHY):
        cluster.apply(scheduled_job(cluster, f"healthy-{i}", schedule="*/5 * * * * *"), namespace=namespace)
    operator = start_operator(namespaces=[namespace, poisons])
    jobs = f"/apis/batch/v1/namespaces/{poisons}/jobs"
    for name, stamp in (("year-one", "0001-01-01T00:00:00+01:00"), ("year-ten-thousand", "9999-12-31T23:59:59-01:00")):
        text = labelled_job(name, poisons, annotations={names.SCHEDULED_TIME_ANNOTATION: stamp})
        create_raw(cluster, jobs, text, tmp_path)
    create_raw(cluster, jobs, labelled_job("long-line", poisons, env="<" * 700_000), tmp_path)
    served = cluster.kubectl("get", "--raw", f"{jobs}/long-line").stdout
    assert len(served) > 4 * 1024 * 1024, "the API server serves it escaped, over aiohttp's old 4 MiB line"
    for levels in DEEP:
        path = f"/apis/sundial.dev/v1alpha1/namespaces/{poisons}/scheduledjobs"
        create_raw(cluster, path, deep_scheduled_job(cluster, f"deep-{levels}", poisons, levels), tmp_path)
    since = dt.datetime.now(dt.UTC)

    def quarantined() -> list[str]:
        found = []
        for levels in DEEP:
            text = cluster.kubectl(
                "get", "scheduledjob", f"deep-{levels}", "-n", poisons, "-o", "jsonpath={.status.conditions}"
            ).stdout
            if '"reason":"Quarantined"' in text:
                found.append(f"deep-{levels}")
        return found if len(found) == len(DEEP) else []

    cluster.wait_for(quarantined, timeout=60, message="Ready=False Quarantined on every deep ScheduledJob")
    assert metric(operator, "sundial_intake_quarantined_objects", kind="ScheduledJob") == len(DEEP)
    if os.environ.get("SUNDIAL_RECORD_SERIES") == "1":
        record_quarantine_series(operator)

    # The other objects' runs go on, on time; the operator never exited.
    cluster.wait_for(
        lambda: (
            all(len(lags) >= 3 for lags in on_time_runs(cluster, namespace, since).values())
            and len(on_time_runs(cluster, namespace, since)) == HEALTHY
        ),
        timeout=60,
        message="three runs of every healthy object after the poisons",
    )
    assert operator.alive(), operator.log_tail()
    lags = [lag for runs in on_time_runs(cluster, namespace, since).values() for lag in runs]
    print(f"healthy lags after the poisons (s): max {max(lags):.1f}, runs {len(lags)}")
    # The Jobs' creationTimestamp has 1 s resolution; a run more than a period late would be a stalled intake.
    assert max(lags) < 5, lags

    # A restart reads every poison again in its first LIST, and becomes ready.
    operator.stop()
    restarted = start_operator(namespaces=[namespace, poisons], lease_prefix=operator.lease_prefix)
    again = dt.datetime.now(dt.UTC)
    cluster.wait_for(
        lambda: len(on_time_runs(cluster, namespace, again)) == HEALTHY,
        timeout=60,
        message="every healthy object runs after the restart",
    )
    assert restarted.alive() and restarted.ready()
    assert metric(restarted, "sundial_intake_quarantined_objects", kind="ScheduledJob") == len(DEEP)


def test_a_relist_after_the_api_server_forgot_the_version_ends_a_run_whose_job_was_deleted_meanwhile(
    cluster: Cluster, start_operator: OperatorLauncher, namespace: str
) -> None:
    if cluster.sandbox is None:
        pytest.skip("restarts the sandbox's API server")
    spec = {"concurrencyPolicy": "Forbid", "retry": {"maxAttempts": 1}}
    manifest = scheduled_job(cluster, "forbid", schedule="*/5 * * * * *", **spec)
    manifest["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"] = {
        "sandbox.sundial.dev/duration": "3600s"
    }
    cluster.apply(manifest, namespace=namespace)
    operator = start_operator(namespaces=[namespace])

    def active() -> list[str]:
        status = (cluster.get_json("scheduledjob", "forbid", "-n", namespace) or {}).get("status") or {}
        return [entry["job"] for entry in status.get("active") or []]

    (held,) = cluster.wait_for(active, timeout=60, message="a first run active")
    relists_before = metric(operator, "sundial_informer_relists_total", kind="jobs")
    # Nobody watches while the Job is deleted; then the API server restarts, so the operator's version is gone.
    os.kill(operator.pid, signal.SIGSTOP)
    try:
        cluster.kubectl("delete", "job", held, "-n", namespace, "--wait=true", "--cascade=background")
        assert cluster.sandbox is not None
        cluster.sandbox.restart_component("kube-apiserver", down=1.0)
    finally:
        os.kill(operator.pid, signal.SIGCONT)
    deadline = time.monotonic() + 90
    cluster.wait_for(
        lambda: active() and held not in active(),
        timeout=deadline - time.monotonic(),
        message=f"the run of the deleted {held} no longer active and the next Forbid run created",
    )
    assert metric(operator, "sundial_informer_relists_total", kind="jobs") > relists_before
    status = (cluster.get_json("scheduledjob", "forbid", "-n", namespace) or {}).get("status") or {}
    dead = [entry for entry in status.get("deadLetters") or [] if entry.get("lastJob") == held]
    assert dead and dead[0].get("reason") == "MaxAttemptsExceeded", status.get("deadLetters")
    assert operator.alive(), operator.log_tail()
