"""Locate (or build) the control-plane binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

#: Executables a sandbox needs, all in one directory.
BINARIES: tuple[str, ...] = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")

#: Environment variable naming a directory with prebuilt binaries (skips the build).
BIN_ENV = "SUNDIAL_CONTROLPLANE_BIN"
#: Environment variable naming the build script (default: found relative to this file).
BUILD_SCRIPT_ENV = "SUNDIAL_CONTROLPLANE_BUILD"


class BinariesError(RuntimeError):
    """The control-plane binaries are missing and could not be built."""


def _missing(bin_dir: Path) -> list[str]:
    return [name for name in BINARIES if not os.access(bin_dir / name, os.X_OK)]


def find_build_script() -> Path | None:
    """``tools/controlplane/build.sh`` of the source checkout this package lives in, if any."""
    override = os.environ.get(BUILD_SCRIPT_ENV)
    if override:
        return Path(override)
    # tools/sandbox/sundial_sandbox/binaries.py: the checkout root is the first parent holding tools/controlplane.
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "tools" / "controlplane" / "build.sh"
        if candidate.is_file():
            return candidate
    return None


def ensure_binaries() -> Path:
    """Return the directory holding every binary in :data:`BINARIES`, building them if needed.

    With ``SUNDIAL_CONTROLPLANE_BIN`` set, that directory is used as is (and must be complete).
    Otherwise ``tools/controlplane/build.sh`` runs; it returns at once when its cache is warm,
    and takes 10-25 minutes on a cold cache. Its progress goes to this process's stderr.
    """
    prebuilt = os.environ.get(BIN_ENV)
    if prebuilt:
        bin_dir = Path(prebuilt).expanduser().resolve()
        missing = _missing(bin_dir)
        if missing:
            raise BinariesError(f"{BIN_ENV}={bin_dir} lacks: {', '.join(missing)}")
        return bin_dir

    script = find_build_script()
    if script is None:
        raise BinariesError(
            "tools/controlplane/build.sh not found (not a source checkout?); "
            f"set {BIN_ENV} to a directory holding {', '.join(BINARIES)}"
        )
    bash = shutil.which("bash")
    if bash is None:
        raise BinariesError("bash is required to run tools/controlplane/build.sh")
    result = subprocess.run([bash, str(script)], stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if result.returncode != 0 or not lines:
        raise BinariesError(f"{script} failed with exit code {result.returncode} (see its output above)")
    bin_dir = Path(lines[-1].strip())
    missing = _missing(bin_dir)
    if missing:
        raise BinariesError(f"{script} printed {bin_dir}, which lacks: {', '.join(missing)}")
    return bin_dir
