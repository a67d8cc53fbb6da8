"""A TLS-terminating, fault-injecting HTTP/1.1 proxy between operator replicas and the API server.

One listener per replica (so every request is attributed to the replica that sent it: the request log is
how the zombie test proves that a resumed leader wrote nothing). Each client connection carries one
request: the proxy reads the request head and body, rewrites ``Connection: close``, then either injects a
fault or forwards it upstream over TLS (with the sandbox's admin client certificate) and pumps the
response back until the API server closes (watches included).

Faults (per listener, probabilities per request): a 5xx (500/503/504 with a Kubernetes ``Status`` body),
a 429 with ``Retry-After``, a connection reset before forwarding, a reset *after* forwarding (the API
server did the work but the client never hears the answer: outcome unknown), and added latency.
Loopback only; the serving certificate is the sandbox's (signed by its CA, SAN 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import ssl
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .kubeconfigs import Credentials

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Faults:
    error_5xx: float = 0.0
    error_429: float = 0.0
    reset_before: float = 0.0
    reset_after: float = 0.0
    latency: float = 0.0
    """Probability of added latency (uniform in ``latency_range``)."""
    latency_range: tuple[float, float] = (0.05, 1.5)


@dataclass(frozen=True)
class Request:
    listener: str
    at: float
    """``time.time()`` when the request was complete at the proxy (before forwarding)."""
    method: str
    path: str
    outcome: str
    """``forwarded``, ``503``, ``429``, ``reset-before``, ``reset-after``, …"""
    status: int = 0
    """The API server's response code for forwarded requests (0: none seen)."""
    opened: float = 0.0
    """``time.time()`` when the proxy's side of the connection's TLS handshake completed (one request per
    connection here). The client has sent its whole handshake before its last send-guard check
    (``sundial.kube.connections.fence`` waits a loop turn for uvloop to flush it): a request whose connection
    was opened before a SIGSTOP had passed that check before the stop and is a write in flight, not one a
    resumed zombie decided to send."""

    @property
    def is_write(self) -> bool:
        """A request that may change what the API server stores. Not: a review (SelfSubjectReview,
        SubjectAccessReview, ...: a POST that only asks - a replica asks who it is before it names its
        Lease's owner, whether it holds that Lease or not) and a dry run (``dryRun=All``: the fencing probe)."""
        if self.method not in WRITE_METHODS:
            return False
        return not (self.resource.endswith("reviews") or "dryRun=All" in self.path)

    @property
    def resource(self) -> str:
        path = self.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        if "namespaces" in parts:
            index = parts.index("namespaces")
            rest = parts[index + 2 :]
        else:
            rest = parts[2:] if parts and parts[0] == "api" else parts[3:]
        if not rest:
            return ""
        return rest[0] + ("/" + rest[2] if len(rest) > 2 else "")


@dataclass
class _Listener:
    name: str
    port: int
    server: asyncio.AbstractServer
    faults: Faults = field(default_factory=Faults)
    hold: frozenset[str] = frozenset()
    """Hold requests with these methods (never Lease requests) until :meth:`FaultProxy.release`."""
    hold_path: str = ""
    """...whose path contains this."""
    released: asyncio.Event | None = None
    held: int = 0


