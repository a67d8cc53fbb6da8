"""The cluster under test as the e2e suite drives it: ``kubectl`` with the suite's kubeconfig, JSON reads,
applies, polling (:meth:`Cluster.wait_for`) and the Job manifest whose pods kwok (or busybox) runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sundial_sandbox import DURATION_ANNOTATION, OUTCOME_FAIL, OUTCOME_LABEL, Sandbox

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[3]

#: Image used for pod templates; kwok ignores it, a real cluster runs it.
BUSYBOX_IMAGE = os.environ.get("SUNDIAL_E2E_IMAGE", "busybox:1.37")


class WaitTimeoutError(AssertionError):
    pass


@dataclass
class Cluster:
    kubeconfig: Path
    #: True when pods are faked by kwok (the sandbox), False on a real cluster.
    fake_pods: bool
    #: The sandbox this suite started (None against an external cluster): the real-node tests start its
    #: real node (tests/e2e/realnode/).
    sandbox: Sandbox | None = None

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
