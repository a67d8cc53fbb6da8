"""The README's install path as a new user follows it (issue 32, item 1), and an install whose image cannot start
(item 2), on the sandbox's real node.

1. The sh block after the README's ``install-path`` marker runs as it is written, in one bash from the checkout:
   ``make venv``, ``make -s image``, ``ctr -n k8s.io images import`` (the real node's containerd, named by
   ``CONTAINERD_ADDRESS``, which ctr reads), ``helm install`` with no setting, ``kubectl sundial check --wait``,
   the first ScheduledJob, and its last line, ``kubectl get jobs ... --watch``, until it shows the first Job; the
   Job's container then really ran on the node and printed its scheduled time. What the test ground adds is
   around the block, never in it: the suite's CRDs are handed to the release (Helm's ownership labels, as a
   user's existing CRDs would be adopted) and handed back afterwards; while it runs, kwok's nodes are cordoned and
   the real node's taint is lifted, so that the chart's pods and the Job's land where containers really run
   (restored afterwards); helm is the pinned one, put on PATH.
2. A release whose image cannot start (``ErrImageNeverPull``): a ScheduledJob apply in a namespace its webhook
   covers succeeds (the webhook fails open), and ``kubectl sundial check`` exits 1 naming the kubelet's reason.

The README's install is cluster-wide (it watches every namespace) for the few minutes it runs; the e2e modules
run one after another, so no other module's operator is acting then.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.harness.cluster import REPO

from sundial_sandbox import REAL_NODE_LABEL

from .releases import install

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]  # the image build in the block may be a cold one

RELEASE, NAMESPACE = "sundial", "sundial-system"
CRDS = ("scheduledjobs.sundial.dev", "schedulecalendars.sundial.dev")
#: How long the watch may take to show the first Job: the next whole minute, plus the operator's start.
FIRST_JOB_SECONDS = 180


def readme_block() -> tuple[str, str]:
    """The README's install path: (every line but the last, the last: the ``kubectl get jobs --watch``)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.compile(r"```sh\n(.*?)```", re.DOTALL).search(text, text.index("<!-- install-path:"))
    assert match, "the README's install-path marker is not followed by a sh block"
    *setup, watch = match.group(1).rstrip("\n").splitlines()
    assert "--watch" in watch, "the install path no longer ends with kubectl get jobs --watch"
    return "\n".join(setup) + "\n", watch


@contextmanager
def only_the_real_node(cluster: Cluster, node: RealNode) -> Iterator[None]:
    """kwok's nodes cordoned and the real node untainted while it lasts, as before afterwards."""
    nodes = cluster.get_json("nodes")["items"]
    kwok = [
        n["metadata"]["name"]
        for n in nodes
        if n["metadata"]["name"] != node.name and not n["spec"].get("unschedulable")
    ]
    taint = f"{REAL_NODE_LABEL}=true:NoSchedule"
    for name in kwok:
        cluster.kubectl("cordon", name)
    cluster.kubectl("taint", "nodes", node.name, f"{REAL_NODE_LABEL}:NoSchedule-")
    try:
        yield
    finally:
        cluster.kubectl("taint", "nodes", node.name, taint, "--overwrite", check=False)
        for name in kwok:
            cluster.kubectl("uncordon", name, check=False)


@contextmanager
def handed_to_the_release(cluster: Cluster) -> Iterator[None]:
    """The suite's CRDs adopted by the README's release while it lasts (Helm adopts objects that carry its
    ownership metadata), then handed back to the suite (the chart keeps them on uninstall: crds.keep)."""
    for crd in CRDS:
        cluster.kubectl("label", "crd", crd, "app.kubernetes.io/managed-by=Helm", "--overwrite")
        cluster.kubectl("annotate", "crd", crd, f"meta.helm.sh/release-name={RELEASE}",
                        f"meta.helm.sh/release-namespace={NAMESPACE}", "--overwrite")  # fmt: skip
    try:
        yield
    finally:
        for crd in CRDS:
            cluster.kubectl("label", "crd", crd, "app.kubernetes.io/managed-by-", check=False)
            cluster.kubectl("annotate", "crd", crd, "meta.helm.sh/release-name-", "meta.helm.sh/release-namespace-",
                            "helm.sh/resource-policy-", check=False)  # fmt: skip


