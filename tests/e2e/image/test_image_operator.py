"""The operator as users run it: ``make image``'s image, configured exactly as ``helm template charts/sundial``
renders the Deployment (args, env, probes, securityContext, volumes), under the chart's RBAC with a
TokenRequest token at the in-cluster path: no kubeconfig, no admin credentials.

One pod (webhook enabled) serves the module: a cron ScheduledJob fires, a failing one retries and
dead-letters, the webhook refuses an impossible cron expression, the probes and /metrics answer, and
SIGTERM (``podman stop``, as the kubelet stops a pod) releases the Lease at once.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest

from .conftest import lease
from .pods import podman
from .releases import Release, spec_env

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import Releases
    from .pods import Pod

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

LABEL = "sundial.dev/scheduledjob"
WEBHOOK_LABEL = "e2e.sundial.dev/image-webhook"
IMPOSSIBLE = "0 0 30 2 *"


@pytest.fixture(scope="module")
def release(releases: Releases) -> Release:
    return releases()


@pytest.fixture(scope="module")
def pod(release: Release, cluster: Cluster) -> Pod:
    pod = release.start_pod("a", webhook=True)
    name = release.register_webhook(pod, label=WEBHOOK_LABEL)
    cluster.kubectl("label", "namespace", release.watch, f"{WEBHOOK_LABEL}={name}", "--overwrite")
    return pod


def _sj(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _get(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", namespace) or {}
    return body


def _jobs(cluster: Cluster, namespace: str, owner: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", namespace, "-l", f"{LABEL}={owner}") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def test_the_container_is_the_charts_pod(pod: Pod, release: Release) -> None:
    state = pod.inspect()
    config, host = state["Config"], state["HostConfig"]
    # The chart rendered localhost/sundial@<the archive's digest>; that is the image the container runs.
    assert pod.template.image == release.image.reference
    assert state["Image"] == podman("image", "inspect", "--format", "{{.Id}}", release.image.reference).stdout.strip()
    assert config["User"] == "65532:65532"
    assert host["ReadonlyRootfs"] is True
    assert {"CAP_CHOWN", "CAP_NET_BIND_SERVICE", "CAP_SETUID", "CAP_KILL"} <= set(host.get("CapDrop") or [])
    assert not host.get("CapAdd")
    assert "no-new-privileges" in " ".join(host.get("SecurityOpt") or [])
    env = spec_env(pod)
    assert env["POD_NAMESPACE"] == release.namespace and env["POD_NAME"] == pod.name
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert not [key for key in env if key.startswith("KUBECONFIG")]
    args = pod.command[pod.command.index(release.image.reference) + 1 :]
    assert f"--lease-namespace={release.namespace}" in args and f"--identity={pod.name}" in args
    assert f"--namespace={release.watch}" in args
    assert not [arg for arg in args if "kubeconfig" in arg]
    mounts = {m["Destination"]: m for m in state["Mounts"]}
    assert mounts["/var/run/secrets/kubernetes.io/serviceaccount"]["RW"] is False


def test_probes_and_metrics_answer(pod: Pod) -> None:
    assert pod.probe("livenessProbe") == 200
    assert pod.probe("readinessProbe") == 200
    text = pod.metrics()
    assert "sundial_leases_held 1.0" in text
    assert 'code="403"' not in text, "the chart's RBAC refused a request"


def test_a_cron_scheduled_job_fires(pod: Pod, release: Release, cluster: Cluster) -> None:
    cluster.apply(_sj("every5", cluster.job_manifest("x"), schedule="*/5 * * * * *"), release.watch)
    jobs = cluster.wait_for(
        lambda: (found := _jobs(cluster, release.watch, "every5")) and len(found) >= 2 and found,
        timeout=40,
        message="two Jobs of a */5-second schedule",
    )
    uid = _get(cluster, release.watch, "every5")["metadata"]["uid"]
    for job in jobs:
        annotations = job["metadata"]["annotations"]
        scheduled = dt.datetime.fromisoformat(annotations["sundial.dev/scheduled-time"].replace("Z", "+00:00"))
        assert scheduled.second % 5 == 0
        assert annotations["sundial.dev/trigger"] == "schedule"
        assert [ref["uid"] for ref in job["metadata"]["ownerReferences"] if ref.get("controller")] == [uid]
    cluster.kubectl("delete", "scheduledjob", "every5", "-n", release.watch, "--wait=false")


def test_a_failing_run_retries_then_dead_letters(pod: Pod, release: Release, cluster: Cluster) -> None:
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    manifest = _sj(
        "flaky",
        cluster.job_manifest("x", fail=True),
        runAt=soon,
        failedJobsHistoryLimit=5,
        retry={"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}},
    )
    cluster.apply(manifest, release.watch)
    sj = cluster.wait_for(
        lambda: (obj := _get(cluster, release.watch, "flaky")) and (obj.get("status") or {}).get("deadLetters") and obj,
        timeout=60,
        message="a dead letter after two failed attempts",
    )
    jobs = _jobs(cluster, release.watch, "flaky")
    attempts = sorted(job["metadata"]["annotations"]["sundial.dev/attempt"] for job in jobs)
    assert attempts == ["1", "2"]
    [letter] = sj["status"]["deadLetters"]
    assert letter["reason"] == "MaxAttemptsExceeded" and letter["attempts"] == 2


def test_the_webhook_refuses_an_impossible_cron_expression(pod: Pod, release: Release, cluster: Cluster) -> None:
    manifest = json.dumps(_sj("never", cluster.job_manifest("x"), schedule=IMPOSSIBLE))

    def refusal() -> str | None:  # the API server starts calling a new configuration within seconds
        result = cluster.kubectl("apply", "-n", release.watch, "-f", "-", input=manifest, check=False)
        return result.stderr if result.returncode != 0 and "denied the request" in result.stderr else None

    message = cluster.wait_for(refusal, timeout=30, message="the webhook refusing an impossible schedule")
    assert "schedule" in message
    assert _get(cluster, release.watch, "never") == {}


def test_sigterm_releases_the_lease(pod: Pod, release: Release, cluster: Cluster) -> None:
    name = f"{release.lease_prefix}-shard-0"
    assert lease(cluster, release.namespace, name).get("holderIdentity") == pod.name
    cluster.kubectl("label", "namespace", release.watch, f"{WEBHOOK_LABEL}-")  # nothing answers it after this
    assert pod.terminate() == 0, f"not a clean exit on SIGTERM (137: SIGKILLed after the grace period)\n{pod.logs()}"
    spec = lease(cluster, release.namespace, name)
    assert not spec.get("holderIdentity"), f"the Lease still names a holder after SIGTERM: {spec}"
