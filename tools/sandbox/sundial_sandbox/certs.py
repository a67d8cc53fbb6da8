"""Certificates and keys for a sandbox, made with the ``openssl`` command line tool."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


class CertificateError(RuntimeError):
    """openssl is missing or failed."""


@dataclass(frozen=True)
class Pki:
    """Paths of the files :func:`create_pki` writes."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def admin_cert(self) -> Path:
        """Serving certificate of every component and client certificate of the admin user."""
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def sa_key(self) -> Path:
        """Service-account token signing key (private)."""
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"

    def complete(self) -> bool:
        files = (self.ca_cert, self.ca_key, self.admin_cert, self.admin_key, self.sa_key, self.sa_pub)
        return all(path.is_file() for path in files)


_ADMIN_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:10.96.0.1, DNS:kubernetes, DNS:kubernetes.default, \
  DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
"""


def _openssl(*args: str | Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise CertificateError("the openssl command is required to create the sandbox certificates")
    result = subprocess.run([openssl, *map(str, args)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CertificateError(f"openssl {' '.join(map(str, args))} failed: {result.stderr.strip()}")


def create_pki(directory: Path, days: int = 365) -> Pki:
    """Write a CA, an admin certificate (CN admin, O system:masters) and a service-account key pair."""
    pki = Pki(directory)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    ext = directory / "admin.ext"
    ext.write_text(_ADMIN_EXTENSIONS, encoding="utf-8")
    csr = directory / "admin.csr"

    _openssl("genrsa", "-out", pki.ca_key, "2048")
    _openssl(
        "req", "-x509", "-new", "-key", pki.ca_key, "-sha256", "-days", str(days),
        "-subj", "/CN=sundial-sandbox-ca", "-out", pki.ca_cert,
    )  # fmt: skip
    _openssl("genrsa", "-out", pki.admin_key, "2048")
    _openssl("req", "-new", "-key", pki.admin_key, "-subj", "/O=system:masters/CN=admin", "-out", csr)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey", pki.ca_key, "-CAcreateserial",
        "-sha256", "-days", str(days), "-extfile", ext, "-out", pki.admin_cert,
    )  # fmt: skip
    _openssl("genrsa", "-out", pki.sa_key, "2048")
    _openssl("rsa", "-in", pki.sa_key, "-pubout", "-out", pki.sa_pub)
    csr.unlink(missing_ok=True)
    return pki


_CLIENT_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
"""


def create_client_cert(pki: Pki, name: str, subject: str, days: int = 365) -> tuple[Path, Path]:
    """A client certificate (SUBJECT like ``/O=system:nodes/CN=system:node:x``) signed by the sandbox CA;
    returns (certificate, key), written as ``NAME.crt`` and ``NAME.key`` next to the CA."""
    cert, key = pki.directory / f"{name}.crt", pki.directory / f"{name}.key"
    ext, csr = pki.directory / f"{name}.ext", pki.directory / f"{name}.csr"
    ext.write_text(_CLIENT_EXTENSIONS, encoding="utf-8")
    _openssl("genrsa", "-out", key, "2048")
    _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey", pki.ca_key, "-CAcreateserial",
        "-sha256", "-days", str(days), "-extfile", ext, "-out", cert,
    )  # fmt: skip
    csr.unlink(missing_ok=True)
    return cert, key
