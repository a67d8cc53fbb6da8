"""Kubeconfig files with embedded certificates (the admin's, the real node's kubelet's)."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def write_kubeconfig(path: Path, server: str, ca_cert: Path, client_cert: Path, client_key: Path, *, user: str) -> None:
    """Write (atomically, mode 0600) a kubeconfig for SERVER authenticating with the client certificate."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sundial-sandbox", "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)}}
        ],
        "users": [
            {
                "name": user,
                "user": {"client-certificate-data": _b64(client_cert), "client-key-data": _b64(client_key)},
            }
        ],
        "contexts": [{"name": "sundial-sandbox", "context": {"cluster": "sundial-sandbox", "user": user}}],
        "current-context": "sundial-sandbox",
        "preferences": {},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(path)
