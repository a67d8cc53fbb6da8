"""The operator alerts' states, produced for real and recorded for the rule tests.

config/prometheus/prometheus_rule.yaml alerts on the operator's counters (``sundial_runs_missed_total``,
``sundial_schedule_lag_seconds``, ``sundial_api_requests_total``) and on the API server's admission-webhook
counters. Each state below is made to happen against the sandbox, and the families those rules read are
scraped before and after it (the operator's ``/metrics`` and the API server's own ``/metrics``):

* ``steady``: the module's operator runs an object every 2 s (nothing missed, no lag, no errors);
* ``missed``: a one-off whose ``runAt`` is two minutes old with ``catchUp.window: 30s`` - the operator
  counts it missed and never runs it;
* ``lagging``: a one-off whose ``runAt`` is 80 s old (unbounded window) - it runs, 80 s late;
* ``api-errors``: a second operator talks to the API server through the fault proxy
  (tests/e2e/chaos/proxy.py), which answers a quarter of its requests with a 5xx;
* ``webhook-failing``: a ValidatingWebhookConfiguration with the shipped webhook's name
  (``validate.scheduledjobs.sundial.dev``, ``failurePolicy: Fail``) points at a closed loopback port, scoped
  to a namespace of this test, and ScheduledJob writes there are refused by the API server.

``SUNDIAL_RECORD_SERIES=1`` writes the scrapes to tests/unit/packaging/promtool/series/operator_states.json,
which tests/unit/packaging/test_alert_rules.py replays (each state repeating once a minute) through promtool;
without it this test checks that the recording says what the live states say (:func:`signature`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.chaos.kubeconfigs import credentials, redirected
from tests.e2e.chaos.proxy import FaultProxy, Faults
from tests.e2e.harness.cluster import REPO
from tests.e2e.harness.namespaces import create_namespace, delete_namespace
from tests.e2e.harness.operators import free_port, http_get

from sundial_sandbox.webhook import issue_serving_certificate, validating_webhook_configuration

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

RECORDING = REPO / "tests" / "unit" / "packaging" / "promtool" / "series" / "operator_states.json"
#: The families the operator rules read (and nothing else: the recording stays small).
OPERATOR_FAMILIES = ("sundial_runs_missed_total", "sundial_schedule_lag_seconds_bucket", "sundial_api_requests_total")
APISERVER_FAMILIES = ("apiserver_admission_webhook_rejection_count", "apiserver_admission_webhook_fail_open_count")
WEBHOOK = "validate.scheduledjobs.sundial.dev"
WEBHOOK_LABEL = "e2e.sundial.dev/alert-states"
STATES = ("steady", "missed", "lagging", "api-errors", "webhook-failing")

Rows = dict[tuple[str, str], float]
_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse(text: str, families: tuple[str, ...]) -> Rows:
    """The samples of FAMILIES in a Prometheus text exposition: (name, labels as sorted JSON) -> value."""
    rows: Rows = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match.group(1) in families:
            labels = dict(_LABEL.findall(match.group(2) or ""))
            rows[(match.group(1), json.dumps(labels, sort_keys=True))] = float(match.group(3))
    return rows


def scrape(cluster: Cluster, operator: Operator) -> Rows:
    code, text = http_get(operator.metrics_url)
    assert code == 200, f"GET {operator.metrics_url}: {code}"
    apiserver = cluster.kubectl("get", "--raw", "/metrics", timeout=30).stdout
    return {**parse(text, OPERATOR_FAMILIES), **parse(apiserver, APISERVER_FAMILIES)}


def delta(before: Rows, after: Rows, family: str, /, **labels: str) -> float:
    """How much FAMILY's samples with LABELS rose from BEFORE to AFTER."""
    return sum(
        value - before.get(key, 0.0)
        for key, value in after.items()
        if key[0] == family and labels.items() <= json.loads(key[1]).items()
    )


