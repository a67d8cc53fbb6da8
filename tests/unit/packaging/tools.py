"""The two programs the packaging tests render with: the pinned helm (cached by tools/helm/build.sh) and
kubectl's built-in kustomize. A test skips, saying why, when the program is not there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def helm_binary() -> str:
    """``$SUNDIAL_HELM``, else the pinned helm in the cache, else helm on PATH."""
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (ROOT / "tools/helm/build.sh").read_text(), re.MULTILINE)
    assert version
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / version.group(1) / "helm"
    found = str(cached) if cached.is_file() else shutil.which("helm")
    if found is None:
        pytest.skip("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
    return found


def kustomize(path: Path) -> str:
    """``kubectl kustomize PATH``'s output (the test fails with kustomize's error)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (for kubectl kustomize) is not on PATH")
    result = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout
