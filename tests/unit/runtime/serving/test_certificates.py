"""The operator-managed webhook certificate: decisions at named moments of a certificate's life (pure), and
the rotator against a fake API that stores a Secret and a webhook configuration (compare-and-set included)."""

from __future__ import annotations

import asyncio
import base64
import copy
import re
import shutil
import ssl
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sundial.runtime.serving import certificates, certrotators
from sundial.runtime.serving.certificates import Action

NAMES = certificates.SubjectNames.for_host("sundial-webhook.sundial-system.svc")
LIFETIMES = certificates.Lifetimes(ca=timedelta(days=300), serving=timedelta(days=30))
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def created_at(now: datetime, names: certificates.SubjectNames = NAMES) -> certificates.Material:
    return certificates.renew(
        None, certificates.RotationDecision(Action.CREATE, "test"), now=now, names=names, lifetimes=LIFETIMES
    )


def shortly_after(moment: datetime) -> datetime:
    return moment + timedelta(minutes=1)


def just_before_serving_renewal(material: certificates.Material) -> datetime:
    return certificates.renewal_time(material.cert) - timedelta(seconds=1)


# --- names ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "dns", "ips"),
    [
        pytest.param(
            "sundial-webhook.sundial-system.svc",
            (
                "sundial-webhook",
                "sundial-webhook.sundial-system",
                "sundial-webhook.sundial-system.svc",
                "sundial-webhook.sundial-system.svc.cluster.local",
            ),
            (),
            id="service_name",
        ),
        pytest.param("127.0.0.1", (), ("127.0.0.1",), id="ip_address"),
        pytest.param("webhook.example.com", ("webhook.example.com",), (), id="other_name"),
    ],
)
def test_the_subject_names_of_a_host(host: str, dns: tuple[str, ...], ips: tuple[str, ...]) -> None:
    assert certificates.SubjectNames.for_host(host) == certificates.SubjectNames(dns=dns, ips=ips)


def test_an_empty_host_names_the_flag() -> None:
    with pytest.raises(ValueError, match="--webhook-host"):
        certificates.SubjectNames.for_host(" ")


# --- decisions --------------------------------------------------------------------------------------------


def test_nothing_stored_creates_a_ca_and_a_certificate() -> None:
    assert certificates.plan(None, now=START, names=NAMES).action is Action.CREATE


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({}, "no tls.crt, tls.key, ca.crt, ca.key", id="empty_secret"),
        pytest.param({"tls.crt": "x", "tls.key": "x", "ca.crt": "x", "ca.key": "!"}, "is not base64", id="garbage"),
    ],
)
def test_an_unusable_secret_names_what_is_wrong(data: dict[str, str], message: str) -> None:
    with pytest.raises(certificates.InvalidMaterialError, match=message):
        certificates.parse(data)


def test_a_fresh_certificate_is_kept() -> None:
    material = created_at(START)
    assert certificates.plan(material, now=shortly_after(START), names=NAMES).action is Action.KEEP
    assert certificates.plan(material, now=just_before_serving_renewal(material), names=NAMES).action is Action.KEEP


def test_the_serving_certificate_is_renewed_after_two_thirds_of_its_life_with_the_same_ca() -> None:
    material = created_at(START)
    due = certificates.renewal_time(material.cert)
    assert due == material.cert.not_valid_before_utc + LIFETIMES.serving * 2 / 3
    decision = certificates.plan(material, now=due, names=NAMES)
    assert decision.action is Action.ISSUE
    renewed = certificates.renew(material, decision, now=due, names=NAMES, lifetimes=LIFETIMES)
    assert renewed.cas == material.cas
    assert renewed.cert.serial_number != material.cert.serial_number
    assert certificates.plan(renewed, now=shortly_after(due), names=NAMES).action is Action.KEEP


