"""What the real node touches outside its directory, and how :meth:`RealNode.stop` takes it back.

The kubelet and containerd hard-code a few host paths (no flag or field moves them): the device-plugin
directory, ``/var/log/containers`` (symlinks to the pod logs), ``/var/lib/cni`` (libcni's cache),
``/run/containerd`` (the shims' sockets), ``/run/netns`` (the pods' network namespaces) and the ``kubepods``
cgroups. Which of them existed before the node started is recorded in its state file, and only what the
node created is removed. The bridge is the sandbox's own, created at start and deleted at stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

#: Host paths the kubelet, containerd or the CNI plugins create (removed at stop if they were not there).
HOST_PATHS: tuple[str, ...] = (
    "/var/lib/kubelet",
    "/var/log/containers",
    "/var/lib/cni",
    "/run/containerd",
    "/run/netns",
)
_CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Where containerd's CRI plugin bind-mounts the pods' network namespaces, named ``cni-<uuid>``.
_NETNS = Path("/run/netns")
_NETNS_PREFIX = "cni-"


class HostError(RuntimeError):
    """A host command the real node needs failed."""


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise HostError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def _cgroup_dirs() -> list[str]:
    """The ``kubepods`` cgroups in every cgroup v1 hierarchy (and the unified one)."""
    if not _CGROUP_ROOT.is_dir():
        return []
    return sorted(str(p) for p in _CGROUP_ROOT.glob("*/kubepods*"))


def snapshot() -> dict[str, list[str]]:
    """Which :data:`HOST_PATHS` and ``kubepods`` cgroups exist now."""
    return {
        "paths": [p for p in HOST_PATHS if os.path.lexists(p)],
        "cgroups": _cgroup_dirs(),
        "netns": sorted(p.name for p in _NETNS.iterdir()) if _NETNS.is_dir() else [],
    }


def _processes_with(marker: str) -> list[int]:
    """The processes on this machine whose command line holds MARKER."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(marker.encode() in arg for arg in argv):
            found.append(int(entry.name))
    return found


def create_bridge(
    name: str, address: str, prefix: int, *, service_cidr: str, service_ip: str, owner_marker: str
) -> None:
    """The bridge with the node's ADDRESS and the ``kubernetes`` Service's SERVICE_IP on it, and the rest of
    SERVICE_CIDR unreachable from this machine (no ClusterIP is ever dialled off it).

    The bridge is the machine's one-real-node lock. A bridge that no live process owns (no command line holds
    OWNER_MARKER, which every real node's kubelet carries) is what a killed run left behind: it is removed and
    made anew rather than failing every real-node test of every later run on the machine."""
    if Path(f"/sys/class/net/{name}").exists():
        owners = _processes_with(owner_marker)
        if owners:
            raise HostError(
                f"interface {name} exists and a real node runs on this machine (pids {owners[:5]}): stop it first"
            )
        delete_bridge(name, service_cidr=service_cidr)
    _run("ip", "link", "add", name, "type", "bridge")
    _run("ip", "addr", "add", f"{address}/{prefix}", "dev", name)
    _run("ip", "addr", "add", f"{service_ip}/32", "dev", name)
    _run("ip", "link", "set", name, "up")
    _run("ip", "route", "replace", "unreachable", service_cidr)


def delete_bridge(name: str, *, service_cidr: str) -> None:
    _run("ip", "route", "delete", "unreachable", service_cidr, check=False)
    if Path(f"/sys/class/net/{name}").exists():
        _run("ip", "link", "delete", name, check=False)


def _mounts() -> list[str]:
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    # field 5 is the mount point, with spaces etc. octal-escaped
    return [line.split()[4].encode().decode("unicode_escape") for line in lines if len(line.split()) > 4]


def unmount_under(*roots: Path) -> list[str]:
    """Lazily unmount every mount point at or below ROOTS, deepest first; returns what was unmounted."""
    prefixes = [str(root.resolve()) for root in roots]
    found = sorted(
        {m for m in _mounts() if any(m == p or m.startswith(p + "/") for p in prefixes)}, key=len, reverse=True
    )
    for mount in found:
        _run("umount", "-l", mount, check=False)
    return found


def kill_shims(socket: Path) -> None:
    """SIGKILL the containerd shims started for SOCKET (they outlive containerd by design)."""
    marker = str(socket)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"containerd-shim-runc-v2") and marker.encode() in argv:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(entry.name), signal.SIGKILL)


def _remove_cgroup(path: Path) -> None:
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()


def restore(before: dict[str, list[str]], deadline: float) -> list[str]:
    """Remove what appeared since BEFORE (a :func:`snapshot`); returns what could not be removed."""
    appeared = set(snapshot()["netns"]) - set(before.get("netns", []))
    for name in sorted(n for n in appeared if n.startswith(_NETNS_PREFIX)):
        _run("umount", "-l", str(_NETNS / name), check=False)
        with contextlib.suppress(OSError):
            (_NETNS / name).unlink()
    left: list[str] = []
    for cgroup in sorted(set(_cgroup_dirs()) - set(before.get("cgroups", []))):
        while True:  # a cgroup is busy until the processes killed in it are gone
            _remove_cgroup(Path(cgroup))
            if not os.path.exists(cgroup) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if os.path.exists(cgroup):
            left.append(cgroup)
    for path in HOST_PATHS:
        if path in before.get("paths", []) or not os.path.lexists(path):
            continue
        if Path(path) == _NETNS:  # others' namespaces may have appeared there meanwhile: only if empty
            with contextlib.suppress(OSError):
                os.rmdir(path)
            if os.path.lexists(path) and any(n.startswith(_NETNS_PREFIX) for n in os.listdir(path)):
                left.append(path)
            continue
        unmount_under(Path(path))
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):
            left.append(path)
    return left
