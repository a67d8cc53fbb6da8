"""/metrics over HTTPS: a certificate made at startup with --metrics-auth, or given files re-read on change."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from aiohttp import web
from cryptography import x509

from sundial.runtime.serving import certificates, metricstls, probes
from sundial.runtime.settings import ProbeSettings

NOW = datetime(2027, 3, 27, tzinfo=UTC)


def _write_pair(directory: Path, *, host: str) -> tuple[Path, Path]:
    decision = certificates.RotationDecision(certificates.Action.CREATE, "test")
    names = certificates.SubjectNames(dns=(host,))
    material = certificates.renew(None, decision, now=NOW, names=names, lifetimes=certificates.Lifetimes())
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(material.cert_pem())
    key.write_bytes(material.key_pem())
    return cert, key


def _served_names(tls: metricstls.MetricsTLS) -> list[str]:
    cert = x509.load_pem_x509_certificate(tls.certfile.read_bytes())
    return cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)


def test_plain_http_without_auth_or_certificate_and_https_otherwise(tmp_path: Path) -> None:
    assert metricstls.for_settings(ProbeSettings(), now=NOW) is None
    made = metricstls.for_settings(ProbeSettings(metrics_auth=True), now=NOW)
    assert made is not None and not made.watched
    assert "localhost" in _served_names(made)
    assert made.keyfile.stat().st_mode & 0o077 == 0, "the private key is readable by its owner only"
    cert, key = _write_pair(tmp_path, host="metrics.example")
    given = metricstls.for_settings(ProbeSettings(metrics_cert_file=cert, metrics_key_file=key), now=NOW)
    assert given is not None and given.watched and _served_names(given) == ["metrics.example"]


def test_given_files_are_reloaded_when_they_change_and_a_broken_pair_keeps_the_served_one(tmp_path: Path) -> None:
    cert, key = _write_pair(tmp_path, host="first.example")
    tls = metricstls.MetricsTLS(cert, key, watched=True)
    assert tls.reload_if_changed() is False
    renewed = tmp_path / "renewed"
    renewed.mkdir()
    new_cert, new_key = _write_pair(renewed, host="second.example")
    os.replace(new_cert, cert)
    os.replace(new_key, key)
    assert tls.reload_if_changed() is True
    assert _served_names(tls) == ["second.example"]
    cert.write_text("not a certificate")
    assert tls.reload_if_changed() is False


async def test_the_metrics_app_answers_over_tls_with_the_certificate_made_at_startup() -> None:
    tls = metricstls.MetricsTLS.self_signed(now=datetime.now(UTC) - timedelta(minutes=1))

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(text="sundial_up 1\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    tls.attach(app)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runner = await probes.serve(app, port=port, ssl_context=tls.context)
    try:
        client = ssl.create_default_context(cafile=str(tls.certfile))
        client.check_hostname = False
        async with aiohttp.ClientSession() as session:
            async with session.get(f"https://127.0.0.1:{port}/metrics", ssl=client) as response:
                assert (response.status, await response.text()) == (200, "sundial_up 1\n")
            try:
                async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                    plain = response.status
            except aiohttp.ClientError:
                plain = None
            assert plain != 200, "plain HTTP must not be answered on the HTTPS port"
    finally:
        await asyncio.wait_for(runner.cleanup(), 5)
