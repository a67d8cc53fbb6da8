"""``/healthz``, ``/readyz`` and ``/metrics`` over aiohttp (never a thread)."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


def health_app(*, alive: Callable[[], bool], ready: Callable[[], bool]) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n") if alive() else web.Response(status=503, text="dead\n")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ready\n") if ready() else web.Response(status=503, text="not ready\n")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def metrics_app(registry: CollectorRegistry) -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


async def serve(app: web.Application, *, port: int) -> web.AppRunner:
    """Start ``app`` on ``port`` (all interfaces); stop it with ``await runner.cleanup()``."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host="0.0.0.0", port=port).start()
    return runner
