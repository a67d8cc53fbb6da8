"""The last send-guard check on a new connection runs only once the TLS handshake has left the client.

uvloop hands a new TLS connection over before it flushes the handshake's last flight (the client Finished
goes out from a callback scheduled after the wake-up). Checked straight away, a pause right after the check
(SIGSTOP, a frozen VM) left the server with a half-open handshake that completed only on resume: a write in
flight looked, from the server's side, like one decided after the resume. Here the guard blocks the client's
event loop right after it checks - as a SIGSTOP would - and the server, on a thread of its own like the chaos
proxy, must already have the whole handshake.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import uvloop

from sundial.kube import connections, requests
from sundial_sandbox.webhook import ServingCertificate, issue_serving_certificate

FROZEN = 0.3  # seconds the client's loop stays blocked right after the check


class TlsServer:
    """Answers every request with 200 and counts completed handshakes, on its own thread and loop."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.handshakes = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)

        async def start() -> asyncio.Server:
            return await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=context)

        self._server = asyncio.run_coroutine_threadsafe(start(), self._loop).result(timeout=10)
        self.url = f"https://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handshakes += 1  # called once the server's side of the handshake is complete
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        finally:
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> ServingCertificate:
    return issue_serving_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def server(certificate: ServingCertificate) -> Iterator[TlsServer]:
    running = TlsServer(certificate.cert, certificate.key)
    yield running
    running.close()


RUNNERS: dict[str, Callable[[Coroutine[Any, Any, None]], None]] = {"uvloop": uvloop.run, "asyncio": asyncio.run}


@pytest.mark.parametrize("loop", sorted(RUNNERS))
def test_the_check_on_a_new_connection_comes_after_the_handshake_left(
    loop: str, server: TlsServer, certificate: ServingCertificate
) -> None:
    seen: list[int] = []

    def guard() -> None:
        time.sleep(FROZEN)  # the client's loop is frozen right after the check, as by a SIGSTOP
        seen.append(server.handshakes)

    async def write_once() -> None:
        context = ssl.create_default_context(cafile=str(certificate.ca_cert))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session:
            connections.fence(session)
            token = requests.SEND_GUARD.set(guard)
            try:
                async with session.post(server.url + "/write", data=b"{}") as response:
                    assert response.status == 200
            finally:
                requests.SEND_GUARD.reset(token)

    RUNNERS[loop](write_once())
    assert seen == [1], "the server's side of the handshake was still open when the client checked"
