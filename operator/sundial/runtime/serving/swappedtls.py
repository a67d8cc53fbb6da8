"""A TLS server context whose certificate is replaced whole, never modified in place, so a server on another
thread can keep handshaking while it is renewed.

The listening context's ``sni_callback`` (called by OpenSSL on every ClientHello, with or without a server
name) moves each new connection to :attr:`SwappedContext.current`; :meth:`SwappedContext.use` builds a new
context from the files and then swaps that one attribute. Open connections keep the certificate they started
with.
"""

from __future__ import annotations

import ssl
from pathlib import Path


def server_context() -> ssl.SSLContext:
    """A TLS server context with Python's defaults (TLS 1.2 or later, no client certificates asked)."""
    return ssl.create_default_context(purpose=ssl.Purpose.CLIENT_AUTH)


class SwappedContext:
    """:attr:`listening` goes to the server; :meth:`use` changes what new connections are served."""

    def __init__(self) -> None:
        self.listening = server_context()
        self.listening.sni_callback = self._pick
        self.current: ssl.SSLContext | None = None
        """The context new connections continue with (None: :attr:`listening` itself, before any :meth:`use`)."""

    def _pick(self, connection: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _: ssl.SSLContext) -> None:
        current = self.current
        if current is not None:
            connection.context = current

    def use(self, certfile: Path, keyfile: Path) -> None:
        """Serve the certificate (chain) of CERTFILE with KEYFILE to every new connection; raises what
        :meth:`ssl.SSLContext.load_cert_chain` raises (then nothing changes)."""
        context = server_context()
        context.load_cert_chain(certfile, keyfile)
        if self.current is None:
            self.listening.load_cert_chain(certfile, keyfile)
        self.current = context
