"""The webhook's own serving certificate (when cert-manager does not issue one): its pure parts.

What is kept in the Secret (type Opaque, every value base64 as in any Secret):

* ``tls.crt`` / ``tls.key``: the serving certificate (PEM) and its private key (PEM, PKCS#8);
* ``ca.crt``: the CA bundle the API server must trust (``clientConfig.caBundle``): the current CA first, then
  the previous CA while it is still valid, so that replicas still serving a certificate of the previous CA
  stay trusted until they have reloaded;
* ``ca.key``: the current CA's private key, which signs the next serving certificates.

Every decision here is a function of the stored material and ``now`` (:func:`plan`, :func:`renewal_time`,
:func:`next_check`); generating keys is the only thing that is not repeatable. A certificate is renewed
once two thirds of its lifetime have passed (cert-manager's default), so a renewal that fails is retried
for a third of the lifetime before anything expires. Keys are ECDSA P-256.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import ipaddress
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from enum import StrEnum

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TLS_CERT = "tls.crt"
TLS_KEY = "tls.key"
CA_BUNDLE = "ca.crt"
CA_KEY = "ca.key"
KEYS = (TLS_CERT, TLS_KEY, CA_BUNDLE, CA_KEY)
"""The Secret's data keys."""

RENEW_AT = 2 / 3
"""Fraction of a certificate's lifetime after which it is renewed."""

BACKDATE = timedelta(hours=1)
"""``notBefore`` lies this far in the past: API servers whose clock is a little behind accept it too."""

CA_COMMON_NAME = "sundial-webhook-ca"


class Action(StrEnum):
    """What :func:`plan` decides for the stored material."""

    KEEP = "keep"
    """Everything is valid and not yet due: serve it."""
    ISSUE = "issue"
    """The CA is fine; a new serving certificate signed by it is needed."""
    ROTATE_CA = "rotate-ca"
    """The CA is due: a new CA (the previous one stays in the bundle) and a new serving certificate."""
    CREATE = "create"
    """Nothing usable is stored: a new CA and a new serving certificate."""


@dataclasses.dataclass(frozen=True)
class RotationDecision:
    action: Action
    reason: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Lifetimes:
    """How long generated certificates are valid."""

    ca: timedelta = timedelta(days=3650)
    serving: timedelta = timedelta(days=365)

    def __post_init__(self) -> None:
        if self.serving <= BACKDATE or self.ca <= BACKDATE:
            raise ValueError(f"certificate lifetimes must be longer than {BACKDATE}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class SubjectNames:
    """The names the API server may use to reach the webhook (the serving certificate's SANs)."""

    dns: tuple[str, ...] = ()
    ips: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.dns and not self.ips:
            raise ValueError("the serving certificate needs at least one DNS name or IP address")

    @classmethod
    def for_host(cls, host: str) -> SubjectNames:
        """An IP address as it is; a Service name ``svc.ns.svc`` also as ``svc``, ``svc.ns`` and
        ``svc.ns.svc.cluster.local`` (every name a client in the cluster may use); any other name as it is."""
        host = host.strip().rstrip(".")
        if not host:
            raise ValueError("--webhook-host must name the host the API server connects to")
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return cls(ips=(host,))
        parts = host.split(".")
        if len(parts) == 3 and parts[2] == "svc":
            service, namespace = parts[0], parts[1]
            return cls(dns=(service, f"{service}.{namespace}", host, f"{host}.cluster.local"))
        return cls(dns=(host,))

    def general_names(self) -> list[x509.GeneralName]:
        names: list[x509.GeneralName] = [x509.DNSName(name) for name in self.dns]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in self.ips]
        return names


@dataclasses.dataclass(frozen=True)
class Material:
    """The parsed contents of the Secret."""

    cas: tuple[x509.Certificate, ...]
    """The CA bundle, current CA first."""
    ca_key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def ca(self) -> x509.Certificate:
        return self.cas[0]

    def bundle_pem(self) -> bytes:
        return b"".join(ca.public_bytes(serialization.Encoding.PEM) for ca in self.cas)

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return _key_pem(self.key)

    def secret_data(self) -> dict[str, str]:
        """The Secret's ``data`` (base64 values)."""
        raw = {
            TLS_CERT: self.cert_pem(),
            TLS_KEY: self.key_pem(),
            CA_BUNDLE: self.bundle_pem(),
            CA_KEY: _key_pem(self.ca_key),
        }
        return {key: base64.b64encode(value).decode("ascii") for key, value in raw.items()}


class InvalidMaterialError(ValueError):
    """The Secret holds something that is not a complete, parsable set (the message says what)."""


def parse(data: Mapping[str, str] | None) -> Material:
    """The Material of a Secret's ``data``; :class:`InvalidMaterialError` naming the first bad key."""
    data = data or {}
    missing = [key for key in KEYS if not data.get(key)]
    if missing:
        raise InvalidMaterialError(f"no {', '.join(missing)} in the Secret")
    raw: dict[str, bytes] = {}
    for key in KEYS:
        try:
            raw[key] = base64.b64decode(data[key], validate=True)
        except (binascii.Error, ValueError):
            raise InvalidMaterialError(f"{key} is not base64") from None
    try:
        cas = tuple(x509.load_pem_x509_certificates(raw[CA_BUNDLE]))
    except ValueError:
        raise InvalidMaterialError(f"{CA_BUNDLE} is not a PEM certificate bundle") from None
    try:
        cert = x509.load_pem_x509_certificate(raw[TLS_CERT])
    except ValueError:
        raise InvalidMaterialError(f"{TLS_CERT} is not a PEM certificate") from None
    return Material(cas=cas, ca_key=_load_key(raw[CA_KEY], CA_KEY), cert=cert, key=_load_key(raw[TLS_KEY], TLS_KEY))


