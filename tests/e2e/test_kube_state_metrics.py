"""kube-state-metrics (the real one, v2.18.0 from tools/kube-state-metrics/build.sh) with Sundial's shipped
CustomResourceState configuration and ClusterRole, against ScheduledJobs in every state the alerts name.

One operator (module-scoped) drives seven ScheduledJobs into their states: ``healthy`` (runs succeed),
``running`` (a one-off whose Job runs for an hour),
``retrying`` (a failed attempt waiting for its next one), ``dead-lettered`` (a one-off whose only attempt
failed), ``suspended`` (``spec.suspend``), ``circuit-open`` (``deadLetter.suspendAfter`` reached) and
``invalid`` (a schedule that never matches: ``Ready=False``). kube-state-metrics runs on 127.0.0.1 with
config/kube-state-metrics/custom-resource-state.yaml (asserted equal to the chart's rendering) and a
kubeconfig of a ServiceAccount that has only config/kube-state-metrics/cluster_role.yaml. Every family the
configuration defines is compared, series by series, with what the objects' status says.

The series are also what the alert rule tests replay (tests/unit/packaging/test_alert_rules.py):
``SUNDIAL_RECORD_SERIES=1`` writes them to tests/unit/packaging/promtool/series/recorded.json (see
:func:`record`); without it the test checks that the checked-in recording has the same series (families,
objects, condition types and reasons, counters) as the live ones, so a recording that no longer matches what
kube-state-metrics and the operator expose fails here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from tests.e2e.harness.cluster import REPO
from tests.e2e.harness.namespaces import create_namespace, delete_namespace
from tests.e2e.harness.operators import free_port, http_get
from tests.e2e.test_chart_rbac import token_kubeconfig

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

CONFIG = REPO / "config" / "kube-state-metrics"
CHART = REPO / "charts" / "sundial"
RECORDING = REPO / "tests" / "unit" / "packaging" / "promtool" / "series" / "recorded.json"
PREFIX = "kube_sundial_scheduledjob"
#: The operator's series that exist only once what they count has happened (a labelled counter whose labels name
#: the failure: it has no sample before the first). Whether one appears depends on the run (a watch that broke, a
#: listing again after the API server answered 410 Expired), so the live-versus-recorded comparison leaves them out
#: on both sides.
AFTER_A_FAILURE = frozenset(
    {
        "sundial_informer_failures_total",
        "sundial_informer_failures_created",
        "sundial_informer_relists_total",
        "sundial_informer_relists_created",
    }
)
#: Labels kube-state-metrics adds to every CustomResourceState series.
CR_LABELS = {
    "customresource_group": "sundial.dev",
    "customresource_kind": "ScheduledJob",
    "customresource_version": "v1alpha1",
}
#: Families whose values are times (Unix seconds).
TIME_FAMILIES = ("next_schedule_time", "last_schedule_time", "last_successful_time", "last_failure_time")
STATES = ("healthy", "running", "retrying", "dead-lettered", "suspended", "circuit-open", "invalid")


def _cached_binary(tool: str, pin_file: str, variable: str) -> Path | None:
    match = re.search(rf"^{variable}=(v[\d.]+)$", (REPO / pin_file).read_text(), re.MULTILINE)
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    path = cache / tool / (match.group(1) if match else "") / tool
    return path if match and path.is_file() else None


@pytest.fixture(scope="module")
def ksm_binary() -> Path:
    path = _cached_binary("kube-state-metrics", "tools/kube-state-metrics/build.sh", "KUBE_STATE_METRICS_VERSION")
    if path is None:
        pytest.skip("kube-state-metrics not built: `make kube-state-metrics` (bash tools/kube-state-metrics/build.sh)")
    return path


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[str]:
    """One namespace for the module's objects (both tests read the same ones)."""
    name = create_namespace(cluster, "kube-state-metrics")
    yield name
    delete_namespace(cluster, name)


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, namespace: str) -> Operator:
    return start_module_operator(namespaces=[namespace])


