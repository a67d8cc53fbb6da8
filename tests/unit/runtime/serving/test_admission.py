"""The validating admission webhook handler, called directly with body dicts (no server, no cluster)."""

from __future__ import annotations

import argparse
import copy
import re
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml

from sundial.cli.commands import run as run_cmd
from sundial.runtime.serving import admission
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


def _handler(body: dict[str, Any]) -> Any:
    """The handler the API server would call for BODY's kind (one webhook per kind, one path each)."""
    if body.get("kind") == "ScheduleCalendar":
        return admission.validate_schedule_calendar
    return admission.validate_scheduled_job


async def _refusal(body: dict[str, Any], **kwargs: Any) -> kopf.AdmissionError:
    with pytest.raises(kopf.AdmissionError) as caught:
        await _handler(body)(body=body, **kwargs)
    return caught.value


@pytest.mark.parametrize("path", SAMPLES, ids=[p.name for p in SAMPLES])
async def test_valid_samples_are_admitted(path: Path) -> None:
    body, _ = _load(path)
    await _handler(body)(body=body, operation="CREATE")  # admitted: no AdmissionError


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
async def test_every_corpus_file_is_refused_with_422_naming_the_field_and_object(path: Path) -> None:
    # The webhook also refuses what the CRD refuses (defence in depth): it runs the runtime's whole validation.
    body, headers = _load(path)
    error = await _refusal(body, operation="CREATE")
    assert error.code == 422
    message = str(error)
    assert headers["expect-field"] in message, message
    assert f'{body["kind"]}.sundial.dev "{body["metadata"]["name"]}" is invalid: ' in message


async def test_every_invalid_field_is_named() -> None:
    body = _valid()
    body["spec"].update(jitter="9999999h", retry={"maxAttempts": 0})
    message = str(await _refusal(body, operation="CREATE"))
    assert "spec.jitter" in message
    assert "spec.retry.maxAttempts" in message


async def test_generate_name_is_used_when_there_is_no_name() -> None:
    body = _valid()
    body["metadata"] = {"generateName": "nightly-"}
    body["spec"]["schedule"] = "61 * * * *"
    assert '"nightly-" is invalid: spec.schedule' in str(await _refusal(body, operation="CREATE"))


async def test_a_missing_spec_is_refused() -> None:
    body = _valid()
    del body["spec"]
    assert "spec" in str(await _refusal(body, operation="CREATE"))


async def test_update_that_changes_the_spec_to_an_invalid_one_is_refused() -> None:
    old = _valid()
    new = copy.deepcopy(old)
    new["spec"]["schedule"] = "0 0 30 2 *"
    assert "spec.schedule" in str(await _refusal(new, old=old, operation="UPDATE"))


async def test_update_that_keeps_a_stored_invalid_spec_is_admitted() -> None:
    # An object stored before the webhook existed must still take labels and lose finalizers.
    old = _valid()
    old["spec"]["schedule"] = "0 0 30 2 *"
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "x"}
    await admission.validate_scheduled_job(body=new, old=old, operation="UPDATE")  # admitted


async def test_update_of_an_object_being_deleted_is_admitted() -> None:
    old = _valid()
    new = copy.deepcopy(old)
    new["spec"]["schedule"] = "nope"
    new["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    await admission.validate_scheduled_job(body=new, old=old, operation="UPDATE")  # admitted


async def test_old_is_ignored_for_create() -> None:
    body = _valid()
    body["spec"]["schedule"] = "nope"
    await _refusal(body, old=copy.deepcopy(body), operation="CREATE")


def test_register_adds_one_validating_handler_per_kind_for_create_and_update() -> None:
    registry = kopf.OperatorRegistry()
    admission.register(registry)
    handlers = {handler.id: handler for handler in registry._webhooks.get_all_handlers()}
    assert sorted(handlers) == sorted([admission.WEBHOOK_ID, admission.CALENDAR_WEBHOOK_ID])
    assert admission.WEBHOOK_PATH == "/validate-scheduledjob"
    assert admission.CALENDAR_WEBHOOK_PATH == "/validate-schedulecalendar"
    jobs = kopf.Resource("sundial.dev", "v1alpha1", "scheduledjobs")
    calendars = kopf.Resource("sundial.dev", "v1alpha1", "schedulecalendars")
    for handler_id, ours, other in (
        (admission.WEBHOOK_ID, jobs, calendars),
        (admission.CALENDAR_WEBHOOK_ID, calendars, jobs),
    ):
        handler = handlers[handler_id]
        assert sorted(handler.operations or []) == ["CREATE", "UPDATE"]
        assert handler.selector is not None
        assert handler.selector.check(ours)
        assert not handler.selector.check(other)
        assert not handler.selector.check(kopf.Resource("batch", "v1", "jobs"))


def _calendar(**spec: Any) -> dict[str, Any]:
    return {"kind": "ScheduleCalendar", "metadata": {"name": "holidays", "namespace": "ns"}, "spec": spec}


async def test_a_calendar_update_that_keeps_a_stored_invalid_spec_or_is_being_deleted_is_admitted() -> None:
    stored = _calendar(exclude=[{"schedule": "61 * * * *"}])
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"team": "a"}
    await admission.validate_schedule_calendar(body=relabelled, old=stored, operation="UPDATE")
    edited = _calendar(exclude=[{"schedule": "62 * * * *"}])
    error = await _refusal(edited, old=stored, operation="UPDATE")
    assert 'ScheduleCalendar.sundial.dev "holidays" is invalid: spec.exclude[0].schedule' in str(error)
    edited["metadata"]["deletionTimestamp"] = "2027-01-01T00:00:00Z"
    await admission.validate_schedule_calendar(body=edited, old=stored, operation="UPDATE")


