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


def _script(name: str, *args: str) -> list[str]:
    """Run ``tools/controlplane/NAME ARGS`` (progress on this process's stderr); its stdout lines."""
    build = find_build_script()
    if build is None:
        raise BinariesError(f"tools/controlplane/{name} not found (not a source checkout?)")
    script = build.parent / name
    bash = shutil.which("bash")
    if bash is None:
        raise BinariesError(f"bash is required to run {script}")
    result = subprocess.run([bash, str(script), *args], stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    if result.returncode != 0:
        raise BinariesError(f"{script} failed with exit code {result.returncode} (see its output above)")
    return lines


def ensure_node_binaries() -> Path:
    """The directory holding ``kubelet`` and ``pause`` (``build.sh --node``; ~90 s with a warm Go cache),
    after making sure containerd, runc and the CNI plugins are installed (``install-node.sh``, needs root)."""
    _script("install-node.sh")
    lines = _script("build.sh", "--node")
    bin_dir = Path(lines[-1]) if lines else Path()
    if not all(os.access(bin_dir / name, os.X_OK) for name in ("kubelet", "pause")):
        raise BinariesError(f"build.sh --node printed {bin_dir}, which lacks kubelet or pause")
    return bin_dir


def ensure_node_images(pause: Path) -> dict[str, Path]:
    """``{image name: OCI archive}`` of the pause image and the shell image (``node-images.sh``)."""
    lines = _script("node-images.sh", str(pause))
    images = dict(line.split("=", 1) for line in lines[-2:] if "=" in line)
    if len(images) != 2:
        raise BinariesError(f"node-images.sh printed {lines[-2:]}, not two NAME=ARCHIVE lines")
    return {name: Path(archive) for name, archive in images.items()}
