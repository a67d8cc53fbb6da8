"""``kubectl-sundial`` against a real API server with an operator running.

The plugin is the installed executable (``.venv/bin/kubectl-sundial``, next to this interpreter); it drives
``kubectl`` itself and gets ``--kubeconfig`` like kubectl would pass it. One operator for the module, one
namespace per test; every wait polls with a deadline.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from sundial.model import names
from sundial.schedule.jitter import jitter_offset

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

PLUGIN = Path(sys.executable).with_name("kubectl-sundial")
LABEL = names.SCHEDULED_JOB_LABEL
#: Once a year: nothing runs unless the test asks for it.
YEARLY = "0 0 1 1 *"


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces) -> Operator:
    return start_module_operator(namespaces=module_namespaces.all)


@pytest.fixture
def ns(operator: Operator, module_namespace: str) -> str:
    return module_namespace


def plugin(cluster: Cluster, *args: str, check: bool = True, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    if not PLUGIN.is_file():
        pytest.fail(f"{PLUGIN} is not installed (pip install -e .)")
    result = subprocess.run(
        [str(PLUGIN), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if check:
        assert result.returncode == 0, f"kubectl-sundial {' '.join(args)} ({result.returncode}):\n{result.stderr}"
    return result


def _sj(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _get(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", ns) or {}
    return body


def _jobs(cluster: Cluster, ns: str, owner: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}).get("items", [])
    return items


def _trigger(job: dict[str, Any]) -> str:
    return str(job["metadata"]["annotations"][names.TRIGGER_ANNOTATION])


def _condition(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _rfc_in(seconds: int) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_trigger_wait_creates_a_manual_run_and_prints_its_job(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj("nightly", cluster.job_manifest("x"), schedule=YEARLY), ns)
    cluster.wait_for(lambda: _condition(_get(cluster, ns, "nightly"), "Ready"), timeout=20, message="Ready")
    assert _jobs(cluster, ns, "nightly") == []

    result = plugin(cluster, "trigger", "nightly", "-n", ns, "--wait", "--timeout", "30")

    (job,) = _jobs(cluster, ns, "nightly")
    assert _trigger(job) == "manual"
    token = re.search(r"\(token ([^)]+)\)", result.stdout)
    assert token, result.stdout
    assert _get(cluster, ns, "nightly")["status"]["lastHandledTrigger"] == token.group(1)
    assert job["metadata"]["name"] in result.stdout, "the Job is printed"
    assert "NAME" in result.stdout


def test_trigger_wait_prints_the_job_of_a_name_longer_than_a_label_value(cluster: Cluster, ns: str) -> None:
    # Over 63 characters the operator labels the Jobs with a shortened, hashed value: the plugin must find them.
    name = "nightly-report-for-the-finance-team-" + "x" * 34
    cluster.apply(_sj(name, cluster.job_manifest("x"), schedule=YEARLY), ns)
    cluster.wait_for(lambda: _condition(_get(cluster, ns, name), "Ready"), timeout=20, message="Ready")

    result = plugin(cluster, "trigger", name, "-n", ns, "--wait", "--timeout", "30")

    listing = cluster.get_json("jobs", "-n", ns, "-l", names.job_selector(name)) or {}
    (job,) = listing.get("items", [])
    assert job["metadata"]["labels"][LABEL] != name
    assert job["metadata"]["name"] in result.stdout, result.stdout


def test_redrive_wait_gives_a_dead_letter_a_new_attempt(cluster: Cluster, ns: str) -> None:
    spec = {"retry": {"maxAttempts": 1}, "failedJobsHistoryLimit": 5}
    cluster.apply(_sj("flaky", cluster.job_manifest("x", fail=True), runAt=_rfc_in(1), **spec), ns)
    cluster.wait_for(
        lambda: (_get(cluster, ns, "flaky").get("status") or {}).get("deadLetters"), timeout=40, message="dead letter"
    )
    described = plugin(cluster, "describe", "flaky", "-n", ns).stdout
    assert "Dead letters: 1" in described

    result = plugin(cluster, "redrive", "flaky", "-n", ns, "--wait", "--timeout", "30")

    assert "redrive of 1 dead letter(s) requested" in result.stdout
    token = re.search(r"\(token ([^)]+)\)", result.stdout)
    assert token
    assert _get(cluster, ns, "flaky")["status"]["lastHandledRedrive"] == token.group(1)
    cluster.wait_for(
        lambda: any(_trigger(job) == "redrive" for job in _jobs(cluster, ns, "flaky")),
        timeout=20,
        message="a redrive attempt",
    )
    # runs: the Jobs (found by the operator's label selector) and the status, the redrive's attempt first.
    rows = json.loads(plugin(cluster, "runs", "flaky", "-n", ns, "-o", "json").stdout)
    assert rows[0]["trigger"] == "redrive" and rows[0]["job"], rows
    assert rows[1]["outcome"] == "Failed" and rows[1]["trigger"] in ("schedule", "catch-up"), rows
    assert rows[0]["attempt"] > rows[1]["attempt"], rows
    assert len({row["scheduledTime"] for row in rows}) == 1, rows  # one run, two attempts

    # describe ends with the object's own Events (the API server's involvedObject.uid field selector).
    def described_events() -> str | None:
        events = plugin(cluster, "describe", "flaky", "-n", ns).stdout.partition("\nEvents:\n")[2]
        return events if "Redriven" in events else None

    events = cluster.wait_for(described_events, timeout=20, message="the Redriven Event in describe")
    assert "DeadLettered" in events and "SuccessfulCreate" in events, events


def test_suspend_and_resume_patch_the_spec_with_a_gitops_warning(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj("pausable", cluster.job_manifest("x"), schedule=YEARLY), ns)

    suspended = plugin(cluster, "suspend", "pausable", "-n", ns)
    assert "GitOps" in suspended.stderr
    assert _get(cluster, ns, "pausable")["spec"]["suspend"] is True
    cluster.wait_for(
        lambda: _condition(_get(cluster, ns, "pausable"), "Suspended").get("status") == "True",
        timeout=20,
        message="Suspended=True",
    )

    plugin(cluster, "resume", "pausable", "-n", ns)
    assert _get(cluster, ns, "pausable")["spec"]["suspend"] is False
    cluster.wait_for(
        lambda: _condition(_get(cluster, ns, "pausable"), "Suspended").get("status") == "False",
        timeout=20,
        message="Suspended=False",
    )


def test_describe_shows_next_runs_conditions_and_counters(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj("berlin", cluster.job_manifest("x"), schedule="30 6 * * 1-5", timeZone="Europe/Berlin"), ns)
    cluster.wait_for(lambda: _condition(_get(cluster, ns, "berlin"), "Ready"), timeout=20, message="Ready")

    text = plugin(cluster, "describe", "berlin", "-n", ns, "--count", "3").stdout

    assert "Name:        berlin" in text
    assert "Time zone:   Europe/Berlin" in text
    next_runs = text.split("Next runs:\n", 1)[1].split("Conditions:", 1)[0].splitlines()
    assert len(next_runs) == 3
    for line in next_runs:
        utc, local = line.split()
        local = local.strip("()")
        assert utc.endswith("Z"), line
        assert local.endswith(("+01:00", "+02:00")) and "T06:30:00" in local, line
    assert re.search(r"^  Ready=True ", text, re.MULTILINE), text
    everything = plugin(cluster, "describe", "-A").stdout
    assert "Name:        berlin" in everything


def test_preview_json_lists_the_next_nominal_times(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj("yearly", cluster.job_manifest("x"), schedule=YEARLY), ns)

    times = json.loads(plugin(cluster, "preview", "yearly", "-n", ns, "-o", "json", "--count", "3").stdout)

    year = dt.datetime.now(dt.UTC).year
    assert times == [f"{year + i}-01-01T00:00:00Z" for i in (1, 2, 3)]
    invalid = plugin(cluster, "preview", "missing", "-n", ns, check=False)
    assert invalid.returncode != 0


def test_preview_leaves_out_what_the_scheduled_jobs_calendar_excludes(cluster: Cluster, ns: str) -> None:
    year = dt.datetime.now(dt.UTC).year
    cluster.apply(_sj("holidays", cluster.job_manifest("x"), schedule=YEARLY, calendarRefs=["closed"]), ns)
    missing = plugin(cluster, "preview", "holidays", "-n", ns, check=False)
    assert missing.returncode == 2 and "ScheduleCalendar closed not found" in missing.stderr, missing.stderr

    calendar = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduleCalendar",
        "metadata": {"name": "closed"},
        "spec": {"exclude": [{"dates": [f"{year + 1}-01-01"]}]},
    }
    cluster.apply(calendar, ns)
    times = json.loads(plugin(cluster, "preview", "holidays", "-n", ns, "-o", "json", "--count", "2").stdout)
    assert times == [f"{year + i}-01-01T00:00:00Z" for i in (2, 3)]
    described = json.loads(plugin(cluster, "describe", "holidays", "-n", ns, "-o", "json", "--count", "1").stdout)
    assert described["nextRuns"] == [f"{year + 2}-01-01T00:00:00Z"]


def test_create_job_from_a_scheduled_job_and_kubectl_conventions(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj("manual", cluster.job_manifest("x"), schedule=YEARLY), ns)
    cluster.wait_for(lambda: _condition(_get(cluster, ns, "manual"), "Ready"), timeout=20, message="Ready")

    # kubectl's global flags after the command, as kubectl users write them.
    created = subprocess.run(
        [
            str(PLUGIN),
            "create",
            "job",
            "rerun-1",
            "--from=scheduledjob/manual",
            "-n",
            ns,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--timeout",
            "30",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=90,
    )
    assert created.returncode == 0, created.stderr

    (job,) = _jobs(cluster, ns, "manual")
    assert created.stdout == f"job.batch/{job['metadata']['name']} created\n"
    assert _trigger(job) == "manual"
    assert _get(cluster, ns, "manual")["status"]["lastHandledTrigger"] == "rerun-1"
    again = plugin(cluster, "create", "job", "rerun-1", "--from=scheduledjob/manual", "-n", ns, check=False)
    assert again.returncode == 1 and "already requested" in again.stderr

    described = yaml.safe_load(plugin(cluster, "describe", "manual", "-n", ns, "-o", "yaml").stdout)
    assert len(described["nextRuns"]) == 5
    assert described["scheduledJob"]["metadata"]["name"] == "manual"
    assert plugin(cluster, "get", "-n", ns, "-o", "name").stdout == "scheduledjob.sundial.dev/manual\n"
    table = plugin(cluster, "get", "manual", "-n", ns, "-o", "wide").stdout
    assert table.splitlines()[0].split()[:2] == ["NAME", "SCHEDULE"] and "DEAD LETTERS" in table
    version = json.loads(plugin(cluster, "version", "-o", "json").stdout)
    assert version["crd"]["served"] == ["v1alpha1"]


def test_forecast_json_finds_the_herd_of_the_objects_on_the_api_server(cluster: Cluster, ns: str) -> None:
    now = dt.datetime.now(dt.UTC)
    herd_at = (now + dt.timedelta(hours=2)).replace(minute=7, second=0, microsecond=0)
    at = f"{herd_at.minute} {herd_at.hour} * * *"
    for index in range(3):
        cluster.apply(_sj(f"herd-{index}", cluster.job_manifest("x"), schedule=at), ns)
    cluster.apply(_sj("spread", cluster.job_manifest("x"), schedule=at, jitter="10m"), ns)
    cluster.apply(_sj("paused", cluster.job_manifest("x"), schedule=at, suspend=True), ns)

    found = json.loads(plugin(cluster, "forecast", "-n", ns, "--hours", "3", "-o", "json").stdout)

    stamp = herd_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert found["scheduledJobs"] == 5 and found["runs"] == 4
    (herd,) = found["herds"]
    assert herd["at"] == stamp and herd["runs"] == 3
    assert sorted(m["name"] for m in herd["scheduledJobs"]) == ["herd-0", "herd-1", "herd-2"]
    assert {s["change"] for s in herd["spread"]} == {"jitter 30s", "jitter 5m0s", "H"}
    assert found["skipped"] == [{"scheduledJob": f"{ns}/paused", "reason": "suspended"}]
    # The jittered run lands in the herd's minute or after it, by its uid (random per object): count it where
    # the operator's own jitter puts it.
    spread_uid = _get(cluster, ns, "spread")["metadata"]["uid"]
    spread_at = herd_at + jitter_offset(uid=spread_uid, nominal=herd_at, jitter=dt.timedelta(minutes=10))
    in_herd_minute = spread_at.replace(second=0, microsecond=0) == herd_at
    assert {"start": stamp, "runs": 4 if in_herd_minute else 3} in found["buckets"]
    assert sum(bucket["runs"] for bucket in found["buckets"]) == 4
    chart = plugin(cluster, "forecast", "-n", ns, "--hours", "3").stdout
    assert f"{stamp}  3 runs: {ns}/herd-0, {ns}/herd-1, {ns}/herd-2" in chart


def _watch_lines(process: subprocess.Popen[str], until: Callable[[list[str]], bool], timeout: float) -> list[str]:
    """The lines ``get -w`` printed, read until UNTIL holds for them or TIMEOUT seconds passed."""
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(lines):
        line = process.stdout.readline()
        if line:
            lines.append(line.rstrip("\n"))
        elif process.poll() is not None:
            break
        else:
            time.sleep(0.2)
    return lines


def _suspend_column(lines: list[str]) -> list[str]:
    """The SUSPEND cell of each ``watched`` line (the column after its two schedules)."""
    return [line.split("FRI#3", 1)[1].split()[0] for line in lines if line.startswith("watched ")]


def test_get_watch_prints_the_listing_then_a_line_per_change_of_the_selected_objects(cluster: Cluster, ns: str) -> None:
    """``get -l team=a -w`` on a real API server: kubectl's watch, one table line per object as it comes; a change
    (suspend) is a new line; an object without the label never shows. spec.schedules shows in SCHEDULE."""
    watched = _sj("watched", cluster.job_manifest("x"), schedules=["0 18 LW * *", "0 18 ? * FRI#3"])
    watched["metadata"]["labels"] = {"team": "a"}
    cluster.apply(watched, ns)
    cluster.apply(_sj("unlabelled", cluster.job_manifest("x"), schedule=YEARLY), ns)
    cluster.wait_for(lambda: _condition(_get(cluster, ns, "watched"), "Ready"), timeout=20, message="Ready")
    command = [str(PLUGIN), "--kubeconfig", str(cluster.kubeconfig), "get", "-n", ns, "-l", "team=a", "-w"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = _watch_lines(process, lambda lines: len(lines) >= 2, timeout=30)
        assert first[0].split()[:2] == ["NAME", "SCHEDULE"], first
        assert first[1].startswith("watched ") and "0 18 LW * *; 0 18 ? * FRI#3" in first[1], first
        cluster.kubectl("patch", "scheduledjob", "watched", "-n", ns, "--type=merge", "-p", '{"spec":{"suspend":true}}')
        more = _watch_lines(process, lambda lines: "True" in _suspend_column(lines), timeout=30)
        assert _suspend_column(first[1:]) == ["False"]
        assert "True" in _suspend_column(more), more
        assert not [line for line in first + more if line.startswith("unlabelled")]
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.returncode is not None
