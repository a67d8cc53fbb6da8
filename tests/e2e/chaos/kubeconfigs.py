"""Read the sandbox kubeconfig (inline base64 certificates) into files an ``ssl`` context can load, and
write a copy that points at another server (the fault proxy)."""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Credentials:
    server: str
    ca: Path
    cert: Path
    key: Path

    @property
    def host_port(self) -> tuple[str, int]:
        rest = self.server.split("://", 1)[1].rstrip("/")
        host, port = rest.rsplit(":", 1)
        return host, int(port)

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


def _first(config: dict[str, Any], kind: str) -> dict[str, Any]:
    entries: list[dict[str, Any]] = config.get(kind) or []
    return entries[0]


def credentials(kubeconfig: Path, directory: Path) -> Credentials:
    """The first cluster and user of KUBECONFIG, with their PEM data written under DIRECTORY."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    cluster = _first(config, "clusters")["cluster"]
    user = _first(config, "users")["user"]
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, value in (
        ("ca.crt", cluster.get("certificate-authority-data")),
        ("client.crt", user.get("client-certificate-data")),
        ("client.key", user.get("client-key-data")),
    ):
        path = directory / name
        path.write_bytes(base64.b64decode(value))
        path.chmod(0o600)
        paths[name] = path
    return Credentials(
        server=str(cluster["server"]), ca=paths["ca.crt"], cert=paths["client.crt"], key=paths["client.key"]
    )


def redirected(kubeconfig: Path, server: str, target: Path) -> Path:
    """Write a copy of KUBECONFIG whose clusters all point at SERVER."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    for entry in config.get("clusters") or []:
        entry["cluster"]["server"] = server
    target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    target.chmod(0o600)
    return target
