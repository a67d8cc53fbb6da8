"""``/healthz``, ``/readyz`` and ``/metrics`` over aiohttp (never a thread); with ``--metrics-auth``,
``/metrics`` only for clients :class:`sundial.runtime.serving.access.MetricsAccess` allows."""

from __future__ import annotations

import asyncio
import contextlib
import math
import ssl
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from sundial.runtime.serving.access import MetricsAccess, Verdict


def health_app(
    *,
    alive: Callable[[], bool],
    ready: Callable[[], bool],
    webhook: Callable[[], Awaitable[bool]] | None = None,
    loop_lag: Callable[[], float] | None = None,
    max_lag: float = math.inf,
) -> web.Application:
    """``/healthz`` and ``/readyz``. Ready: the initial state is indexed, the planning loop is at most MAX_LAG
    seconds behind its watchdog (LOOP_LAG, :mod:`sundial.runtime.serving.watchdog`) and, with a WEBHOOK check,
    the admission webhook accepts connections (with ``failurePolicy: Fail`` a Service endpoint whose webhook
    does not listen yet would refuse every ``kubectl apply``)."""

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n") if alive() else web.Response(status=503, text="dead\n")

    async def readyz(_: web.Request) -> web.Response:
        if not ready():
            return web.Response(status=503, text="not ready: initial state not indexed yet\n")
        lag = loop_lag() if loop_lag is not None else 0.0
        if lag > max_lag:
            return web.Response(status=503, text=f"not ready: the planning loop is {lag:.1f}s behind its watchdog\n")
        if webhook is not None and not await webhook():
            return web.Response(status=503, text="not ready: the admission webhook does not accept connections\n")
        return web.Response(text="ready\n")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


REFUSALS = {
    Verdict.UNAUTHENTICATED: "unauthenticated: send a bearer token the API server accepts\n",
    Verdict.FORBIDDEN: "forbidden: the token's user may not get the non-resource URL /metrics\n",
    Verdict.UNAVAILABLE: "cannot review the client now: the API server did not answer\n",
}


def metrics_app(registry: CollectorRegistry, *, access: MetricsAccess | None = None) -> web.Application:
    """``/metrics``; with ACCESS, only for a bearer token it allows (401, 403 or 503 otherwise)."""

    async def metrics(request: web.Request) -> web.Response:
        if access is not None:
            verdict = await access.verdict(request.headers)
            if verdict is not Verdict.ALLOWED:
                headers = {"WWW-Authenticate": 'Bearer realm="sundial"'} if verdict is Verdict.UNAUTHENTICATED else {}
                return web.Response(status=int(verdict), text=REFUSALS[verdict], headers=headers)
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


def listening(host: str, port: int, *, timeout: float = 1.0) -> Callable[[], Awaitable[bool]]:
    """A check that a TCP connection to HOST:PORT is accepted (``0.0.0.0``/``::``/empty: the loopback)."""
    target = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host

    async def check() -> bool:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(target, port), timeout)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    return check


async def serve(app: web.Application, *, port: int, ssl_context: ssl.SSLContext | None = None) -> web.AppRunner:
    """Start ``app`` on ``port`` (all interfaces; HTTPS with SSL_CONTEXT); stop it with ``await runner.cleanup()``."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host="0.0.0.0", port=port, ssl_context=ssl_context).start()
    return runner
