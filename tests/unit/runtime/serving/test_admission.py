"""The validating admission webhooks, answering AdmissionReviews on their pure path (no server, no cluster)."""

from __future__ import annotations

import argparse
import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from tests.unit.runtime.serving.admissionreviews import RefusedError, review, validate
from tests.unit.runtime.serving.tlsfiles import NOW, issued

from sundial.cli.commands import run as run_cmd
from sundial.runtime.serving import admission, webhookserver, webhooktls
from sundial.runtime.settings import WebhookSettings

REPO = Path(__file__).resolve().parents[4]
CORPUS = sorted((REPO / "tests" / "invalid").glob("*.yaml"))
SAMPLES = sorted(p for p in (REPO / "config" / "samples").glob("*.yaml") if p.name != "kustomization.yaml")
assert CORPUS, f"no invalid-input corpus under {REPO / 'tests' / 'invalid'}"
assert SAMPLES, f"no samples under {REPO / 'config' / 'samples'}"
HEADER = re.compile(r"^#\s*(?P<key>expect-field|refused-by):\s*(?P<value>\S+)\s*$", re.MULTILINE)


def _load(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text), {m["key"]: m["value"] for m in HEADER.finditer(text)}


def _valid() -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "ok", "namespace": "ns"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
                }
            },
        },
    }


def _webhook(body: dict[str, Any]) -> webhookserver.Webhook:
    """The webhook the API server would call for BODY's kind (one webhook per kind, one path each)."""
    if body.get("kind") == "ScheduleCalendar":
        return admission.schedule_calendars()
    return admission.scheduled_jobs()


def _refusal(body: dict[str, Any], **kwargs: Any) -> RefusedError:
    with pytest.raises(RefusedError) as caught:
        validate(_webhook(body), body, **kwargs)
    return caught.value


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
def test_valid_samples_are_admitted(path: Path) -> None:
    body, _ = _load(path)
    validate(_webhook(body), body)  # admitted: no RefusedError


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_every_corpus_file_is_refused_with_422_naming_the_field_and_object(path: Path) -> None:
    # The webhook also refuses what the CRD refuses (defence in depth): it runs the runtime's whole validation.
    body, headers = _load(path)
    error = _refusal(body, operation="CREATE")
    assert error.code == 422
    message = str(error)
    assert headers["expect-field"] in message, message
    assert f'{body["kind"]}.sundial.dev "{body["metadata"]["name"]}" is invalid: ' in message


def test_every_invalid_field_is_named() -> None:
    body = _valid()
    body["spec"].update(jitter="9999999h", retry={"maxAttempts": 0})
    message = str(_refusal(body, operation="CREATE"))
    assert "spec.jitter" in message
    assert "spec.retry.maxAttempts" in message


def test_generate_name_is_used_when_there_is_no_name() -> None:
    body = _valid()
    body["metadata"] = {"generateName": "nightly-"}
    body["spec"]["schedule"] = "61 * * * *"
    assert '"nightly-" is invalid: spec.schedule' in str(_refusal(body, operation="CREATE"))


def test_a_missing_spec_is_refused() -> None:
    body = _valid()
    del body["spec"]
    assert "spec" in str(_refusal(body, operation="CREATE"))


def test_update_that_changes_the_spec_to_an_invalid_one_is_refused() -> None:
    old = _valid()
    new = copy.deepcopy(old)
    new["spec"]["schedule"] = "0 0 30 2 *"
    assert "spec.schedule" in str(_refusal(new, old=old, operation="UPDATE"))


def test_update_that_keeps_a_stored_invalid_spec_is_admitted() -> None:
    # An object stored before the webhook existed must still take labels and lose finalizers.
    old = _valid()
    old["spec"]["schedule"] = "0 0 30 2 *"
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "x"}
    validate(admission.scheduled_jobs(), new, old=old, operation="UPDATE")  # admitted


def test_update_of_an_object_being_deleted_is_admitted() -> None:
    old = _valid()
    new = copy.deepcopy(old)
    new["spec"]["schedule"] = "nope"
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    validate(admission.scheduled_jobs(), new, old=old, operation="UPDATE")  # admitted


def test_old_is_ignored_for_create() -> None:
    body = _valid()
    body["spec"]["schedule"] = "nope"
    _refusal(body, old=copy.deepcopy(body), operation="CREATE")