def _load_key(pem: bytes, key: str) -> ec.EllipticCurvePrivateKey:
    try:
        loaded = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise InvalidMaterialError(f"{key} is not an unencrypted PEM private key") from None
    if not isinstance(loaded, ec.EllipticCurvePrivateKey):
        raise InvalidMaterialError(f"{key} is not an ECDSA key")
    return loaded


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


# Decisions ------------------------------------------------------------------------------------------------


def renewal_time(cert: x509.Certificate) -> datetime:
    """When CERT is due for renewal: after :data:`RENEW_AT` of its lifetime."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start + (end - start) * RENEW_AT


def is_due(cert: x509.Certificate, *, now: datetime) -> bool:
    return now >= renewal_time(cert) or now < cert.not_valid_before_utc


def _public_bytes(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _names_of(cert: x509.Certificate) -> SubjectNames | None:
    try:
        extension = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    dns = tuple(extension.get_values_for_type(x509.DNSName))
    ips = tuple(str(ip) for ip in extension.get_values_for_type(x509.IPAddress))
    if not dns and not ips:
        return None
    return SubjectNames(dns=dns, ips=ips)


def _signed_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def plan(material: Material | None, *, now: datetime, names: SubjectNames) -> RotationDecision:
    """What to do with the stored MATERIAL at NOW so that the webhook serves a valid certificate for NAMES."""
    if material is None:
        return RotationDecision(Action.CREATE, "no certificate is stored")
    ca = material.ca
    if _public_bytes(ca.public_key()) != _public_bytes(material.ca_key.public_key()):  # type: ignore[arg-type]
        return RotationDecision(Action.CREATE, "ca.key does not belong to the first CA of ca.crt")
    if is_due(ca, now=now):
        return RotationDecision(Action.ROTATE_CA, f"the CA is due for renewal since {renewal_time(ca).isoformat()}")
    cert = material.cert
    if not _signed_by(cert, ca):
        return RotationDecision(Action.ISSUE, "tls.crt is not signed by the current CA")
    if _public_bytes(cert.public_key()) != _public_bytes(material.key.public_key()):  # type: ignore[arg-type]
        return RotationDecision(Action.ISSUE, "tls.key does not belong to tls.crt")
    have = _names_of(cert)
    if have is None or not (set(names.dns) <= set(have.dns) and set(names.ips) <= set(have.ips)):
        return RotationDecision(Action.ISSUE, f"tls.crt is not for {', '.join(names.dns + names.ips)}")
    if is_due(cert, now=now):
        return RotationDecision(Action.ISSUE, f"tls.crt is due for renewal since {renewal_time(cert).isoformat()}")
    return RotationDecision(Action.KEEP, f"valid until {cert.not_valid_after_utc.isoformat()}")


def next_check(material: Material, *, now: datetime, resync: timedelta) -> datetime:
    """When to look again: the first renewal due, and at least every RESYNC (another replica may have
    rotated, or the webhook configuration's caBundle been reset)."""
    due = min(renewal_time(material.cert), renewal_time(material.ca))
    return max(now, min(due, now + resync))


# Generation -----------------------------------------------------------------------------------------------


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def new_authority(*, now: datetime, lifetime: timedelta) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA certificate valid from NOW - BACKDATE for LIFETIME, and its key."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now - BACKDATE + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def new_serving_certificate(
    *,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    names: SubjectNames,
    now: datetime,
    lifetime: timedelta,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A serving certificate for NAMES signed by CA, valid for LIFETIME but never beyond the CA."""
    key = _new_key()
    common_name = (names.dns or names.ips)[0]
    not_after = min(now - BACKDATE + lifetime, ca.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names.general_names()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def renew(
    material: Material | None,
    decision: RotationDecision,
    *,
    now: datetime,
    names: SubjectNames,
    lifetimes: Lifetimes,
) -> Material:
    """The material after DECISION (which must not be KEEP): a new serving certificate, and a new CA for
    ROTATE_CA/CREATE. After ROTATE_CA the previous CA stays in the bundle while it is valid."""
    if decision.action is Action.KEEP:
        raise ValueError("nothing to renew")
    cas: Sequence[x509.Certificate]
    if material is not None and decision.action is Action.ISSUE:
        cas, ca_key = material.cas, material.ca_key
    else:
        ca, ca_key = new_authority(now=now, lifetime=lifetimes.ca)
        previous = [material.ca] if material is not None and decision.action is Action.ROTATE_CA else []
        cas = [ca, *(old for old in previous if old.not_valid_after_utc > now)]
    cert, key = new_serving_certificate(ca=cas[0], ca_key=ca_key, names=names, now=now, lifetime=lifetimes.serving)
    current = tuple(c for c in cas if c.not_valid_after_utc > now)
    return Material(cas=current or (cas[0],), ca_key=ca_key, cert=cert, key=key)