def _quantile(q: float, buckets: dict[float, float]) -> float:
    """histogram_quantile over classic buckets (upper bound -> cumulative count), as Prometheus computes it."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]
    if total <= 0:
        return float("nan")
    rank, below, start = q * total, 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if bound == float("inf"):
                return start
            return start + (bound - start) * (rank - below) / (buckets[bound] - below)
        below, start = buckets[bound], bound
    return start


def lag_quantile(before: Rows, after: Rows, q: float = 0.99) -> float:
    buckets: dict[float, float] = {}
    for name, labels in after:
        if name == "sundial_schedule_lag_seconds_bucket":
            le = json.loads(labels)["le"]
            buckets[float(le)] = buckets.get(float(le), 0.0) + delta(before, after, name, le=le)
    return _quantile(q, buckets)


def signature(before: Rows, after: Rows) -> dict[str, bool]:
    """What the operator rules' conditions say of a state (increases between the two scrapes)."""
    requests = delta(before, after, "sundial_api_requests_total")
    errors = sum(
        delta(before, after, "sundial_api_requests_total", code=key)
        for key in {json.loads(k[1]).get("code", "") for k in after if k[0] == "sundial_api_requests_total"}
        if re.fullmatch(r"5..|429|error", key)
    )
    webhook = delta(before, after, APISERVER_FAMILIES[0], name=WEBHOOK) + delta(
        before, after, APISERVER_FAMILIES[1], name=WEBHOOK
    )
    return {
        "SundialRunsMissed": delta(before, after, "sundial_runs_missed_total") > 0,
        "SundialScheduleLagHigh": lag_quantile(before, after) > 60,
        "SundialAPIErrors": requests > 0 and errors / requests > 0.05,
        "SundialWebhookFailing": webhook > 0,
    }


