"""The :class:`Sandbox`: a whole control plane under one directory."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

from sundial_sandbox.api import ApiClient, ApiError, probe_https
from sundial_sandbox.args import SERVICE_CLUSTER_IP_RANGE, Ports, admission_plugins_arg, apiserver_args, etcd_args
from sundial_sandbox.binaries import ensure_binaries
from sundial_sandbox.certs import Pki, create_pki
from sundial_sandbox.kubeconfig import write_kubeconfig
from sundial_sandbox.processes import ProcessRecord, ProcessTable, tail
from sundial_sandbox.realnode import RealNode
from sundial_sandbox.stages import ALL_STAGES, FAKE_NODE_ANNOTATION, FAKE_NODE_VALUE, fake_node

#: Process names, in start order.
COMPONENTS: tuple[str, ...] = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)


# Files and directories start() creates inside the sandbox directory (and clean-up removes).
_OWNED = ("pki", "etcd-data", "logs", "pids", "kwok-home", "kubeconfig", "stages.yaml", "state.json", "node")


class SandboxError(RuntimeError):
    """The sandbox could not be started."""


def _free_ports(count: int) -> list[int]:
    """COUNT distinct free loopback TCP ports (held open together so they differ)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class Sandbox:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok, rooted at DIRECTORY.

    ``start()`` returns the kubeconfig path once the API server is ready, the fake node is Ready
    and the ``default`` ServiceAccount exists. ``stop()`` ends exactly the processes recorded in
    DIRECTORY. Both are idempotent. Nothing outside DIRECTORY is written (binaries aside, which
    :func:`~sundial_sandbox.binaries.ensure_binaries` caches under ``~/.cache/sundial``).
    """

    def __init__(
        self,
        directory: Path,
        bin_dir: Path | None = None,
        node_name: str = "sandbox-node-0",
        real_node: bool = False,
        admission_plugins: Sequence[str] = (),
    ) -> None:
        self.directory = Path(directory).absolute()
        #: Admission plugins the API server enables besides its defaults (a running sandbox started without
        #: exactly these is not reused: :meth:`running`).
        self.admission_plugins = tuple(admission_plugins)
        self.bin_dir = bin_dir
        self.node_name = node_name
        self.real_node = real_node
        self._processes = ProcessTable(self.directory)
        self._pki = Pki(self.directory / "pki")
        #: The real node beside kwok's (docs/sandbox.md), started when ``real_node`` is true.
        self.node = RealNode(self.directory, self._pki, self._processes)

    # -- public API --------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def log_dir(self) -> Path:
        return self.directory / "logs"

    def ensure_binaries(self) -> Path:
        """The directory with the five binaries (building them on first use)."""
        if self.bin_dir is None:
            self.bin_dir = ensure_binaries()
        return self.bin_dir

    def running(self) -> bool:
        """True if every component recorded in the directory is alive and the API server is ready."""
        state = self._read_state()
        if state is None or not self._pki.complete() or not self.kubeconfig.is_file():
            return False
        records = {record.name: record for record in self._processes.records()}
        if any(name not in records or not self._processes.alive(records[name]) for name in COMPONENTS):
            return False
        enabled = [arg for arg in records["kube-apiserver"].argv if arg.startswith("--enable-admission-plugins=")]
        if enabled != admission_plugins_arg(self.admission_plugins):
            return False
        if self.real_node and not self.node.running():
            return False
        try:
            return self._client(int(state["ports"]["apiserver"])).healthy()
        except (KeyError, TypeError, ValueError, OSError):
            return False

    def start(self, timeout: float = 180.0) -> Path:
        """Start (or find already running) the control plane; return the kubeconfig path."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock():
            if self.running():
                return self.kubeconfig
            self.node.stop()
            self._processes.stop_all()
            self._clean()
            bin_dir = self.ensure_binaries()
            try:
                deadline = time.monotonic() + timeout
                ports = self._start(bin_dir, deadline)
                if self.real_node:  # its first start builds the kubelet (~90 s with a warm Go cache)
                    self._start_node(ports.apiserver, deadline + 300.0)
            except BaseException:
                self.node.stop()
                self._processes.stop_all()
                raise
            return self.kubeconfig

    def stop(self) -> None:
        """Stop every process recorded in the directory; keep logs and certificates for inspection."""
        if not self.directory.is_dir():
            return
        with self._lock():
            self.node.stop()
            self._processes.stop_all()
            (self.directory / "state.json").unlink(missing_ok=True)

    def start_real_node(self, timeout: float = 480.0) -> None:
        """Start the real node beside a running sandbox's kwok node (no-op if it runs); see :class:`RealNode`."""
        state = self._read_state()
        if state is None:
            raise SandboxError(f"no running sandbox in {self.directory}")
        with self._lock():
            self.real_node = True
            if self.node.running():
                return
            self.node.stop()
            try:
                self._start_node(int(state["ports"]["apiserver"]), time.monotonic() + timeout)
            except BaseException:
                self.node.stop()
                raise

    def stop_real_node(self) -> list[str]:
        """Stop the real node only (the control plane keeps running); returns what could not be cleaned up."""
        with self._lock():
            self.real_node = False
            return self.node.stop()

    def _start_node(self, port: int, deadline: float) -> None:
        self.node.start(self._client(port), f"https://127.0.0.1:{port}", deadline)

    def stop_component(self, name: str) -> None:
        """Stop one running component (e.g. ``kube-apiserver``, ``etcd``); its data directory is kept."""
        if name not in COMPONENTS:
            raise ValueError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
        with self._lock():
            if self._processes.stop(name) is None:
                raise SandboxError(f"{name} was not started in {self.directory}")

    def start_component(self, name: str, timeout: float = 60.0) -> None:
        """Start a component stopped by :meth:`stop_component` again, with the same arguments (and data);
        return once the API server answers ready again."""
        if name not in COMPONENTS:
            raise ValueError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
        state = self._read_state()
        if state is None:
            raise SandboxError(f"no running sandbox in {self.directory}")
        with self._lock():
            record = self._processes.record(name)
            if record is None:
                raise SandboxError(f"{name} was not started in {self.directory}")
            if not self._processes.alive(record):
                home = self.directory / "kwok-home" if name == "kwok" else None
                record = self._processes.start(name, record.argv, env=self._env(home))
            client = self._client(int(state["ports"]["apiserver"]))
            self._wait(f"kube-apiserver /readyz after starting {name}", client.healthy, time.monotonic() + timeout,
                       [record])  # fmt: skip

    def restart_component(self, name: str, down: float = 0.0, timeout: float = 60.0) -> None:
        """Stop one component, leave it down for DOWN seconds, start it again (same arguments and data)."""
        self.stop_component(name)
        if down > 0:
            time.sleep(down)
        self.start_component(name, timeout=timeout)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        with (self.directory / ".lock").open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read_state(self) -> dict[str, Any] | None:
        try:
            state: dict[str, Any] = json.loads((self.directory / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return state

    def _clean(self) -> None:
        for name in _OWNED:
            path = self.directory / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)

    def _client(self, port: int) -> ApiClient:
        return ApiClient(f"https://127.0.0.1:{port}", self._pki.ca_cert, self._pki.admin_cert, self._pki.admin_key)

    def _write_kubeconfig(self, port: int) -> None:
        pki = self._pki
        server = f"https://127.0.0.1:{port}"
        write_kubeconfig(
            self.kubeconfig, server, pki.ca_cert, pki.admin_cert, pki.admin_key, user="sundial-sandbox-admin"
        )

    def _env(self, home: Path | None = None) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != "KUBECONFIG"}
        if home is not None:
            env["HOME"] = str(home)
        return env

    def _start(self, bin_dir: Path, deadline: float) -> Ports:
        d = self.directory
        ports = Ports(*_free_ports(6))
        pki = create_pki(self._pki.directory)
        self._write_kubeconfig(ports.apiserver)
        kubeconfig = str(self.kubeconfig)
        stages = d / "stages.yaml"
        stages.write_text(ALL_STAGES, encoding="utf-8")
        (d / "etcd-data").mkdir(mode=0o700)
        kwok_home = d / "kwok-home"  # kwok also reads ~/.kwok/kwok.yaml; keep the user's out
        kwok_home.mkdir()
        started: list[ProcessRecord] = []

        def launch(name: str, *args: str, home: Path | None = None) -> None:
            started.append(self._processes.start(name, [str(bin_dir / name), *args], env=self._env(home)))

        launch("etcd", *etcd_args(d, ports))
        launch("kube-apiserver", *apiserver_args(ports, pki, admission_plugins=self.admission_plugins))
        client = self._client(ports.apiserver)
        self._wait("kube-apiserver /readyz", client.healthy, deadline, started)

        common = [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--profiling=false",
        ]
        launch(
            "kube-controller-manager",
            *common,
            f"--secure-port={ports.controller_manager}",
            "--controllers=*",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--root-ca-file={pki.ca_cert}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--use-service-account-credentials=false",
        )
        launch("kube-scheduler", *common, f"--secure-port={ports.scheduler}")
        launch(
            "kwok",
            f"--kubeconfig={kubeconfig}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={FAKE_NODE_ANNOTATION}={FAKE_NODE_VALUE}",
            "--node-ip=127.0.0.1",
            f"--node-port={ports.kwok}",
            f"--server-address=127.0.0.1:{ports.kwok}",
            home=kwok_home,
        )
        self._wait_for_the_rest(client, ports, deadline, started)
        state = {"ports": asdict(ports), "bin_dir": str(bin_dir), "node": self.node_name}
        (d / "state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")
        return ports

    def _wait_for_the_rest(
        self, client: ApiClient, ports: Ports, deadline: float, started: list[ProcessRecord]
    ) -> None:
        """The fake node Ready, the default ServiceAccount made, the controller manager and scheduler up."""
        client.create("/api/v1/nodes", fake_node(self.node_name))
        checks: list[tuple[str, Callable[[], bool]]] = [
            (f"node {self.node_name} Ready", lambda: self._node_ready(client)),
            (
                "ServiceAccount default/default",
                lambda: self._exists(client, "/api/v1/namespaces/default/serviceaccounts/default"),
            ),
            (
                "kube-controller-manager /healthz",
                lambda: probe_https(f"https://127.0.0.1:{ports.controller_manager}/healthz"),
            ),
            ("kube-scheduler /healthz", lambda: probe_https(f"https://127.0.0.1:{ports.scheduler}/healthz")),
        ]
        for what, check in checks:
            self._wait(what, check, deadline, started)

    @staticmethod
    def _exists(client: ApiClient, path: str) -> bool:
        try:
            return client.get_json(path) is not None
        except (ApiError, OSError):
            return False

    def _node_ready(self, client: ApiClient) -> bool:
        try:
            node = client.get_json(f"/api/v1/nodes/{self.node_name}")
        except (ApiError, OSError):
            return False
        conditions = (node or {}).get("status", {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def _wait(self, what: str, predicate: Callable[[], bool], deadline: float, started: list[ProcessRecord]) -> None:
        delay = 0.1
        while True:
            for record in started:
                if not self._processes.alive(record):
                    raise SandboxError(
                        f"{record.name} exited while waiting for {what}; last lines of {record.log}:\n"
                        + tail(record.log)
                    )
            if predicate():
                return
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {r.name} ({r.log}):\n{tail(r.log, 10)}" for r in started)
                raise SandboxError(f"timed out waiting for {what}\n{logs}")
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)
