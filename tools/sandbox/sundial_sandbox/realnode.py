"""One real node beside kwok's: containerd + runc + the bridge CNI plugin + a kubelet, under one directory.

Pods run for real on it (Debian's containerd 1.6 and runc, a kubelet built from the control plane's own
``k8s.io/kubernetes`` module). Images are imported from local OCI archives, never pulled. The node carries
the label and the ``NoSchedule`` taint :data:`~sundial_sandbox.nodeconfig.REAL_NODE_LABEL`: a pod meant for
it selects the label and tolerates the taint. Stopping it kills every container, unmounts what it mounted,
deletes the bridge and removes the host paths it created (:mod:`sundial_sandbox.hostpaths`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sundial_sandbox.api import ApiClient, ApiError
from sundial_sandbox.binaries import ensure_node_binaries, ensure_node_images
from sundial_sandbox.certs import Pki, create_client_cert
from sundial_sandbox.hostpaths import create_bridge, delete_bridge, kill_shims, restore, snapshot, unmount_under
from sundial_sandbox.kubeconfig import write_kubeconfig
from sundial_sandbox.nodeconfig import (
    BRIDGE,
    KUBERNETES_SERVICE_IP,
    NODE_IP,
    REAL_NODE_LABEL,
    SERVICE_CIDR,
    SUBNET,
    NodePaths,
    cni_config,
    containerd_config,
    kubelet_config,
    write_registry_hosts,
)
from sundial_sandbox.processes import ProcessRecord, ProcessTable, tail

#: The real node's name, and the process names it records in the sandbox's process table.
REAL_NODE_NAME = "sandbox-real-node"
NODE_COMPONENTS = ("service-proxy", "containerd", "kubelet")
_CTR = "ctr"


class RealNodeError(RuntimeError):
    """The real node could not be started."""


class RealNode:
    """The real node of the sandbox in DIRECTORY (its files in ``DIRECTORY/node``)."""

    def __init__(self, directory: Path, pki: Pki, processes: ProcessTable, name: str = REAL_NODE_NAME) -> None:
        self.paths = NodePaths(directory / "node")
        self.pki = pki
        self.processes = processes
        self.name = name

    # -- public API --------------------------------------------------------------------------------

    def state(self) -> dict[str, Any] | None:
        try:
            state: dict[str, Any] = json.loads(self.paths.state.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return state

    @property
    def images(self) -> dict[str, str]:
        """``{"pause": name, "shell": name}`` of the images imported into the node's containerd."""
        state = self.state() or {}
        return dict(state.get("images", {}))

    def running(self) -> bool:
        records = [self.processes.record(name) for name in NODE_COMPONENTS]
        return self.state() is not None and all(r is not None and self.processes.alive(r) for r in records)

    def start(self, client: ApiClient, server: str, deadline: float) -> None:
        """Start containerd and the kubelet; return once the node is Ready (the caller stops it on failure)."""
        bin_dir = ensure_node_binaries()
        archives = ensure_node_images(bin_dir / "pause")
        pause, shell = list(archives)
        p = self.paths
        if p.directory.exists():
            shutil.rmtree(p.directory)
        for directory in (p.containerd_root, p.containerd_state, p.cni_conf_dir, p.cni_ipam_dir, p.kubelet_root):
            directory.mkdir(parents=True)
        state = {"before": snapshot(), "images": {"pause": pause, "shell": shell}, "name": self.name}
        p.state.write_text(json.dumps(state, indent=2), encoding="utf-8")
        prefix = int(SUBNET.split("/")[1])
        create_bridge(
            BRIDGE,
            NODE_IP,
            prefix,
            service_cidr=SERVICE_CIDR,
            service_ip=KUBERNETES_SERVICE_IP,
            owner_marker=f"--node-labels={REAL_NODE_LABEL}=",
        )
        # The bridge is the machine's one-real-node lock: only its creator may undo host state (a start that
        # found another node's bridge must leave that node's bridge, netns and cgroups alone).
        state["owns_host"] = True
        p.state.write_text(json.dumps(state, indent=2), encoding="utf-8")
        api = server.rsplit(":", 1)[1]
        proxy = [
            sys.executable,
            "-m",
            "sundial_sandbox.serviceproxy",
            f"{KUBERNETES_SERVICE_IP}:443",
            f"127.0.0.1:{api}",
        ]
        relay = self.processes.start("service-proxy", proxy, env=_python_env())
        self._credentials(client, server)
        p.containerd_config.write_text(containerd_config(p, pause), encoding="utf-8")
        write_registry_hosts(p)
        (p.cni_conf_dir / "10-sundial-sandbox.conflist").write_text(cni_config(p), encoding="utf-8")

        containerd = self.processes.start("containerd", ["containerd", f"--config={p.containerd_config}"])
        self._wait("containerd answering", lambda: self._ctr("version", check=False).returncode == 0, deadline)
        for archive in archives.values():
            self.import_image(archive)
        port, healthz = _two_free_ports()
        p.kubelet_config.write_text(kubelet_config(p, self.pki.ca_cert, port, healthz, self.name), encoding="utf-8")
        kubelet = self.processes.start(
            "kubelet",
            [
                str(bin_dir / "kubelet"),
                f"--config={p.kubelet_config}",
                f"--kubeconfig={p.kubelet_kubeconfig}",
                f"--root-dir={p.kubelet_root}",
                f"--hostname-override={self.name}",
                f"--node-ip={NODE_IP}",
                f"--node-labels={REAL_NODE_LABEL}=true",
                "--v=1",
            ],
        )
        started = [relay, containerd, kubelet]
        self._wait(f"node {self.name} Ready", lambda: _node_ready(client, self.name), deadline, started)

    def import_image(self, archive: Path) -> list[str]:
        """Import an OCI archive into the node's containerd, each image also under ``<repository>@<digest>``
        (how a chart names an image by digest); returns the references now present."""
        self._ctr("images", "import", str(archive))
        references = []
        for line in self._ctr("images", "list").stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 3 or fields[0].startswith("sha256:") or "@" in fields[0]:
                continue
            name, digest = fields[0], fields[2]
            by_digest = f"{name.rsplit(':', 1)[0]}@{digest}"
            self._ctr("images", "tag", "--force", name, by_digest, check=False)
            references += [name, by_digest]
        return references

    def stop(self, timeout: float = 30.0) -> list[str]:
        """Stop the kubelet, every container and containerd; undo mounts, the bridge and host paths.
        Returns what could not be removed (empty when the machine is as before the start)."""
        state = self.state()
        if state is None:
            return []
        deadline = time.monotonic() + timeout
        self.processes.stop("kubelet")
        containerd = self.processes.record("containerd")
        if containerd is not None and self.processes.alive(containerd):
            self._kill_containers()
        self.processes.stop("containerd")
        kill_shims(self.paths.socket)
        unmount_under(self.paths.directory)
        self.processes.stop("service-proxy")
        left = []
        if state.get("owns_host"):
            delete_bridge(BRIDGE, service_cidr=SERVICE_CIDR)
            left = restore(state.get("before", {}), deadline)
        self.paths.state.unlink(missing_ok=True)
        return left

    # -- internals ---------------------------------------------------------------------------------

    def _credentials(self, client: ApiClient, server: str) -> None:
        """A client certificate for ``system:node:<name>`` and the ``system:node`` role bound to it."""
        subject = f"/O=system:nodes/CN=system:node:{self.name}"
        cert, key = create_client_cert(self.pki, "kubelet", subject)
        write_kubeconfig(
            self.paths.kubelet_kubeconfig, server, self.pki.ca_cert, cert, key, user=f"system:node:{self.name}"
        )
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"sundial-sandbox:{self.name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"system:node:{self.name}"}],
        }
        try:
            client.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
        except ApiError as error:
            if error.status != 409:
                raise

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [_CTR, f"--address={self.paths.socket}", "--namespace=k8s.io", *args]
        result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
        if check and result.returncode != 0:
            raise RealNodeError(f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def _kill_containers(self) -> None:
        containers = self._ctr("containers", "list", "--quiet", check=False).stdout.split()
        for container in containers:
            self._ctr("tasks", "kill", "--signal=SIGKILL", container, check=False)
        for container in containers:
            self._ctr("tasks", "delete", "--force", container, check=False)
            self._ctr("containers", "delete", container, check=False)

    def _wait(
        self, what: str, predicate: Callable[[], bool], deadline: float, started: Sequence[ProcessRecord] = ()
    ) -> None:
        while not predicate():
            for record in started:
                if not self.processes.alive(record):
                    raise RealNodeError(f"{record.name} exited while waiting for {what}:\n{tail(record.log)}")
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {r.name}:\n{tail(r.log, 15)}" for r in started)
                raise RealNodeError(f"timed out waiting for {what}\n{logs}")
            time.sleep(0.2)


def _node_ready(client: ApiClient, name: str) -> bool:
    try:
        node = client.get_json(f"/api/v1/nodes/{name}")
    except (ApiError, OSError):
        return False
    conditions = (node or {}).get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _python_env() -> dict[str, str]:
    """This environment, with this package importable by ``python -m`` (an editable install or PYTHONPATH)."""
    package_root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    return env


def _two_free_ports() -> tuple[int, int]:
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        return a.getsockname()[1], b.getsockname()[1]
