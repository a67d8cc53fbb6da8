"""A rolling upgrade of the image-run operator under load, audited independently.

Two replicas from the image (the chart's pod, as in test_image_operator.py) compete for the shard Lease
while 50 ScheduledJobs fire every 5 s (``catchUp.policy: All``). Each replica is then replaced the way a
Deployment's RollingUpdate replaces a pod: the new pod is started and becomes ready, then the old one gets
SIGTERM (``podman stop`` with the chart's terminationGracePeriodSeconds). The chaos suite's auditor
(tests/e2e/chaos/auditor.py: its own watch of Jobs with the admin certificate, and the operator's own
timetable code) then finds every nominal time of every ScheduledJob started exactly once: no duplicate,
no hole, nothing missed.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.e2e.chaos.harness import Harness, utcnow

from .conftest import lease

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import Releases
    from .pods import Pod
    from .releases import Release

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

SCHEDULED_JOBS = 50
PERIOD_SECONDS = 5
SCHEDULE = f"*/{PERIOD_SECONDS} * * * * *"


def _holder(cluster: Cluster, release: Release) -> str:
    return str(lease(cluster, release.namespace, f"{release.lease_prefix}-shard-0").get("holderIdentity") or "")


def _two_more_ticks(harness: Harness) -> None:
    """Poll until every ScheduledJob handled the nominal times of the next ~two periods."""
    harness.settle(utcnow() + timedelta(seconds=2 * PERIOD_SECONDS), timeout=90)


def _replace(release: Release, old: Pod, identity: str, harness: Harness) -> Pod:
    """RollingUpdate (maxSurge 1, maxUnavailable 0): the new pod up and ready, then the old one SIGTERMed;
    the runs of the next periods must come from the replicas that remain."""
    new = release.start_pod(identity)
    assert old.terminate() == 0, f"{old.name} did not exit cleanly on SIGTERM:\n{old.logs()}"
    _two_more_ticks(harness)
    return new


def test_a_rolling_upgrade_runs_every_nominal_time_exactly_once(
    releases: Releases, cluster: Cluster, tmp_path: Path
) -> None:
    release = releases()
    first = release.start_pod("a")
    second = release.start_pod("b")
    harness = Harness(cluster, release.watch, tmp_path)
    harness.start_watch()
    try:
        harness.create_scheduled_jobs(SCHEDULED_JOBS, SCHEDULE, catchUp={"policy": "All"})
        _two_more_ticks(harness)
        holders = {_holder(cluster, release)}

        third = _replace(release, first, "c", harness)
        holders.add(_holder(cluster, release))
        fourth = _replace(release, second, "d", harness)
        holders.add(_holder(cluster, release))
        assert _holder(cluster, release) in (third.name, fourth.name)

        harness.quiesce(timeout=120)
        report = harness.report("rolling-upgrade")
    finally:
        harness.close()
    report.assert_clean()
    assert report.started == report.expected > SCHEDULED_JOBS, report.table()
    assert report.duplicated == 0 and report.lost == 0 and report.missed == 0, report.table()
    assert len(holders) >= 2, f"the Lease never changed hands: {holders}"
    print(f"Lease holders seen: {sorted(holders)}")