def test_a_due_ca_is_rotated_and_the_previous_one_stays_in_the_bundle() -> None:
    material = created_at(START)
    due = certificates.renewal_time(material.ca)
    decision = certificates.plan(material, now=due, names=NAMES)
    assert decision.action is Action.ROTATE_CA
    renewed = certificates.renew(material, decision, now=due, names=NAMES, lifetimes=LIFETIMES)
    assert len(renewed.cas) == 2
    assert renewed.cas[1] == material.ca
    assert renewed.ca != material.ca
    renewed.cert.verify_directly_issued_by(renewed.ca)
    assert certificates.plan(renewed, now=shortly_after(due), names=NAMES).action is Action.KEEP
    # Once the previous CA has expired, the next renewal drops it from the bundle.
    later = material.ca.not_valid_after_utc + timedelta(days=1)
    again = certificates.renew(
        renewed, certificates.plan(renewed, now=later, names=NAMES), now=later, names=NAMES, lifetimes=LIFETIMES
    )
    assert again.cas == (renewed.ca,)


def test_a_serving_certificate_never_outlives_its_ca() -> None:
    material = created_at(START)
    late = material.ca.not_valid_after_utc - timedelta(days=5)
    cert, _ = certificates.new_serving_certificate(
        ca=material.ca, ca_key=material.ca_key, names=NAMES, now=late, lifetime=timedelta(days=30)
    )
    assert cert.not_valid_after_utc == material.ca.not_valid_after_utc


def test_a_certificate_for_other_names_is_reissued() -> None:
    material = created_at(START, names=certificates.SubjectNames.for_host("old-webhook.sundial-system.svc"))
    decision = certificates.plan(material, now=shortly_after(START), names=NAMES)
    assert decision.action is Action.ISSUE
    assert "sundial-webhook.sundial-system.svc" in decision.reason


def test_a_certificate_of_another_ca_is_reissued() -> None:
    mine, theirs = created_at(START), created_at(START)
    mixed = certificates.Material(cas=mine.cas, ca_key=mine.ca_key, cert=theirs.cert, key=theirs.key)
    assert certificates.plan(mixed, now=shortly_after(START), names=NAMES) == certificates.RotationDecision(
        Action.ISSUE, "tls.crt is not signed by the current CA"
    )


def test_a_ca_key_of_another_ca_starts_over() -> None:
    mine, theirs = created_at(START), created_at(START)
    mixed = certificates.Material(cas=mine.cas, ca_key=theirs.ca_key, cert=mine.cert, key=mine.key)
    assert certificates.plan(mixed, now=shortly_after(START), names=NAMES).action is Action.CREATE


def test_the_secret_data_round_trips() -> None:
    material = created_at(START)
    parsed = certificates.parse(material.secret_data())
    assert parsed.cert == material.cert
    assert parsed.cas == material.cas
    assert certificates.plan(parsed, now=shortly_after(START), names=NAMES).action is Action.KEEP


def test_the_next_check_is_the_first_renewal_but_at_least_every_resync() -> None:
    material = created_at(START)
    resync = timedelta(minutes=5)
    assert certificates.next_check(material, now=START, resync=resync) == START + resync
    near = just_before_serving_renewal(material)
    assert certificates.next_check(material, now=near, resync=resync) == certificates.renewal_time(material.cert)


