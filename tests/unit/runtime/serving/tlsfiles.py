"""Serving certificates for the webhook's unit tests: a CA and a certificate for 127.0.0.1 written as files."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from sundial.runtime.serving import certificates, certrotators

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
NAMES = certificates.SubjectNames(ips=("127.0.0.1",))


@dataclasses.dataclass(frozen=True)
class Issued:
    certfile: Path
    keyfile: Path
    material: certificates.Material

    @property
    def cadata(self) -> str:
        """The CA bundle a client trusts (PEM)."""
        return self.material.bundle_pem().decode()


def material(now: datetime = NOW) -> certificates.Material:
    """A fresh CA and a serving certificate for 127.0.0.1 it signed, valid at NOW."""
    decision = certificates.RotationDecision(certificates.Action.CREATE, "test")
    return certificates.renew(None, decision, now=now, names=NAMES, lifetimes=certificates.Lifetimes())


def issued(directory: Path, name: str = "tls") -> Issued:
    """Write a fresh :func:`material` to DIRECTORY/NAME.crt and .key, valid now by the real clock: OpenSSL
    checks a handshake's certificate against that one, not an injected one."""
    made = material(datetime.now(UTC))
    certfile, keyfile = directory / f"{name}.crt", directory / f"{name}.key"
    certrotators.write_private(certfile, made.cert_pem())
    certrotators.write_private(keyfile, made.key_pem())
    return Issued(certfile, keyfile, made)
