"""Fixtures for the end-to-end suite: a real Kubernetes API server, one namespace per test.

Which cluster:
* ``SUNDIAL_E2E_KUBECONFIG=/path`` (or ``SUNDIAL_E2E_USE_KUBECONFIG=1`` with ``KUBECONFIG``):
  an existing cluster (e.g. kind). Nothing is started or stopped.
* otherwise a :class:`sundial.sandbox.Sandbox` in a temporary directory, stopped at session end.
  ``SUNDIAL_E2E_SANDBOX_DIR=/path`` uses (and keeps running) a sandbox in that directory instead,
  which makes re-runs fast. Build the binaries first: ``bash tools/controlplane/build.sh``.

The same manifests work on both: on the sandbox, kwok makes pods succeed/fail/"run" from the
``sandbox.sundial.dev/outcome`` label and ``sandbox.sundial.dev/duration`` annotation; on a
real cluster the busybox command built by :meth:`Cluster.job_manifest` does the same thing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sundial.sandbox import DURATION_ANNOTATION, OUTCOME_FAIL, OUTCOME_LABEL, Sandbox

T = TypeVar("T")

#: Image used for pod templates; kwok ignores it, a real cluster runs it.
BUSYBOX_IMAGE = os.environ.get("SUNDIAL_E2E_IMAGE", "busybox:1.37")


class WaitTimeoutError(AssertionError):
    pass


@dataclass
class Cluster:
    kubeconfig: Path
    #: True when pods are faked by kwok (the sandbox), False on a real cluster.
    fake_pods: bool

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.fail("kubectl is not on PATH")
        result = subprocess.run(
            [kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}{result.stdout}"
            )
        return result

    def get_json(self, *args: str) -> Any:
        """``kubectl get ARGS -o json``, parsed; None if the object does not exist."""
        result = self.kubectl("get", *args, "-o", "json", check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr or "not found" in result.stderr:
                return None
            raise AssertionError(f"kubectl get {' '.join(args)} failed:\n{result.stderr}")
        return json.loads(result.stdout)

    def apply(self, manifest: dict[str, Any], namespace: str | None = None) -> None:
        args = ["apply", "-f", "-"]
        if namespace is not None:
            args += ["-n", namespace]
        self.kubectl(*args, input=json.dumps(manifest))

    def wait_for(
        self,
        predicate: Callable[[], T | None],
        timeout: float,
        message: str = "condition",
        interval: float = 0.5,
    ) -> T:
        """Poll PREDICATE until it returns something truthy (returned); fail after TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        last: T | None = None
        while True:
            last = predicate()
            if last:
                return last
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(f"timed out after {timeout:.0f}s waiting for {message} (last: {last!r})")
            time.sleep(interval)

    def job_manifest(
        self,
        name: str,
        *,
        fail: bool = False,
        duration_seconds: int | None = None,
        backoff_limit: int = 0,
    ) -> dict[str, Any]:
        """A Job whose pod succeeds (or fails with exit code 1) after DURATION_SECONDS."""
        labels: dict[str, str] = {"app.kubernetes.io/part-of": "sundial-e2e"}
        annotations: dict[str, str] = {}
        if fail:
            labels[OUTCOME_LABEL] = OUTCOME_FAIL
        if duration_seconds is not None:
            annotations[DURATION_ANNOTATION] = f"{duration_seconds}s"
        script = f"sleep {duration_seconds or 0}; exit {1 if fail else 0}"
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "backoffLimit": backoff_limit,
                "template": {
                    "metadata": {"labels": labels, "annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script]}],
                    },
                },
            },
        }


def _external_kubeconfig() -> Path | None:
    explicit = os.environ.get("SUNDIAL_E2E_KUBECONFIG")
    if explicit:
        return Path(explicit)
    if os.environ.get("SUNDIAL_E2E_USE_KUBECONFIG") == "1" and os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    return None


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = _external_kubeconfig()
    if external is not None:
        if not external.is_file():
            pytest.fail(f"e2e kubeconfig {external} does not exist")
        yield Cluster(kubeconfig=external, fake_pods=False)
        return

    persistent = os.environ.get("SUNDIAL_E2E_SANDBOX_DIR")
    directory = Path(persistent) if persistent else tmp_path_factory.mktemp("sandbox")
    sandbox = Sandbox(directory)
    try:
        kubeconfig = sandbox.start()
    except Exception:
        sandbox.stop()
        raise
    try:
        yield Cluster(kubeconfig=kubeconfig, fake_pods=True)
    finally:
        if not persistent:
            sandbox.stop()


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"e2e-{stem}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    # Pods need the namespace's default ServiceAccount, created asynchronously.
    cluster.wait_for(
        lambda: cluster.get_json("serviceaccount", "default", "-n", name),
        timeout=30,
        message=f"ServiceAccount {name}/default",
    )
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)