def test_openssl_verifies_the_chain_for_the_service_name(tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not on PATH")
    material = created_at(datetime.now(UTC))
    (tmp_path / "ca.crt").write_bytes(material.bundle_pem())
    (tmp_path / "tls.crt").write_bytes(material.cert_pem())
    verify = subprocess.run(
        [openssl, "verify", "-CAfile", str(tmp_path / "ca.crt"), "-purpose", "sslserver", str(tmp_path / "tls.crt")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr
    names = subprocess.run(
        [openssl, "x509", "-noout", "-ext", "subjectAltName", "-in", str(tmp_path / "tls.crt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "DNS:sundial-webhook.sundial-system.svc.cluster.local" in names


# --- the rotator ------------------------------------------------------------------------------------------


class FakeStore:
    """A Secret with a resourceVersion (updates are compare-and-set) and a webhook configuration."""

    def __init__(self, secret: dict[str, Any] | None) -> None:
        self.secret = secret
        self.version = 1
        self.bundle_by_webhook = {"validate.scheduledjobs.sundial.dev": ""}
        self.writes = 0
        self.before_write: list[dict[str, Any]] = []  # writes of a racing replica, landing first

    async def read_secret(self) -> dict[str, Any] | None:
        return copy.deepcopy(self.secret)

    async def write_secret(self, body: dict[str, Any]) -> bool:
        if self.before_write:
            self._store(self.before_write.pop(0))
        expected = (body.get("metadata") or {}).get("resourceVersion")
        current = (self.secret or {}).get("metadata", {}).get("resourceVersion")
        if expected != current:
            return False
        self._store(body)
        self.writes += 1
        return True

    def _store(self, body: dict[str, Any]) -> None:
        self.version += 1
        self.secret = copy.deepcopy(body)
        self.secret["metadata"]["resourceVersion"] = str(self.version)

    async def set_ca_bundle(self, bundle: str) -> int:
        changed = [name for name, value in self.bundle_by_webhook.items() if value != bundle]
        for name in changed:
            self.bundle_by_webhook[name] = bundle
        return len(changed)


def chart_secret() -> dict[str, Any]:
    """The Secret as the chart creates it: labels, no data."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": "sundial-webhook-certificate",
            "namespace": "sundial-system",
            "labels": {"app.kubernetes.io/name": "sundial"},
            "resourceVersion": "1",
        },
    }


MANAGED = certrotators.ManagedCertificate(
    secret_namespace="sundial-system",
    secret_name="sundial-webhook-certificate",
    webhook_configuration="sundial",
    names=NAMES,
    lifetimes=LIFETIMES,
)


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def rotator_on(store: FakeStore, clock: Clock, tmp_path: Path) -> certrotators.Rotator:
    tls = certrotators.ServingTLS(tmp_path)
    return certrotators.Rotator(store=store, managed=MANAGED, tls=tls, clock=clock)


def stored(store: FakeStore) -> certificates.Material:
    assert store.secret is not None
    return certificates.parse(store.secret["data"])


async def test_the_first_sync_fills_the_charts_secret_sets_the_ca_bundle_and_serves(tmp_path: Path) -> None:
    store, clock = FakeStore(chart_secret()), Clock(START)
    rotator = rotator_on(store, clock, tmp_path)
    due = await rotator.sync()
    assert store.writes == 1
    assert store.secret is not None
    assert store.secret["metadata"]["labels"] == {"app.kubernetes.io/name": "sundial"}, "the chart's labels stay"
    material = stored(store)
    bundle = store.bundle_by_webhook["validate.scheduledjobs.sundial.dev"]
    assert base64.b64decode(bundle) == material.bundle_pem()
    assert rotator.tls.serial == material.cert.serial_number
    assert rotator.tls.cadata == material.bundle_pem()
    assert rotator.tls.certfile.read_bytes() == material.cert_pem()
    assert due == START + MANAGED.resync


async def test_a_valid_secret_is_served_as_it_is(tmp_path: Path) -> None:
    existing = created_at(START)
    secret = chart_secret() | {"data": existing.secret_data()}
    store, clock = FakeStore(secret), Clock(shortly_after(START))
    rotator = rotator_on(store, clock, tmp_path)
    await rotator.sync()
    assert store.writes == 0
    assert rotator.tls.serial == existing.cert.serial_number


async def test_a_replica_that_loses_the_race_serves_the_winners_certificate(tmp_path: Path) -> None:
    store, clock = FakeStore(chart_secret()), Clock(START)
    winner = created_at(START)
    store.before_write.append(chart_secret() | {"data": winner.secret_data()})
    rotator = rotator_on(store, clock, tmp_path)
    await rotator.sync()
    assert store.writes == 0, "the loser wrote nothing"
    assert rotator.tls.serial == winner.cert.serial_number
    assert base64.b64decode(store.bundle_by_webhook["validate.scheduledjobs.sundial.dev"]) == winner.bundle_pem()


async def test_a_due_certificate_is_rotated_and_hot_reloaded(tmp_path: Path) -> None:
    store, clock = FakeStore(chart_secret()), Clock(START)
    rotator = rotator_on(store, clock, tmp_path)
    await rotator.sync()
    first = stored(store)
    clock.now = certificates.renewal_time(first.cert)
    await rotator.sync()
    second = stored(store)
    assert second.cert.serial_number != first.cert.serial_number
    assert second.cas == first.cas
    assert rotator.tls.serial == second.cert.serial_number
    # The files stay the first certificate's: a renewed one is loaded from a scratch copy and swapped in.
    assert rotator.tls.certfile.read_bytes() == first.cert_pem()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tls.crt", "tls.key"]


async def test_a_reset_ca_bundle_is_set_again_on_the_next_sync(tmp_path: Path) -> None:
    store, clock = FakeStore(chart_secret()), Clock(START)
    rotator = rotator_on(store, clock, tmp_path)
    await rotator.sync()
    store.bundle_by_webhook["validate.scheduledjobs.sundial.dev"] = ""
    clock.now = START + MANAGED.resync
    await rotator.sync()
    assert store.bundle_by_webhook["validate.scheduledjobs.sundial.dev"]
    assert store.writes == 1


async def test_a_missing_webhook_configuration_does_not_stop_serving_and_is_retried_soon(tmp_path: Path) -> None:
    class NoConfiguration(FakeStore):
        async def set_ca_bundle(self, bundle: str) -> int:
            raise certrotators.ConfigurationMissingError("ValidatingWebhookConfiguration sundial does not exist")

    store, clock = NoConfiguration(chart_secret()), Clock(START)
    rotator = rotator_on(store, clock, tmp_path)
    assert await rotator.sync() == START + certrotators.RETRY
    assert rotator.tls.serial == stored(store).cert.serial_number


async def test_run_stops_when_asked(tmp_path: Path) -> None:
    store, clock = FakeStore(chart_secret()), Clock(START)
    rotator = rotator_on(store, clock, tmp_path)
    stopping = asyncio.Event()
    task = asyncio.create_task(rotator.run(stopping))
    while store.writes == 0:
        await asyncio.sleep(0)
    stopping.set()
    await asyncio.wait_for(task, timeout=5)


def test_the_ca_bundle_patch_touches_only_webhooks_that_differ() -> None:
    configuration = {
        "webhooks": [
            {"name": "a", "clientConfig": {"caBundle": "NEW"}},
            {"name": "b", "clientConfig": {"service": {"name": "x"}}},
        ]
    }
    assert certrotators.ca_bundle_patch(configuration, "NEW") == [
        {"op": "test", "path": "/webhooks/1/name", "value": "b"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": "NEW"},
    ]


def test_the_served_context_presents_the_loaded_certificate(tmp_path: Path) -> None:
    tls = certrotators.ServingTLS(tmp_path)
    material = created_at(datetime.now(UTC))
    assert tls.load(material)
    assert not tls.load(material), "the same certificate is not loaded twice"
    assert isinstance(tls.context, ssl.SSLContext)


# --- the flags ------------------------------------------------------------------------------------------


def _parse(*flags: str) -> Any:
    import argparse  # noqa: PLC0415

    from sundial.cli.commands import run as run_cmd  # noqa: PLC0415

    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["run", "--identity", "pod-0", "--lease-namespace", "sundial-system", *flags])
    return run_cmd.managed_certificate_from(args, run_cmd.settings_from(args, environ={}))


def test_the_flags_make_the_managed_certificate() -> None:
    managed = _parse(
        "--webhook-port=9443",
        "--webhook-host=sundial-webhook.sundial-system.svc",
        "--webhook-cert-secret=sundial-webhook-certificate",
        "--webhook-configuration=sundial",
        "--webhook-cert-validity=30",
    )
    assert managed == certrotators.ManagedCertificate(
        secret_namespace="sundial-system",
        secret_name="sundial-webhook-certificate",
        webhook_configuration="sundial",
        names=NAMES,
        lifetimes=certificates.Lifetimes(serving=timedelta(days=30), ca=timedelta(days=3650)),
    )
    assert _parse("--webhook-port=9443") is None


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--webhook-cert-secret=s"], "needs --webhook-port"),
        (["--webhook-cert-secret=s", "--webhook-port=9443"], "needs --webhook-host"),
        (
            [
                "--webhook-cert-secret=s",
                "--webhook-port=9443",
                "--webhook-host=h",
                "--webhook-cert-file=c",
                "--webhook-key-file=k",
            ],
            "exclude each other",
        ),
        (
            ["--webhook-cert-secret=s", "--webhook-port=9443", "--webhook-host=h", "--webhook-ca-validity=10"],
            "--webhook-cert-validity <= --webhook-ca-validity",
        ),
    ],
    ids=["no_port", "no_host", "with_files", "ca_shorter"],
)
def test_bad_flags_are_named(flags: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        _parse(*flags)
