"""``kubectl sundial import cronjob/NAME --hand-over`` against the sandbox's real CronJob controller (the
kube-controller-manager runs it) with an operator running: a CronJob firing every minute is handed over, and
every minute from its first run to two minutes after the switch has exactly one Job - the CronJob's before the
switch, Sundial's after, the minute of the switch included. Once while a CronJob Job runs; once stopped after
its first step (the plugin killed while it waits after the suspension) across a minute boundary, then run again,
twice.

Every wait polls with a deadline; a minute is told by the Jobs' own annotations (the CronJob controller's
``batch.kubernetes.io/cronjob-scheduled-timestamp``, Sundial's ``sundial.dev/scheduled-time``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sundial.cli.kubectl import handover
from sundial.model import handovers, names
from sundial.schedule import parse_rfc3339

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

PLUGIN = Path(sys.executable).with_name("kubectl-sundial")
NAME = "every-minute"
RUNS_FOR = 40
"""Seconds each Job's pod runs (kwok): the CronJob's Job is still running when the hand-over starts."""


@pytest.fixture
def operator(start_operator: OperatorLauncher, namespace: str) -> Operator:
    return start_operator(namespaces=[namespace])


def plugin(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PLUGIN), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def cronjob(cluster: Cluster) -> dict[str, Any]:
    template = cluster.job_manifest(NAME, duration_seconds=RUNS_FOR)
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": NAME},
        "spec": {
            "schedule": "* * * * *",
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": template["spec"]},
        },
    }


def jobs_by_minute(cluster: Cluster, namespace: str) -> dict[datetime, list[str]]:
    """Every Job of the namespace by its scheduled minute: ``cronjob/<name>`` or ``sundial/<name>``."""
    found: dict[datetime, list[str]] = {}
    for job in cluster.get_json("jobs", "-n", namespace)["items"]:
        meta = job["metadata"]
        annotations = meta.get("annotations") or {}
        owners = {ref["kind"] for ref in meta.get("ownerReferences") or [] if ref.get("controller")}
        if "CronJob" in owners:
            stamp, who = annotations[handover.CRONJOB_SCHEDULED_TIMESTAMP], "cronjob"
        elif "ScheduledJob" in owners:
            stamp, who = annotations[names.SCHEDULED_TIME_ANNOTATION], "sundial"
        else:
            continue
        minute = parse_rfc3339(stamp, field="scheduled time")
        found.setdefault(minute, []).append(f"{who}/{meta['name']}")
    return found


def first_cronjob_minute(cluster: Cluster, namespace: str) -> datetime:
    """Wait for the CronJob's first Job (the next minute boundary, plus the controller's sync delay)."""
    return cluster.wait_for(
        lambda: min((m for m, jobs in jobs_by_minute(cluster, namespace).items() if jobs), default=None),
        timeout=150,
        message=f"a Job of CronJob {NAME}",
    )


def wait_for_sundial_minute(cluster: Cluster, namespace: str, minute: datetime) -> None:
    cluster.wait_for(
        lambda: any(j.startswith("sundial/") for j in jobs_by_minute(cluster, namespace).get(minute, [])),
        timeout=150,
        message=f"Sundial's Job for {minute:%H:%M}",
    )


def assert_every_minute_once(
    cluster: Cluster, namespace: str, *, first: datetime, last: datetime, switch: datetime
) -> None:
    """Every minute in [first, last] has exactly one Job: the CronJob's up to the switch, Sundial's after."""
    seen = jobs_by_minute(cluster, namespace)
    minute = first
    while minute <= last:
        jobs = seen.get(minute, [])
        assert len(jobs) == 1, f"{minute:%H:%M}: {jobs} (every minute: {sorted(seen.items())})"
        expected = "cronjob/" if minute <= switch else "sundial/"
        assert jobs[0].startswith(expected), f"{minute:%H:%M} ran by {jobs[0]}, switch at {switch:%H:%M:%S}"
        minute += timedelta(minutes=1)
    assert not [m for m in seen if m > last + timedelta(minutes=1)], sorted(seen)


def handed_over_after(cluster: Cluster, namespace: str) -> datetime:
    body = cluster.get_json("scheduledjob", NAME, "-n", namespace)
    raw = body["metadata"]["annotations"][names.HANDED_OVER_ANNOTATION]
    record = handovers.handed_over({names.HANDED_OVER_ANNOTATION: raw})
    assert record is not None
    return record.after


def test_a_running_cronjob_is_handed_over_without_a_missed_or_doubled_minute(
    cluster: Cluster, namespace: str, operator: Operator
) -> None:
    cluster.apply(cronjob(cluster), namespace)
    first = first_cronjob_minute(cluster, namespace)
    running = jobs_by_minute(cluster, namespace)[first][0].removeprefix("cronjob/")

    result = plugin(cluster, "import", f"cronjob/{NAME}", "--hand-over", "-n", namespace)
    assert result.returncode == 0, result.stderr
    assert f"counted as active: {running}" in result.stdout
    switch = handed_over_after(cluster, namespace)
    assert switch >= first
    suspended = cluster.get_json("cronjob", NAME, "-n", namespace)
    assert suspended["spec"]["suspend"] is True
    adopted = cluster.get_json("job", running, "-n", namespace)
    assert adopted["metadata"]["labels"][names.SCHEDULED_JOB_LABEL] == NAME  # counted as the ScheduledJob's active run

    last = switch + timedelta(minutes=2)
    wait_for_sundial_minute(cluster, namespace, last)
    assert_every_minute_once(cluster, namespace, first=first, last=last, switch=switch)


def test_a_hand_over_killed_after_the_suspension_is_completed_by_running_it_again(
    cluster: Cluster, namespace: str, operator: Operator
) -> None:
    cluster.apply(cronjob(cluster), namespace)
    first = first_cronjob_minute(cluster, namespace)
    # Kill it half-way, late in a minute: once the CronJob is suspended the plugin waits the settle time (5 s)
    # before it creates anything, and is killed there; the next minute then comes while neither fires.
    cluster.wait_for(lambda: datetime.now(UTC).second >= 45 or None, timeout=70, message="second 45 of a minute")
    command = [str(PLUGIN), "--kubeconfig", str(cluster.kubeconfig), "import", f"cronjob/{NAME}", "--hand-over"]
    stopped = subprocess.Popen(
        [*command, "-n", namespace],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        mark = cluster.wait_for(
            lambda: (cluster.get_json("cronjob", NAME, "-n", namespace)["metadata"].get("annotations") or {}).get(
                handover.HANDED_OVER_TO
            ),
            timeout=30,
            interval=0.2,
            message="the CronJob suspended by the hand-over",
        )
    finally:
        stopped.kill()
        stopped.wait(timeout=10)
    assert cluster.get_json("scheduledjob", NAME, "-n", namespace) is None, "killed too late: it finished"
    assert cluster.get_json("cronjob", NAME, "-n", namespace)["spec"]["suspend"] is True
    record = json.loads(mark)
    assert record["wasSuspended"] is False
    suspended_at = parse_rfc3339(record["suspendedAt"], field="suspendedAt")
    gap = suspended_at.replace(second=0, microsecond=0) + timedelta(minutes=1)
    cluster.wait_for(
        lambda: datetime.now(UTC) >= gap + timedelta(seconds=10) or None, timeout=80, message="the gap minute"
    )
    assert gap not in jobs_by_minute(cluster, namespace)  # the suspended CronJob did not run it

    result = plugin(cluster, "import", f"cronjob/{NAME}", "--hand-over", "-n", namespace)
    assert result.returncode == 0, result.stderr
    assert "already suspended by an earlier hand-over" in result.stdout
    switch = handed_over_after(cluster, namespace)
    assert switch < gap  # the CronJob's last run: the gap minute is the ScheduledJob's
    created = cluster.get_json("scheduledjob", NAME, "-n", namespace)
    assert created["spec"].get("suspend") is not True  # the CronJob's own setting, not the hand-over's suspension

    again = plugin(cluster, "import", f"cronjob/{NAME}", "--hand-over", "-n", namespace)
    assert again.returncode == 0, again.stderr
    assert "already handed over" in again.stdout
    assert cluster.get_json("scheduledjob", NAME, "-n", namespace)["metadata"]["uid"] == created["metadata"]["uid"]

    last = gap + timedelta(minutes=1)
    wait_for_sundial_minute(cluster, namespace, last)
    assert_every_minute_once(cluster, namespace, first=first, last=last, switch=switch)