def _sj(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _rfc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((dict(c) for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _objects(cluster: Cluster, namespace: str) -> dict[str, dict[str, Any]]:
    listing = cluster.get_json("scheduledjobs", "-n", namespace) or {}
    return {item["metadata"]["name"]: item for item in listing.get("items") or []}


def _in_state(state: str, obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    if status.get("observedGeneration") != obj["metadata"]["generation"]:
        return False
    ready, suspended = _condition(obj, "Ready"), _condition(obj, "Suspended")
    match state:
        case "healthy":
            return bool(status.get("lastSuccessfulTime")) and ready.get("reason") == "Scheduled"
        case "running":
            return bool(status.get("active"))
        case "retrying":
            return bool(status.get("pendingRetries")) and not status.get("active")
        case "dead-lettered":
            return bool(status.get("deadLetters")) and _condition(obj, "Complete").get("status") == "True"
        case "suspended":
            return suspended.get("reason") == "Suspended" and suspended.get("status") == "True"
        case "circuit-open":
            return suspended.get("reason") == "ConsecutiveDeadLetters" and not status.get("active")
        case "invalid":
            return ready.get("status") == "False" and ready.get("reason") == "InvalidSchedule"
    raise AssertionError(state)


@pytest.fixture(scope="module")
def objects(cluster: Cluster, operator: Operator, namespace: str) -> dict[str, dict[str, Any]]:
    """The ScheduledJobs of STATES, once each is in its state."""
    ok, fail = cluster.job_manifest("x"), cluster.job_manifest("x", fail=True)
    soon = _rfc(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2))
    once = {"retry": {"maxAttempts": 1}}
    manifests = [
        _sj("healthy", ok, schedule="*/20 * * * * *"),
        _sj("running", cluster.job_manifest("x", duration_seconds=3600), runAt=soon),
        _sj("retrying", fail, runAt=soon, retry={"maxAttempts": 3, "backoff": {"initial": "1h", "max": "1h"}}),
        _sj("dead-lettered", fail, runAt=soon, **once),
        _sj("suspended", ok, schedule="0 3 * * *", suspend=True),
        _sj("circuit-open", fail, schedule="*/2 * * * * *", deadLetter={"suspendAfter": 2}, **once),
        _sj("invalid", ok, schedule="0 0 30 2 *"),
    ]
    cluster.apply({"apiVersion": "v1", "kind": "List", "items": manifests}, namespace)

    def all_in_state() -> dict[str, dict[str, Any]] | None:
        current = _objects(cluster, namespace)
        return current if all(s in current and _in_state(s, current[s]) for s in STATES) else None

    try:
        return cluster.wait_for(all_in_state, timeout=60, message="every ScheduledJob in its state")
    except AssertionError:
        current = _objects(cluster, namespace)
        raise AssertionError({s: _in_state(s, current[s]) if s in current else None for s in STATES}) from None


def _chart_rendering() -> str | None:
    helm = os.environ.get("SUNDIAL_HELM") or _cached_binary("helm", "tools/helm/build.sh", "HELM_VERSION")
    helm = helm or shutil.which("helm")
    if helm is None:
        return None
    out = subprocess.run(
        [str(helm), "template", "s", str(CHART), "--set", "kubeStateMetrics.customResourceState.enabled=true",
         "--show-only", "templates/kube-state-metrics-configmap.yaml"],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    text: str = yaml.safe_load(out)["data"]["custom-resource-state.yaml"]
    return text


@pytest.fixture(scope="module")
def ksm_url(
    cluster: Cluster, ksm_binary: Path, namespace: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """kube-state-metrics with the shipped configuration and ClusterRole, listening on 127.0.0.1."""
    tmp = tmp_path_factory.mktemp("ksm")
    config = (CONFIG / "custom-resource-state.yaml").read_text()
    rendered = _chart_rendering()
    if rendered is not None:
        assert yaml.safe_load(rendered) == yaml.safe_load(config), "the chart renders another configuration"
    (tmp / "crs.yaml").write_text(rendered or config)
    role = yaml.safe_load((CONFIG / "cluster_role.yaml").read_text())
    suffix = uuid.uuid4().hex[:6]
    role["metadata"]["name"] = f"{role['metadata']['name']}-{suffix}"
    cluster.apply(role)
    cluster.kubectl("create", "serviceaccount", "kube-state-metrics", "-n", namespace)
    binding = f"sundial-ksm-{suffix}"
    cluster.kubectl(
        "create", "clusterrolebinding", binding, f"--clusterrole={role['metadata']['name']}",
        f"--serviceaccount={namespace}:kube-state-metrics",
    )  # fmt: skip
    kubeconfig = token_kubeconfig(cluster, "kube-state-metrics", namespace, tmp / "kubeconfig")
    port, telemetry = free_port(), free_port()
    log = tmp / "kube-state-metrics.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(ksm_binary), f"--kubeconfig={kubeconfig}", "--host=127.0.0.1", f"--port={port}",
             "--telemetry-host=127.0.0.1", f"--telemetry-port={telemetry}", f"--namespaces={namespace}",
             "--custom-resource-state-only", f"--custom-resource-state-config-file={tmp / 'crs.yaml'}"],
            stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        cluster.wait_for(
            lambda: process.poll() is not None or f"{PREFIX}_info" in http_get(url)[1],
            timeout=60,
            message="kube-state-metrics serving ScheduledJob series",
        )
        assert process.poll() is None, log.read_text()[-3000:]
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        cluster.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "clusterrole", role["metadata"]["name"], "--ignore-not-found", check=False)


Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _scrape(url: str, prefix: str) -> Series:
    code, text = http_get(url)
    assert code == 200, f"GET {url}: {code}"
    found: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix):
                found[(sample.name, frozenset(sample.labels.items()))] = float(sample.value)
    return found


def _unix(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def expected_series(objects: dict[str, dict[str, Any]], namespace: str) -> Series:
    """What config/kube-state-metrics/custom-resource-state.yaml makes of the objects (labels and values)."""
    series: Series = {}

    def put(name: str, family: str, value: float, **labels: str | None) -> None:
        # A path that is not set gives no label (PromQL reads it as "").
        present = {k: v for k, v in labels.items() if v is not None}
        all_labels = {"namespace": namespace, "scheduledjob": name, **CR_LABELS, **present}
        series[(f"{PREFIX}_{family}", frozenset(all_labels.items()))] = float(value)

    for name, obj in objects.items():
        spec, status = obj["spec"], obj.get("status") or {}
        put(name, "info", 1, schedule=spec.get("schedule"), time_zone=spec.get("timeZone"),
            concurrency_policy=spec.get("concurrencyPolicy"))  # fmt: skip
        put(name, "spec_suspend", 1 if spec.get("suspend") else 0)
        for family, field in zip(
            TIME_FAMILIES,
            ("nextScheduleTime", "lastScheduleTime", "lastSuccessfulTime", "lastFailureTime"),
            strict=True,
        ):
            if status.get(field):
                put(name, family, _unix(status[field]))
        for run in status.get("active") or []:
            put(name, "status_active", run["attempt"], scheduled_time=run["scheduledTime"], job=run["job"],
                trigger=run.get("trigger"))  # fmt: skip
        for retry in status.get("pendingRetries") or []:
            put(name, "status_pending_retry", retry["attempt"], scheduled_time=retry["scheduledTime"],
                last_job=retry.get("lastJob"))  # fmt: skip
        for letter in status.get("deadLetters") or []:
            put(name, "status_dead_letter", letter["attempts"], scheduled_time=letter["scheduledTime"],
                reason=letter["reason"], last_job=letter.get("lastJob"))  # fmt: skip
        put(name, "status_consecutive_dead_letters", status.get("consecutiveDeadLetters", 0))
        for condition in status.get("conditions") or []:
            put(name, "status_condition", 1 if condition["status"] == "True" else 0, type=condition["type"],
                reason=condition["reason"])  # fmt: skip
        for counter, value in (status.get("counters") or {}).items():
            put(name, "status_counter", value, counter=counter)
    return series


def _configured_families() -> set[str]:
    config = yaml.safe_load((CONFIG / "custom-resource-state.yaml").read_text())
    (resource,) = config["spec"]["resources"]
    return {f"{resource['metricNamePrefix']}_{m['name']}" for m in resource["metrics"]}


def test_kube_state_metrics_exports_every_family_as_the_objects_status_says(
    cluster: Cluster, namespace: str, objects: dict[str, dict[str, Any]], ksm_url: str, operator: Operator
) -> None:
    seen: dict[str, Any] = {}

    def agree() -> bool:
        # Status keeps changing (the healthy object runs every 20 s): compare one read with the scrape after it.
        seen["expected"] = expected_series(_objects(cluster, namespace), namespace)
        seen["actual"] = _scrape(ksm_url, PREFIX)
        return bool(seen["expected"] == seen["actual"])

    try:
        cluster.wait_for(agree, timeout=30, message="kube-state-metrics' series equal to the objects' status")
    except AssertionError:
        expected, actual = seen["expected"], seen["actual"]
        missing = sorted((k[0], sorted(k[1]), v) for k, v in expected.items() if actual.get(k) != v)
        extra = sorted((k[0], sorted(k[1]), v) for k, v in actual.items() if expected.get(k) != v)
        raise AssertionError(f"missing or different: {missing}\nunexpected: {extra}") from None
    families = {name for name, _ in seen["actual"]}
    assert families == _configured_families(), "every configured family has series in these states"
    per_state = {
        "running": f"{PREFIX}_status_active",
        "retrying": f"{PREFIX}_status_pending_retry",
        "dead-lettered": f"{PREFIX}_status_dead_letter",
        "healthy": f"{PREFIX}_last_successful_time",
    }
    for state, family in per_state.items():
        assert any(n == family and ("scheduledjob", state) in labels for n, labels in seen["actual"]), (state, family)
    assert operator.alive()


# --- the recording the alert rule tests replay ---------------------------------------------------------------


def _recordable(series: Series, namespace: str, scraped_at: float) -> list[dict[str, Any]]:
    rows = []
    for (name, labels), value in sorted(series.items(), key=lambda kv: (kv[0][0], sorted(kv[0][1]))):
        if name.endswith("_created"):
            continue  # client_python's creation times: absolute, and in no rule
        plain = {
            k: ("sundial-e2e" if k == "namespace" and v == namespace else v) for k, v in labels if k not in CR_LABELS
        }
        row: dict[str, Any] = {"name": name, "labels": dict(sorted(plain.items())), "value": value}
        if any(name == f"{PREFIX}_{family}" for family in TIME_FAMILIES):
            row["value"] = round(value - scraped_at)
            row["time"] = True
        rows.append(row)
    return rows


def _identity(row: dict[str, Any]) -> tuple[str, ...]:
    labels = row["labels"]
    return (row["name"], *(f"{k}={labels[k]}" for k in ("scheduledjob", "type", "reason", "counter") if k in labels))


def record(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two scrapes, merged: a time series that changed between them moves with the clock
    (``moving``: the operator keeps advancing it), one that did not stays where it is."""
    later = {(_identity(r), json.dumps(r["labels"], sort_keys=True)): r for r in second}
    merged = []
    for row in first:
        other = later.get((_identity(row), json.dumps(row["labels"], sort_keys=True)))
        moving = {"moving": other is None or other["value"] != row["value"]} if row.get("time") else {}
        merged.append({**row, **moving})
    return merged


def test_the_recorded_series_are_the_live_ones(
    cluster: Cluster, namespace: str, objects: dict[str, dict[str, Any]], ksm_url: str, operator: Operator
) -> None:
    first_at = time.time()
    first = _recordable(_scrape(ksm_url, PREFIX), namespace, first_at)
    operator_series = _recordable(_scrape(operator.metrics_url, "sundial_"), namespace, first_at)

    # A second scrape once the healthy object's next run (every 20 s) has advanced: which times move.
    def healthy_next_run(rows: list[dict[str, Any]]) -> float:
        return float(next(r["value"] for r in rows if r["name"] == f"{PREFIX}_next_schedule_time"
                          and r["labels"]["scheduledjob"] == "healthy"))  # fmt: skip

    def advanced() -> list[dict[str, Any]] | None:
        rows = _recordable(_scrape(ksm_url, PREFIX), namespace, first_at)
        return rows if healthy_next_run(rows) != healthy_next_run(first) else None

    second = cluster.wait_for(advanced, timeout=45, message="the healthy object's next run advanced")
    recording = {
        "about": (
            "Recorded by tests/e2e/test_kube_state_metrics.py (SUNDIAL_RECORD_SERIES=1): kube-state-metrics' "
            "kube_sundial_scheduledjob_* series for one ScheduledJob per state (the object is named after "
            "its state) and the operator's own sundial_* series, in one scrape. Times are seconds relative "
            "to the scrape; moving: the time advanced between two scrapes (the operator keeps it ahead)."
        ),
        "kube_state_metrics": record(first, second),
        "operator": operator_series,
    }
    live = {_identity(r) for r in recording["kube_state_metrics"]} | {
        (r["name"],) for r in operator_series if r["name"] not in AFTER_A_FAILURE
    }
    moving = {r["labels"]["scheduledjob"] for r in recording["kube_state_metrics"] if r.get("moving")}
    assert moving == {"healthy"}, f"only the healthy object's times move, not {moving}"
    if os.environ.get("SUNDIAL_RECORD_SERIES") == "1":
        RECORDING.parent.mkdir(parents=True, exist_ok=True)
        RECORDING.write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")
        return
    checked_in = json.loads(RECORDING.read_text())
    recorded = {_identity(r) for r in checked_in["kube_state_metrics"]} | {
        (r["name"],) for r in checked_in["operator"] if r["name"] not in AFTER_A_FAILURE
    }
    assert recorded == live, (
        "tests/unit/packaging/promtool/series/recorded.json no longer matches the live series: re-record with "
        f"SUNDIAL_RECORD_SERIES=1.\nonly recorded: {sorted(recorded - live)}\nonly live: {sorted(live - recorded)}"
    )
