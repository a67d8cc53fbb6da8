"""HTTPS for ``/metrics``: on with ``--metrics-auth`` (a scraper's bearer token must not cross the network in
clear) or with ``--metrics-cert-file``/``--metrics-key-file``.

* With the two files, they are served and re-read when either changes (checked every
  :data:`RELOAD_INTERVAL` seconds: a cert-manager Secret mounted as a volume is renewed in place); new
  connections get the new certificate, open ones keep theirs.
* Without them, a certificate is made at startup (ECDSA P-256, its own throw-away CA, the pod's host name,
  ``localhost`` and ``127.0.0.1`` as names), as controller-runtime's secure metrics server does: Prometheus
  then scrapes with ``insecureSkipVerify`` (the chart's ServiceMonitor does), which still keeps the token
  off the wire in clear. Give your own certificate to have scrapers verify it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import tempfile
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

from aiohttp import web

from sundial.runtime.serving import certificates, certrotators
from sundial.runtime.settings import ProbeSettings

logger = logging.getLogger(__name__)

#: Seconds between checks of the certificate files for a change.
RELOAD_INTERVAL = 60.0


def _stamp(*paths: Path) -> tuple[tuple[int, float], ...]:
    stats = [path.stat() for path in paths]
    return tuple((stat.st_ino, stat.st_mtime) for stat in stats)


class MetricsTLS:
    """The TLS context of the metrics server and the files it was loaded from."""

    def __init__(self, certfile: Path, keyfile: Path, *, watched: bool) -> None:
        self.certfile, self.keyfile, self.watched = certfile, keyfile, watched
        self.context = ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(certfile, keyfile)
        self._stamp = _stamp(certfile, keyfile)

    @classmethod
    def self_signed(cls, *, now: datetime, host: str | None = None) -> MetricsTLS:
        """A certificate made now, in a private temporary directory (``/tmp`` is an emptyDir in the chart)."""
        dns = tuple(dict.fromkeys([host or socket.gethostname(), "localhost"]))
        names = certificates.SubjectNames(dns=dns, ips=("127.0.0.1",))
        decision = certificates.RotationDecision(certificates.Action.CREATE, "metrics served over HTTPS")
        material = certificates.renew(None, decision, now=now, names=names, lifetimes=certificates.Lifetimes())
        directory = Path(tempfile.mkdtemp(prefix="sundial-metrics-"))
        certfile, keyfile = directory / "tls.crt", directory / "tls.key"
        certrotators.write_private(certfile, material.cert_pem() + material.bundle_pem())
        certrotators.write_private(keyfile, material.key_pem())
        return cls(certfile, keyfile, watched=False)

    def reload_if_changed(self) -> bool:
        """Load the files again if either changed since the last load; True if it did. A pair that does not
        load (a half-written renewal) keeps the certificate being served, and is tried again next time."""
        try:
            stamp = _stamp(self.certfile, self.keyfile)
            if stamp == self._stamp:
                return False
            self.context.load_cert_chain(self.certfile, self.keyfile)
        except (OSError, ssl.SSLError) as error:
            logger.warning("metrics certificate: not reloaded (%s); still serving the previous one", error)
            return False
        self._stamp = stamp
        logger.info("metrics certificate: reloaded %s", self.certfile)
        return True

    def attach(self, app: web.Application, *, interval: float = RELOAD_INTERVAL) -> None:
        """Re-read the files every INTERVAL seconds while APP runs (only for given files)."""
        if not self.watched:
            return

        async def reloading(_: web.Application) -> AsyncIterator[None]:
            async def loop() -> None:
                while True:
                    await asyncio.sleep(interval)
                    self.reload_if_changed()

            task = asyncio.create_task(loop(), name="metrics certificate")
            yield
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        app.cleanup_ctx.append(reloading)


def for_settings(settings: ProbeSettings, *, now: datetime) -> MetricsTLS | None:
    """The metrics server's TLS for SETTINGS, or None for plain HTTP (no auth and no certificate given)."""
    if settings.metrics_cert_file is not None and settings.metrics_key_file is not None:
        return MetricsTLS(settings.metrics_cert_file, settings.metrics_key_file, watched=True)
    if settings.metrics_auth:
        return MetricsTLS.self_signed(now=now)
    return None
