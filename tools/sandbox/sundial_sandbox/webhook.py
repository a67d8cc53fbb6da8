"""An admission webhook served from this machine to a sandbox (or any) API server: TLS files and the
ValidatingWebhookConfiguration that points the API server at ``https://127.0.0.1:<port>/<path>``.

The operator's webhook (``sundial run --webhook-port …``) needs a serving certificate the API server trusts;
:func:`issue_serving_certificate` makes a fresh CA and a certificate for 127.0.0.1/localhost signed by it
(the ``openssl`` command line, as for the sandbox itself). :func:`validating_webhook_configuration` builds
the configuration with that CA as ``caBundle``; scope it with a namespace selector so that it never refuses
objects elsewhere while the operator is down (its ``failurePolicy`` is ``Fail``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sundial_sandbox.certs import _openssl


@dataclass(frozen=True)
class ServingCertificate:
    """PEM files written by :func:`issue_serving_certificate`."""

    ca_cert: Path
    cert: Path
    key: Path

    def ca_bundle(self) -> str:
        """The CA as a ``clientConfig.caBundle`` value (base64 of the PEM)."""
        return base64.b64encode(self.ca_cert.read_bytes()).decode("ascii")


def issue_serving_certificate(
    directory: Path,
    *,
    ips: Sequence[str] = ("127.0.0.1",),
    dns_names: Sequence[str] = ("localhost",),
    days: int = 2,
) -> ServingCertificate:
    """A new CA (``ca.crt``) and a serving certificate (``tls.crt``/``tls.key``) for IPS and DNS_NAMES."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    files = ServingCertificate(ca_cert=directory / "ca.crt", cert=directory / "tls.crt", key=directory / "tls.key")
    ca_key, csr, ext = directory / "ca.key", directory / "tls.csr", directory / "tls.ext"
    sans = ", ".join([*(f"IP:{ip}" for ip in ips), *(f"DNS:{name}" for name in dns_names)])
    ext.write_text(
        "basicConstraints = critical, CA:FALSE\n"
        "keyUsage = critical, digitalSignature, keyEncipherment\n"
        "extendedKeyUsage = serverAuth\n"
        f"subjectAltName = {sans}\n",
        encoding="utf-8",
    )
    _openssl("genrsa", "-out", ca_key, "2048")
    _openssl(
        "req", "-x509", "-new", "-key", ca_key, "-sha256", "-days", str(days),
        "-subj", "/CN=sundial-webhook-ca", "-out", files.ca_cert,
    )  # fmt: skip
    _openssl("genrsa", "-out", files.key, "2048")
    _openssl("req", "-new", "-key", files.key, "-subj", f"/CN={(dns_names or ips)[0]}", "-out", csr)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", files.ca_cert, "-CAkey", ca_key, "-CAcreateserial",
        "-sha256", "-days", str(days), "-extfile", ext, "-out", files.cert,
    )  # fmt: skip
    csr.unlink(missing_ok=True)
    return files


#: The operator's webhook paths by resource (its own webhook server; see
#: ``sundial.runtime.serving.admission``): the sandbox imports nothing from Sundial, a unit test compares them.
WEBHOOK_PATHS = {"scheduledjobs": "/validate-scheduledjob", "schedulecalendars": "/validate-schedulecalendar"}


def validating_webhook_configuration(
    name: str,
    *,
    url: str,
    ca_bundle: str,
    namespace_selector: Mapping[str, Any] | None = None,
    object_selector: Mapping[str, Any] | None = None,
    timeout_seconds: int = 10,
) -> dict[str, Any]:
    """A ``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration for ScheduledJob and
    ScheduleCalendar CREATE/UPDATE: one webhook per resource, each at its handler's path.

    URL is the full ScheduledJob webhook URL including the handler path
    (``https://127.0.0.1:9443/validate-scheduledjob``); the ScheduleCalendar webhook is at the sibling path.
    """
    base = url.rsplit("/", 1)[0]
    webhooks: list[dict[str, Any]] = []
    for resource, path in WEBHOOK_PATHS.items():
        webhook: dict[str, Any] = {
            "name": f"validate.{resource}.sundial.dev",
            "clientConfig": {"url": url if resource == "scheduledjobs" else base + path, "caBundle": ca_bundle},
            "rules": [
                {
                    "apiGroups": ["sundial.dev"],
                    "apiVersions": ["v1alpha1"],
                    "resources": [resource],
                    "operations": ["CREATE", "UPDATE"],
                    "scope": "Namespaced",
                }
            ],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": timeout_seconds,
        }
        if namespace_selector is not None:
            webhook["namespaceSelector"] = dict(namespace_selector)
        if object_selector is not None:
            webhook["objectSelector"] = dict(object_selector)
        webhooks.append(webhook)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "sundial"}},
        "webhooks": webhooks,
    }