def _settings(**kwargs: Any) -> WebhookSettings:
    return WebhookSettings(**kwargs)


def test_configure_does_nothing_when_the_webhook_is_off() -> None:
    registry, kopf_settings = kopf.OperatorRegistry(), kopf.OperatorSettings()
    admission.configure(kopf_settings, registry, _settings())
    assert kopf_settings.admission.server is None
    assert not registry._webhooks.get_all_handlers()


def test_configure_serves_given_certificate_and_does_not_manage_the_configuration(tmp_path: Path) -> None:
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    registry, kopf_settings = kopf.OperatorRegistry(), kopf.OperatorSettings()
    settings = _settings(port=9443, addr="127.0.0.1", host="sundial.svc", cert_file=cert, key_file=key)
    admission.configure(kopf_settings, registry, settings)
    server = kopf_settings.admission.server
    assert isinstance(server, kopf.WebhookServer)
    assert (server.addr, server.port, server.host) == ("127.0.0.1", 9443, "sundial.svc")
    assert (server.certfile, server.pkeyfile, server.insecure) == (cert, key, False)
    assert kopf_settings.admission.managed is None
    assert sorted(h.id for h in registry._webhooks.get_all_handlers()) == sorted(
        [admission.WEBHOOK_ID, admission.CALENDAR_WEBHOOK_ID]
    )


def test_configure_lets_kopf_manage_the_configuration_only_when_asked(tmp_path: Path) -> None:
    kopf_settings = kopf.OperatorSettings()
    settings = _settings(port=9443, cert_file=tmp_path / "c", key_file=tmp_path / "k", managed="sundial")
    admission.configure(kopf_settings, kopf.OperatorRegistry(), settings)
    assert kopf_settings.admission.managed == "sundial"


def test_self_signed_needs_certbuilder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(admission, "can_self_sign", lambda: False)
    with pytest.raises(ValueError, match="certbuilder"):
        admission.webhook_server(_settings(port=9443))
    monkeypatch.setattr(admission, "can_self_sign", lambda: True)
    server = admission.webhook_server(_settings(port=9443, ca_dump=tmp_path / "ca.pem"))
    assert (server.certfile, server.pkeyfile, server.cadump) == (None, None, tmp_path / "ca.pem")


def test_webhook_server_refuses_a_disabled_port() -> None:
    with pytest.raises(ValueError, match="disabled"):
        admission.webhook_server(_settings())


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
    assert (settings.webhook.port, settings.webhook.managed) == (0, "")


def test_sundial_run_webhook_flags(tmp_path: Path) -> None:
    settings = run_cmd.settings_from(
        _run_args(
            "--webhook-port", "9443", "--webhook-addr", "127.0.0.1", "--webhook-host", "sundial-webhook.ns.svc",
            "--webhook-cert-file", str(tmp_path / "tls.crt"), "--webhook-key-file", str(tmp_path / "tls.key"),
            "--webhook-ca-dump", str(tmp_path / "ca.pem"), "--webhook-managed", "sundial",
        ),
        environ={},
    )  # fmt: skip
    assert settings.webhook.port == 9443
    assert (settings.webhook.addr, settings.webhook.host) == ("127.0.0.1", "sundial-webhook.ns.svc")
    assert (settings.webhook.cert_file, settings.webhook.key_file) == (tmp_path / "tls.crt", tmp_path / "tls.key")
    assert (settings.webhook.ca_dump, settings.webhook.managed) == (tmp_path / "ca.pem", "sundial")


def test_sundial_run_refuses_a_webhook_it_cannot_serve(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(admission, "can_self_sign", lambda: False)
    assert run_cmd.run(_run_args("--webhook-port", "9443")) == 2
    assert "certbuilder" in capsys.readouterr().out
