"""Real users for the tenancy tests: client certificates signed by the sandbox's CA (with ``openssl``, as the
sandbox makes its own), and kubeconfigs that authenticate with them.

The API server takes the certificate's CN as the user name and each O as a group. The CA's key is the
sandbox's, next to its kubeconfig (``<sandbox>/pki/ca.key``); an external cluster has none there, so these
tests skip on one.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

_CLIENT_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
"""


def _ca(cluster: Cluster) -> tuple[Path, Path]:
    pki = cluster.kubeconfig.parent / "pki"
    cert, key = pki / "ca.crt", pki / "ca.key"
    if not (cert.is_file() and key.is_file()):
        pytest.skip(f"no sandbox CA key at {key}: client certificates need the sandbox (not an external cluster)")
    return cert, key


def _openssl(*args: str | Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is required to make client certificates")
    result = subprocess.run([openssl, *map(str, args)], capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, f"openssl {' '.join(map(str, args))}: {result.stderr}"


def client_certificate(
    cluster: Cluster, *, user: str, groups: Sequence[str] = (), directory: Path, days: int = 1
) -> tuple[Path, Path]:
    """(certificate, key) of USER (CN) in GROUPS (O), signed by the sandbox CA."""
    ca_cert, ca_key = _ca(cluster)
    directory.mkdir(parents=True, exist_ok=True)
    key, csr, cert = directory / f"{user}.key", directory / f"{user}.csr", directory / f"{user}.crt"
    extensions = directory / f"{user}.ext"
    extensions.write_text(_CLIENT_EXTENSIONS, encoding="utf-8")
    subject = "".join(f"/O={group}" for group in groups) + f"/CN={user}"
    _openssl("genrsa", "-out", key, "2048")
    _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial",
        "-CAserial", directory / "ca.srl", "-sha256", "-days", str(days), "-extfile", extensions, "-out", cert,
    )  # fmt: skip
    csr.unlink(missing_ok=True)
    key.chmod(0o600)
    return cert, key


def user_kubeconfig(cluster: Cluster, *, user: str, groups: Sequence[str] = (), directory: Path) -> Path:
    """A kubeconfig for USER: the cluster's server and CA, a client certificate of USER's own."""
    cert, key = client_certificate(cluster, user=user, groups=groups, directory=directory)
    admin = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    (entry,) = admin["clusters"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sandbox", "cluster": entry["cluster"]}],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                    "client-key-data": base64.b64encode(key.read_bytes()).decode(),
                },
            }
        ],
        "contexts": [{"name": user, "context": {"cluster": "sandbox", "user": user}}],
        "current-context": user,
    }
    path = directory / f"{user}.kubeconfig"
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return path