def test_one_webhook_per_kind_at_its_own_path() -> None:
    jobs, calendars = admission.scheduled_jobs(), admission.schedule_calendars()
    assert (jobs.path, jobs.resource) == ("/validate-scheduledjob", "scheduledjobs")
    assert (calendars.path, calendars.resource) == ("/validate-schedulecalendar", "schedulecalendars")
    assert admission.OPERATIONS == ("CREATE", "UPDATE")


def test_a_review_of_another_resource_is_not_answered_as_admitted() -> None:
    sent = review(_valid(), resource="schedulecalendars")
    answer = webhookserver.answer_review(admission.scheduled_jobs(), json.dumps(sent).encode())
    assert answer.status == 400
    assert answer.body.decode() == (
        "request.resource.resource: /validate-scheduledjob validates scheduledjobs, not schedulecalendars"
    )


def _calendar(**spec: Any) -> dict[str, Any]:
    return {"kind": "ScheduleCalendar", "metadata": {"name": "holidays", "namespace": "ns"}, "spec": spec}


def test_a_calendar_update_that_keeps_a_stored_invalid_spec_or_is_being_deleted_is_admitted() -> None:
    stored = _calendar(exclude=[{"schedule": "61 * * * *"}])
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"team": "a"}
    validate(admission.schedule_calendars(), relabelled, old=stored, operation="UPDATE")
    edited = _calendar(exclude=[{"schedule": "62 * * * *"}])
    error = _refusal(edited, old=stored, operation="UPDATE")
    assert 'ScheduleCalendar.sundial.dev "holidays" is invalid: spec.exclude[0].schedule' in str(error)
    edited["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    validate(admission.schedule_calendars(), edited, old=stored, operation="UPDATE")


def _settings(**kwargs: Any) -> WebhookSettings:
    return WebhookSettings(**kwargs)


def test_no_server_when_the_webhook_is_off() -> None:
    assert admission.server(_settings(), now=NOW) is None


def test_the_server_serves_the_given_files_and_dumps_them_as_the_ca(tmp_path: Path) -> None:
    tls = issued(tmp_path)
    settings = _settings(port=9443, cert_file=tls.certfile, key_file=tls.keyfile, ca_dump=tmp_path / "ca.pem")
    context, reload = admission.serving_tls(settings, tls=None, now=NOW)
    assert reload is not None and reload() is False  # unchanged files: nothing reloaded
    assert (tmp_path / "ca.pem").read_bytes() == tls.certfile.read_bytes()
    assert context.sni_callback is not None


def test_without_files_a_self_signed_certificate_for_the_host_is_made_and_its_ca_dumped(tmp_path: Path) -> None:
    settings = _settings(port=9443, host="sundial-webhook.ns.svc", ca_dump=tmp_path / "ca.pem")
    made = webhooktls.self_signed(settings.host, now=NOW, ca_dump=settings.ca_dump)
    cert = x509.load_pem_x509_certificate(made.certfile.read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert "sundial-webhook.ns.svc" in names
    assert made.cadata == (tmp_path / "ca.pem").read_bytes()
    server = admission.server(settings, now=NOW)
    assert server is not None and server.port == 9443


def test_settings_need_the_certificate_and_key_together(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="go together"):
        _settings(port=9443, cert_file=tmp_path / "c")
    with pytest.raises(ValueError, match="65535"):
        _settings(port=70000)


def _run_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    return parser.parse_args(["run", "--identity", "me", *argv])


def test_sundial_run_has_the_webhook_off_by_default() -> None:
    settings = run_cmd.settings_from(_run_args(), environ={})
    assert settings.webhook.port == 0


def test_sundial_run_webhook_flags(tmp_path: Path) -> None:
    settings = run_cmd.settings_from(
        _run_args(
            "--webhook-port", "9443", "--webhook-addr", "127.0.0.1", "--webhook-host", "sundial-webhook.ns.svc",
            "--webhook-cert-file", str(tmp_path / "tls.crt"), "--webhook-key-file", str(tmp_path / "tls.key"),
            "--webhook-ca-dump", str(tmp_path / "ca.pem"),
        ),
        environ={},
    )  # fmt: skip
    assert settings.webhook.port == 9443
    assert (settings.webhook.addr, settings.webhook.host) == ("127.0.0.1", "sundial-webhook.ns.svc")
    assert (settings.webhook.cert_file, settings.webhook.key_file) == (tmp_path / "tls.crt", tmp_path / "tls.key")
    assert settings.webhook.ca_dump == tmp_path / "ca.pem"