def _first_job_line(watch: str, env: dict[str, str]) -> str:
    """Run the README's watch until it prints a line of a first-job Job; that line."""
    process = subprocess.Popen(["bash", "-c", watch], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + FIRST_JOB_SECONDS
    seen: list[str] = []
    try:
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                if process.poll() is not None:
                    break
                time.sleep(0.5)
                continue
            seen.append(line)
            if line.startswith("first-job-"):
                return line
    finally:
        process.terminate()
        process.wait(timeout=10)
    raise AssertionError(f"no first-job Job within {FIRST_JOB_SECONDS}s; the watch printed:\n{''.join(seen)}")


def _job(cluster: Cluster, name: str) -> dict[str, Any] | None:
    job: dict[str, Any] | None = cluster.get_json("job", name, "-n", "default")
    return job if job and (job.get("status") or {}).get("succeeded") else None


def test_the_readme_install_path_ends_in_a_job_of_the_first_scheduled_job(
    cluster: Cluster, crds: None, real_node: RealNode, helm: str
) -> None:
    assert cluster.sandbox is not None
    setup, watch = readme_block()
    env = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "PATH": f"{Path(helm).parent}{os.pathsep}{os.environ['PATH']}",
        "CONTAINERD_ADDRESS": str(cluster.sandbox.node.paths.socket),
    }
    with handed_to_the_release(cluster), only_the_real_node(cluster, real_node):
        try:
            ran = subprocess.run(["bash", "-euo", "pipefail", "-c", setup], cwd=REPO, env=env,
                                 capture_output=True, text=True, timeout=1500, check=False)  # fmt: skip
            assert ran.returncode == 0, f"the README's install path failed:\n{ran.stdout}\n{ran.stderr[-6000:]}"
            checked = [line for line in ran.stdout.splitlines() if line.startswith(("ok ", "failed "))]
            assert len(checked) == 5 and all(line.startswith("ok ") for line in checked), ran.stdout
            line = _first_job_line(watch, env)
            name = line.split()[0]
            job = cluster.wait_for(lambda: _job(cluster, name), timeout=120, message=f"Job {name} succeeded")
            selector = f"job-name={job['metadata']['name']}"
            (pod,) = cluster.get_json("pods", "-n", "default", "-l", selector)["items"]
            assert pod["spec"]["nodeName"] == real_node.name
            printed = cluster.kubectl("logs", "-n", "default", pod["metadata"]["name"]).stdout
            scheduled = job["metadata"]["annotations"]["sundial.dev/scheduled-time"]
            assert printed.strip() == f"hello from {scheduled}"
        finally:
            cluster.kubectl("delete", "scheduledjob", "first-job", "-n", "default", "--ignore-not-found", check=False)
            subprocess.run([helm, f"--kubeconfig={cluster.kubeconfig}", "uninstall", RELEASE, "-n", NAMESPACE,
                            "--wait"], capture_output=True, text=True, check=False, timeout=180)  # fmt: skip
            cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", "--ignore-not-found", check=False)


def test_an_install_whose_image_cannot_start_still_admits_scheduled_jobs_and_check_names_why(
    cluster: Cluster, crds: None, real_node: RealNode, helm: str
) -> None:
    release = install(cluster, helm, "localhost/sundial-never-built", "sha256:" + "0" * 64)
    try:
        cluster.wait_for(
            lambda: [p for p in release.pods() if _waiting(p) == "ErrImageNeverPull"],
            timeout=120,
            message="the operator pod waiting with ErrImageNeverPull",
        )
        manifest = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "applied-while-down", "namespace": release.watch},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": real_node.shell_image}]}}}}},
        }  # fmt: skip
        applied = cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)
        assert applied.returncode == 0, f"the apply was refused while no operator is ready:\n{applied.stderr}"
        check = subprocess.run(
            [str(Path(sys.executable).parent / "kubectl-sundial"), f"--kubeconfig={cluster.kubeconfig}", "check",
             "-n", release.watch],
            capture_output=True, text=True, check=False, timeout=120,
        )  # fmt: skip
        lines = {line.split(":")[0].split()[-1]: line for line in check.stdout.splitlines()}
        assert check.returncode == 1, check.stdout + check.stderr
        assert lines["operator"].startswith("failed ") and "ErrImageNeverPull" in lines["operator"], check.stdout
        assert lines["webhook"].startswith("failed ") and "was admitted" in lines["webhook"], check.stdout
    finally:
        release.uninstall()


def _waiting(pod: dict[str, Any]) -> str | None:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return next((s["state"]["waiting"].get("reason") for s in statuses if (s.get("state") or {}).get("waiting")), None)
