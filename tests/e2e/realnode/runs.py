"""What the real-node tests share: a one-off ScheduledJob for a pod spec, its Jobs by attempt, a finished pod, and
polling until nothing of an install is left."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.e2e.harness.cluster import WaitTimeoutError

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster


def scheduled_job(name: str, pod_spec: dict[str, Any], **spec: Any) -> dict[str, Any]:
    run_at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    job = {"backoffLimit": 0, "template": {"spec": pod_spec}}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"runAt": run_at, **spec, "jobTemplate": {"spec": job}},
    }


def jobs_of(cluster: Cluster, ns: str, owner: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", ns, "-l", f"{names.SCHEDULED_JOB_LABEL}={owner}") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return sorted(items, key=lambda job: int(job["metadata"]["annotations"][names.ATTEMPT_ANNOTATION]))


def finished_pod(cluster: Cluster, ns: str, job: str) -> dict[str, Any] | None:
    listing = cluster.get_json("pods", "-n", ns, "-l", f"job-name={job}") or {}
    done = [pod for pod in listing.get("items") or [] if pod["status"].get("phase") in {"Succeeded", "Failed"}]
    return done[0] if done else None


def until_nothing_left(cluster: Cluster, left: Callable[[], list[str]], *, timeout: float, what: str) -> None:
    """Poll ``left`` (what is still there) until it is empty; fail naming what stayed after ``timeout``."""
    found: list[str] = []

    def empty() -> bool:
        found[:] = left()
        return not found

    try:
        cluster.wait_for(empty, timeout=timeout, message=what)
    except WaitTimeoutError:
        raise AssertionError(f"{what}: still there after {timeout:.0f} s: {found}") from None
