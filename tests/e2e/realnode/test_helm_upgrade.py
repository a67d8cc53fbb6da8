"""``helm upgrade`` to a changed image on the real node keeps every run exactly once (issue 23 item 3).

Two operator replicas installed by the chart (pods on the real node, image imported, never pulled) share
the shard Lease while 10 ScheduledJobs fire every 5 s (``catchUp.policy: All``); ``helm upgrade`` then rolls
the Deployment to another image (the same operator with one more label, so another digest): the Deployment's
RollingUpdate replaces the pods one at a time through the kubelet (SIGTERM, the chart's grace period,
readiness probes). The chaos suite's auditor (tests/e2e/chaos/auditor.py: its own watch of Jobs) then finds
every nominal time of every ScheduledJob started exactly once. The Jobs' pods go to kwok's node (they
complete at once).
"""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from tests.e2e.chaos.harness import Harness, utcnow

from .releases import CHART, install, values

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import OperatorImage, RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

SCHEDULED_JOBS = 10
PERIOD_SECONDS = 5


def _podman(*args: str) -> str:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, f"podman {' '.join(args)}: {result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def changed_digest(
    cluster: Cluster, node_operator_image: OperatorImage, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The operator image with one more label (another digest), built with podman and imported into the node."""
    image = node_operator_image
    directory = tmp_path_factory.mktemp("changed-image")
    _podman("load", "--quiet", "--input", str(image.archive))
    tag = f"{image.repository}:e2e-upgrade-{image.digest[7:19]}"
    (directory / "Containerfile").write_text(
        f"FROM {image.repository}@{image.digest}\nLABEL dev.sundial.e2e.variant=upgrade\n", encoding="utf-8"
    )
    _podman("build", "--quiet", "--runtime", "/usr/sbin/runc", "--tag", tag, str(directory))
    archive = directory / "changed.oci.tar"
    _podman("save", "--quiet", "--format", "oci-archive", "--output", str(archive), tag)
    assert cluster.sandbox is not None
    references = cluster.sandbox.node.import_image(archive)
    by_digest = references[references.index(tag) + 1]
    digest = by_digest.rsplit("@", 1)[1]
    assert digest != image.digest
    return digest


def _images(release_pods: list[dict[str, object]]) -> set[str]:
    return {pod["spec"]["containers"][0]["image"] for pod in release_pods}  # type: ignore[index]


def test_a_helm_upgrade_to_a_changed_image_runs_every_nominal_time_exactly_once(
    cluster: Cluster,
    crds: None,
    real_node: RealNode,
    node_operator_image: OperatorImage,
    changed_digest: str,
    helm: str,
    tmp_path: Path,
) -> None:
    repository = node_operator_image.repository
    release = install(cluster, helm, repository, node_operator_image.digest, replicas=2)
    try:
        cluster.wait_for(lambda: len(release.ready_pods()) == 2, timeout=180, message="two operator pods Ready")
        harness = Harness(cluster, release.watch, tmp_path)
        harness.start_watch()
        try:
            harness.create_scheduled_jobs(SCHEDULED_JOBS, f"*/{PERIOD_SECONDS} * * * * *", catchUp={"policy": "All"})
            harness.settle(utcnow() + timedelta(seconds=2 * PERIOD_SECONDS), timeout=90)
            upgraded = values(repository, changed_digest, release.name, release.watch, replicas=2)
            result = release.run("upgrade", release.name, str(CHART), values=upgraded)
            assert result.returncode == 0, result.stderr

            def rolled() -> bool:
                pods = release.pods()
                ready = release.ready_pods()
                return len(pods) == len(ready) == 2 and _images(ready) == {f"{repository}@{changed_digest}"}

            cluster.wait_for(rolled, timeout=240, message="both pods replaced by the changed image and Ready")
            harness.settle(utcnow() + timedelta(seconds=2 * PERIOD_SECONDS), timeout=90)
            harness.quiesce(timeout=120)
            report = harness.report("helm-upgrade")
        finally:
            harness.close()
    finally:
        release.uninstall()
    report.assert_clean()
    assert report.started == report.expected > SCHEDULED_JOBS, report.table()
    assert report.duplicated == 0 and report.lost == 0 and report.missed == 0, report.table()
