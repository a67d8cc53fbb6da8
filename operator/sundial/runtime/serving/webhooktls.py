"""Where the webhook's serving certificate comes from, besides the operator's own rotator
(:class:`~.certrotators.ServingTLS`, ``--webhook-cert-secret``):

* :class:`CertificateFiles`: ``--webhook-cert-file``/``--webhook-key-file`` (e.g. a cert-manager Secret
  mounted as a volume), re-read when either file changes (checked every :data:`RELOAD_INTERVAL` seconds on
  the webhook's own thread); a pair that does not load keeps the previous certificate;
* :func:`self_signed`: neither given: a CA and a serving certificate for ``--webhook-host`` made at startup
  (:mod:`.certificates`), its CA bundle written to ``--webhook-ca-dump`` for the configuration's
  ``caBundle``.
"""

from __future__ import annotations

import logging
import ssl
import tempfile
from datetime import datetime
from pathlib import Path

from sundial.runtime.serving import certificates, certrotators, swappedtls

logger = logging.getLogger(__name__)

#: Seconds between checks of the certificate files for a change.
RELOAD_INTERVAL = 10.0


def _stamp(*paths: Path) -> tuple[bytes, ...]:
    """The files' contents (a mounted Secret is swapped by a symlink whose times may not move)."""
    return tuple(path.read_bytes() for path in paths)


class CertificateFiles:
    """A certificate and key given as files, served through a :class:`~.swappedtls.SwappedContext`."""

    def __init__(self, certfile: Path, keyfile: Path) -> None:
        self.certfile, self.keyfile = certfile, keyfile
        self._swapped = swappedtls.SwappedContext()
        self._stamp = _stamp(certfile, keyfile)
        self._swapped.use(certfile, keyfile)

    @property
    def context(self) -> ssl.SSLContext:
        """The context to listen with."""
        return self._swapped.listening

    def reload_if_changed(self) -> bool:
        """Load the files again if either changed since the last load; True if it did."""
        try:
            stamp = _stamp(self.certfile, self.keyfile)
            if stamp == self._stamp:
                return False
            self._swapped.use(self.certfile, self.keyfile)
        except (OSError, ssl.SSLError) as error:
            logger.warning("webhook certificate: not reloaded (%s); still serving the previous one", error)
            return False
        self._stamp = stamp
        logger.info("webhook certificate: reloaded %s", self.certfile)
        return True


def self_signed(host: str, *, now: datetime, ca_dump: Path | None = None) -> certrotators.ServingTLS:
    """A CA and a serving certificate for HOST (``--webhook-host``; empty: ``localhost`` and ``127.0.0.1``),
    made now, kept in a private temporary directory; the CA bundle written to CA_DUMP if given."""
    names = (
        certificates.SubjectNames.for_host(host)
        if host
        else certificates.SubjectNames(dns=("localhost",), ips=("127.0.0.1",))
    )
    decision = certificates.RotationDecision(certificates.Action.CREATE, "no certificate given: self-signed")
    material = certificates.renew(None, decision, now=now, names=names, lifetimes=certificates.Lifetimes())
    tls = certrotators.ServingTLS(Path(tempfile.mkdtemp(prefix="sundial-webhook-")))
    tls.load(material)
    if ca_dump is not None:
        ca_dump.write_bytes(material.bundle_pem())
    return tls
