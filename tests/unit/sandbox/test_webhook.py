"""The e2e webhook helpers: a serving certificate the CA verifies, and a scoped, fail-closed configuration."""

from __future__ import annotations

import base64
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from sundial_sandbox.webhook import issue_serving_certificate, validating_webhook_configuration


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_serving_certificate_is_signed_by_its_ca_for_127_0_0_1(tmp_path: Path) -> None:
    tls = issue_serving_certificate(tmp_path / "tls", ips=("127.0.0.1",), dns_names=("localhost",))
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(tls.ca_cert), str(tls.cert)], capture_output=True, text=True, check=False
    )
    assert verify.returncode == 0, verify.stderr
    sans = subprocess.run(
        ["openssl", "x509", "-in", str(tls.cert), "-noout", "-ext", "subjectAltName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in sans and "DNS:localhost" in sans
    ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH).load_cert_chain(tls.cert, tls.key)
    assert base64.b64decode(tls.ca_bundle()) == tls.ca_cert.read_bytes()
    assert (tmp_path / "tls").stat().st_mode & 0o077 == 0


def test_configuration_is_scoped_fail_closed_and_for_create_update_only() -> None:
    manifest = validating_webhook_configuration(
        "sundial",
        url="https://127.0.0.1:9443/validate-scheduledjob",
        ca_bundle="Q0E=",
        namespace_selector={"matchLabels": {"k": "v"}},
    )
    assert manifest["apiVersion"] == "admissionregistration.k8s.io/v1"
    webhook, calendars = manifest["webhooks"]
    assert webhook["clientConfig"] == {"url": "https://127.0.0.1:9443/validate-scheduledjob", "caBundle": "Q0E="}
    assert calendars["clientConfig"] == {"url": "https://127.0.0.1:9443/validate-schedulecalendar", "caBundle": "Q0E="}
    assert calendars["rules"][0]["resources"] == ["schedulecalendars"]
    assert calendars["namespaceSelector"] == webhook["namespaceSelector"]
    assert webhook["failurePolicy"] == "Fail"
    assert webhook["sideEffects"] == "None"
    assert webhook["admissionReviewVersions"] == ["v1"]
    assert webhook["namespaceSelector"] == {"matchLabels": {"k": "v"}}
    assert "objectSelector" not in webhook
    [rule] = webhook["rules"]
    assert rule["resources"] == ["scheduledjobs"] and rule["apiGroups"] == ["sundial.dev"]
    assert rule["operations"] == ["CREATE", "UPDATE"]


def test_the_paths_are_the_operators_handler_paths() -> None:
    from sundial.runtime.serving import admission  # noqa: PLC0415
    from sundial_sandbox.webhook import WEBHOOK_PATHS  # noqa: PLC0415

    assert WEBHOOK_PATHS == {
        "scheduledjobs": admission.WEBHOOK_PATH,
        "schedulecalendars": admission.CALENDAR_WEBHOOK_PATH,
    }