def _rows(rows: Rows, namespaces: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for (name, labels), value in sorted(rows.items()):
        plain = {k: namespaces.get(v, v) if k == "namespace" else v for k, v in json.loads(labels).items()}
        out.append({"name": name, "labels": plain, "value": value})
    return out


def _sj(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _ago(seconds: int) -> str:
    return (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def namespaces(cluster: Cluster) -> Iterator[dict[str, str]]:
    made = {role: create_namespace(cluster, f"alert-{role}") for role in ("operator", "errors", "webhook")}
    yield made
    for name in made.values():
        delete_namespace(cluster, name)


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, namespaces: dict[str, str]) -> Operator:
    return start_module_operator(namespaces=[namespaces["operator"]])


class States:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.recorded: dict[str, tuple[Rows, Rows]] = {}

    def record(
        self, state: str, operator: Operator, act: Callable[[], None], done: Callable[[Rows, Rows], bool]
    ) -> None:
        """Scrape, ACT, then scrape until DONE(before, after) holds."""
        before = scrape(self.cluster, operator)
        act()

        def reached() -> Rows | None:
            now = scrape(self.cluster, operator)
            return now if done(before, now) else None

        after = self.cluster.wait_for(
            reached,
            timeout=60,
            message=f"state {state}",
        )
        self.recorded[state] = (before, after)


def _lag_runs(before: Rows, after: Rows) -> float:
    return delta(before, after, "sundial_schedule_lag_seconds_bucket", le="+Inf")


def _operator_states(states: States, cluster: Cluster, operator: Operator, namespace: str) -> None:
    ok = cluster.job_manifest("x")
    apply = cluster.apply
    states.record(
        "steady", operator,
        lambda: apply(_sj("steady", ok, schedule="*/2 * * * * *"), namespace),
        lambda b, a: _lag_runs(b, a) >= 2,
    )  # fmt: skip
    states.record(
        "missed", operator,
        lambda: apply(_sj("missed", ok, runAt=_ago(120), catchUp={"window": "30s"}), namespace),
        lambda b, a: delta(b, a, "sundial_runs_missed_total") >= 1,
    )  # fmt: skip
    states.record(
        "lagging", operator,
        lambda: apply(_sj("lagging", ok, runAt=_ago(80)), namespace),
        lambda b, a: delta(b, a, "sundial_schedule_lag_seconds_bucket", le="+Inf")
        > delta(b, a, "sundial_schedule_lag_seconds_bucket", le="60.0"),
    )  # fmt: skip


def _api_errors_state(
    states: States, cluster: Cluster, launch: OperatorLauncher, namespace: str, directory: Path
) -> None:
    creds = credentials(cluster.kubeconfig, directory / "pki")
    proxy = FaultProxy(creds, creds.cert, creds.key)
    try:
        kubeconfig = redirected(cluster.kubeconfig, proxy.listen("errors"), directory / "errors.kubeconfig")
        proxied = launch(namespaces=[namespace], kubeconfig=kubeconfig)
        cluster.apply(_sj("errors", cluster.job_manifest("x"), schedule="*/2 * * * * *"), namespace)

        def enough(b: Rows, a: Rows) -> bool:
            errors = sum(delta(b, a, "sundial_api_requests_total", code=c) for c in ("500", "503", "504"))
            return errors >= 3 and delta(b, a, "sundial_api_requests_total") >= 20

        states.record("api-errors", proxied, lambda: proxy.set_faults(Faults(error_5xx=0.25), "errors"), enough)
        proxy.clear_faults()
        proxied.stop()
    finally:
        proxy.close()


def _webhook_state(states: States, cluster: Cluster, operator: Operator, namespace: str, directory: Path) -> None:
    tls = issue_serving_certificate(directory / "webhook", ips=("127.0.0.1",), dns_names=())
    name = f"sundial-alert-states-{namespace}"
    token = namespace[-20:]
    manifest = validating_webhook_configuration(
        name,
        url=f"https://127.0.0.1:{free_port()}/validate-scheduledjob",  # nothing listens there
        ca_bundle=tls.ca_bundle(),
        namespace_selector={"matchLabels": {WEBHOOK_LABEL: token}},
        timeout_seconds=2,
    )
    assert manifest["webhooks"][0]["name"] == WEBHOOK
    cluster.kubectl("label", "namespace", namespace, f"{WEBHOOK_LABEL}={token}")
    probe = json.dumps(_sj("refused", cluster.job_manifest("x"), schedule="0 3 * * *"))

    def refused_write(b: Rows, a: Rows) -> bool:
        result = cluster.kubectl(
            "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-", input=probe, check=False
        )
        assert result.returncode != 0 or delta(b, a, APISERVER_FAMILIES[0], name=WEBHOOK) == 0, "admitted"
        return delta(b, a, APISERVER_FAMILIES[0], name=WEBHOOK) >= 2

    try:
        states.record("webhook-failing", operator, lambda: cluster.apply(manifest), refused_write)
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found", check=False)


def test_the_operator_alert_states_are_what_the_recording_says(
    cluster: Cluster,
    operator: Operator,
    start_module_operator: OperatorLauncher,
    namespaces: dict[str, str],
    tmp_path: Path,
) -> None:
    states = States(cluster)
    _operator_states(states, cluster, operator, namespaces["operator"])
    _api_errors_state(states, cluster, start_module_operator, namespaces["errors"], tmp_path)
    _webhook_state(states, cluster, operator, namespaces["webhook"], tmp_path)
    live = {state: signature(*states.recorded[state]) for state in STATES}
    # Each state makes exactly its own alert's condition true.
    names = {"missed": "SundialRunsMissed", "lagging": "SundialScheduleLagHigh", "api-errors": "SundialAPIErrors",
             "webhook-failing": "SundialWebhookFailing"}  # fmt: skip
    assert live == {s: {alert: names.get(s) == alert for alert in live[s]} for s in STATES}, live
    assert operator.alive()
    normal = {v: "sundial-e2e" for v in namespaces.values()}
    recording = {
        "about": (
            "Recorded by tests/e2e/test_alert_states.py (SUNDIAL_RECORD_SERIES=1): per state, the families "
            "config/prometheus/prometheus_rule.yaml reads, from the operator's /metrics and the API server's "
            "/metrics, scraped before and after the state happened."
        ),
        "states": {
            state: {"before": _rows(before, normal), "after": _rows(after, normal)}
            for state, (before, after) in states.recorded.items()
        },
    }
    if os.environ.get("SUNDIAL_RECORD_SERIES") == "1":
        RECORDING.write_text(json.dumps(recording, indent=1, sort_keys=True) + "\n")
        return
    checked_in = json.loads(RECORDING.read_text())["states"]

    def rows(entries: list[dict[str, Any]]) -> Rows:
        return {(r["name"], json.dumps(r["labels"], sort_keys=True)): r["value"] for r in entries}

    recorded = {s: signature(rows(checked_in[s]["before"]), rows(checked_in[s]["after"])) for s in checked_in}
    assert recorded == live, "operator_states.json no longer says what the live states say: re-record"
