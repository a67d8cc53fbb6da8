"""Install CustomResourceDefinitions and wait until the API server serves them.

``kubectl wait --for=condition=Established`` right after ``kubectl apply`` is racy: if the API server
has not written the new CRD's ``status.conditions`` yet, kubectl fails at once ("accessor error: <nil>")
instead of waiting. CI hit exactly that. So the wait here reads the condition itself and polls until a
deadline; every failure names the CRD and carries kubectl's own message.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ESTABLISHED = '{.status.conditions[?(@.type=="Established")].status}'


class CrdError(RuntimeError):
    """kubectl could not apply the CRDs, or they were not Established in time."""


def install_crds(
    kubeconfig: Path | str,
    source: Path | str,
    *,
    timeout: float = 120.0,
    kubectl: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[str]:
    """Server-side apply the CRD manifests at SOURCE (file or directory); return their names once every one
    of them is Established."""
    binary = kubectl or shutil.which("kubectl") or "kubectl"
    base = [binary, f"--kubeconfig={kubeconfig}"]
    applied = _run([*base, "apply", "--server-side", "--force-conflicts", "-o", "name", "-f", str(source)])
    if applied.returncode != 0:
        raise CrdError(f"kubectl apply -f {source} failed: {applied.stderr.strip() or applied.stdout.strip()}")
    names = [line.strip() for line in applied.stdout.splitlines() if line.strip()]
    wait_established(names, base, timeout=timeout, clock=clock, sleep=sleep)
    return names


def wait_established(
    names: Sequence[str],
    kubectl: Sequence[str],
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Poll each of NAMES (``customresourcedefinition.apiextensions.k8s.io/x``) with the KUBECTL command
    until its Established condition is True; CrdError after TIMEOUT seconds."""
    deadline = clock() + timeout
    pending = list(names)
    while pending:
        result = _run([*kubectl, "get", pending[0], "-o", f"jsonpath={ESTABLISHED}"])
        if result.returncode == 0 and result.stdout.strip() == "True":
            pending.pop(0)
            continue
        last = result.stderr.strip() or f"Established={result.stdout.strip() or '(not set yet)'}"
        if clock() >= deadline:
            raise CrdError(f"{pending[0]} not Established after {timeout:g} s: {last}")
        sleep(0.2)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