class FaultProxy:
    def __init__(self, upstream: Credentials, serving_cert: Path, serving_key: Path, seed: int = 0) -> None:
        self._upstream = upstream
        self._client_ssl = upstream.client_context()
        # A request with its own credentials (a ServiceAccount token) goes upstream without the admin's client
        # certificate: the API server would authenticate the certificate first.
        self._token_ssl = ssl.create_default_context(cafile=str(upstream.ca))
        self._server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._server_ssl.load_cert_chain(str(serving_cert), str(serving_key))
        self._random = random.Random(seed)
        self._listeners: dict[str, _Listener] = {}
        self._lock = threading.Lock()
        self.requests: list[Request] = []
        self.injected: Counter[str] = Counter()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy", daemon=True)
        self._thread.start()

    # -- control (from the test thread) -------------------------------------------------------------

    def listen(self, name: str) -> str:
        """Open a listener for NAME; returns its ``https://127.0.0.1:PORT`` URL."""

        async def open_() -> _Listener:
            server = await asyncio.start_server(
                lambda r, w: self._serve(name, r, w), "127.0.0.1", 0, ssl=self._server_ssl, limit=1 << 20
            )
            port = int(server.sockets[0].getsockname()[1])
            return _Listener(name=name, port=port, server=server)

        listener = asyncio.run_coroutine_threadsafe(open_(), self._loop).result(timeout=10)
        self._listeners[name] = listener
        return f"https://127.0.0.1:{listener.port}"

    def set_faults(self, faults: Faults, *names: str) -> None:
        """Apply FAULTS to the NAMES listeners (all when none given)."""
        for name in names or tuple(self._listeners):
            self._listeners[name].faults = faults

    def clear_faults(self) -> None:
        self.set_faults(Faults())

    def hold(self, name: str, *methods: str, path: str = "") -> None:
        """Hold NAME's requests with these METHODS whose path contains PATH (Lease requests excepted) before
        forwarding them, until :meth:`release`: a write the replica sent, still in flight at the API server's
        door."""

        def hold_() -> None:
            listener = self._listeners[name]
            listener.released = asyncio.Event()
            listener.hold = frozenset(methods)
            listener.hold_path = path
            listener.held = 0

        self._loop.call_soon_threadsafe(hold_)

    def held(self, name: str) -> int:
        """How many of NAME's requests are being held (or were, before the last :meth:`release`)."""
        return self._listeners[name].held

    def release(self, name: str) -> None:
        """Forward what NAME's listener holds, and hold nothing more."""

        def release_() -> None:
            listener = self._listeners[name]
            listener.hold = frozenset()
            if listener.released is not None:
                listener.released.set()

        self._loop.call_soon_threadsafe(release_)

    def log(self) -> list[Request]:
        with self._lock:
            return list(self.requests)

    def close(self) -> None:
        async def close_() -> None:
            for listener in self._listeners.values():
                listener.server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    # -- the proxy (in its own loop) ----------------------------------------------------------------

    def _record(self, name: str, method: str, path: str, outcome: str, *, opened: float, at: float | None = None,
                status: int = 0) -> None:  # fmt: skip
        with self._lock:
            self.requests.append(Request(name, at or time.time(), method, path, outcome, status, opened))
            if outcome not in ("forwarded", "client-gone", "upstream-down"):
                self.injected[outcome] += 1

    def _pick(self, faults: Faults, watch: bool) -> str | None:
        roll = self._random.random()
        for outcome, p in (
            ("5xx", faults.error_5xx),
            ("429", faults.error_429),
            ("reset-before", faults.reset_before),
            ("reset-after", 0.0 if watch else faults.reset_after),
        ):
            if roll < p:
                return outcome
            roll -= p
        return None

    async def _serve(self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        opened = time.time()
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError):
                return
            lines = head[:-4].split(b"\r\n")
            method, target, _ = lines[0].decode("latin-1").split(" ", 2)
            headers = [line for line in lines[1:] if not line.lower().startswith((b"connection:", b"keep-alive:"))]
            length = 0
            chunked = False
            for line in headers:
                key, _, value = line.partition(b":")
                if key.strip().lower() == b"content-length":
                    length = int(value.strip())
                if key.strip().lower() == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
            body = await reader.readexactly(length) if length else b""
            if chunked:
                body = await reader.readuntil(b"0\r\n\r\n")
            watch = "watch=" in target and "watch=false" not in target
            listener = self._listeners[name]
            held = method in listener.hold and listener.hold_path in target and "/leases" not in target
            if held and listener.released is not None:
                listener.held += 1
                await listener.released.wait()
            faults = listener.faults
            if faults.latency and self._random.random() < faults.latency:
                await asyncio.sleep(self._random.uniform(*faults.latency_range))
                with self._lock:
                    self.injected["latency"] += 1
            fault = self._pick(faults, watch)
            if fault in ("5xx", "429"):
                code = 429 if fault == "429" else self._random.choice((500, 503, 504))
                self._record(name, method, target, str(code), opened=opened)
                status = {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": f"injected by the sundial fault proxy ({code})",
                    "reason": "TooManyRequests" if code == 429 else "InternalError",
                    "code": code,
                }
                payload = json.dumps(status).encode()
                extra = b"Retry-After: 1\r\n" if code == 429 else b""
                writer.write(
                    f"HTTP/1.1 {code} Injected\r\nContent-Type: application/json\r\n".encode()
                    + extra
                    + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
                return
            if fault == "reset-before":
                self._record(name, method, target, "reset-before", opened=opened)
                writer.transport.abort()
                return
            host, port = self._upstream.host_port
            try:
                token = any(line.lower().startswith(b"authorization:") for line in headers)
                upstream_reader, upstream_writer = await asyncio.open_connection(
                    host, port, ssl=self._token_ssl if token else self._client_ssl, server_hostname=host, limit=1 << 20
                )
            except (OSError, ssl.SSLError):
                self._record(name, method, target, "upstream-down", opened=opened)
                writer.transport.abort()
                return
            sent_at = time.time()
            upstream_writer.write(b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n" + body)
            await upstream_writer.drain()
            first = await upstream_reader.read(1 << 16)
            code = 0
            with contextlib.suppress(ValueError, IndexError):
                code = int(first.split(b" ", 2)[1])
            self._record(name, method, target, fault or "forwarded", opened=opened, at=sent_at, status=code)
            if fault == "reset-after":
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(upstream_reader.read(), timeout=30)
                writer.transport.abort()
                return
            writer.write(first)
            await writer.drain()
            await self._pump(upstream_reader, writer, reader)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, OSError, ValueError):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        finally:
            if upstream_writer is not None:
                upstream_writer.transport.abort()
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    async def _pump(upstream: asyncio.StreamReader, writer: asyncio.StreamWriter, client: asyncio.StreamReader) -> None:
        """Copy the response until the API server closes, or stop early when the client goes away."""

        async def copy() -> None:
            while chunk := await upstream.read(1 << 16):
                writer.write(chunk)
                await writer.drain()

        async def client_gone() -> None:
            while await client.read(1 << 16):
                pass

        tasks = [asyncio.create_task(copy()), asyncio.create_task(client_gone())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
