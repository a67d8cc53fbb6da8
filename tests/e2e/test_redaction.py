"""No secrets in logs (issue 14 item 5): values the API server quotes in a 422 never leave the operator.

A ScheduledJob's template has an invalid environment variable name that carries a secret-looking value
(``TOKEN=<secret>``); the API server refuses the Job with
``spec.template.spec.containers[0].env[i].name: Invalid value: "TOKEN=<secret>": ...``. The run is
dead-lettered (``InvalidJobTemplate``); the operator's log, the ScheduledJob (status, dead letter,
conditions) and every Event of the namespace must not contain the secret, and must still name the field.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

#: The field path the API server names (the operator's own variables come first, so the index varies).
FIELD = re.compile(r"spec\.template\.spec\.containers\[0\]\.env\[\d+\]\.name: Invalid value")


def test_a_secret_quoted_in_an_api_error_reaches_no_log_status_or_event(
    start_operator: OperatorLauncher, cluster: Cluster, namespace: str
) -> None:
    secret = f"s3cr3t-{secrets.token_hex(8)}"
    operator = start_operator(namespaces=[namespace])
    job = cluster.job_manifest("x")
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": f"TOKEN={secret}", "value": "v"}]
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.apply(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "leaky"},
            "spec": {"runAt": at, "jobTemplate": {"spec": job["spec"]}},
        },
        namespace,
    )

    def dead_letter() -> dict[str, Any] | None:
        body = cluster.get_json("scheduledjob", "leaky", "-n", namespace) or {}
        return body if (body.get("status") or {}).get("deadLetters") else None

    sj = cluster.wait_for(dead_letter, timeout=45, message="the InvalidJobTemplate dead letter")
    [letter] = sj["status"]["deadLetters"]
    assert letter["reason"] == "InvalidJobTemplate"
    assert FIELD.search(letter["message"]), letter["message"]

    def events() -> list[dict[str, Any]] | None:
        listing = cluster.get_json("events", "-n", namespace) or {}
        items: list[dict[str, Any]] = listing.get("items") or []
        return items if any(FIELD.search(str(item.get("message"))) for item in items) else None

    found = cluster.wait_for(events, timeout=30, message="an Event naming the field")
    log = operator.log.read_text(errors="replace")
    assert FIELD.search(log)
    for where, text in (("log", log), ("status", json.dumps(sj["status"])), ("events", json.dumps(found))):
        assert secret not in text, f"the secret reached the {where}"
