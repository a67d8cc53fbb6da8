"""A loopback API server for the watch layer's unit tests: HANDLE answers every GET; yields the
:class:`sundial.kube.watches.Watches` that reads from it (generous rate limit), closed and torn down after."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web
from kubernetes_asyncio import client

from sundial.kube import ratelimits, requests
from sundial.kube.watches import Watches


@contextlib.asynccontextmanager
async def loopback_watches(handle: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> AsyncIterator[Watches]:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    api_client = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
    try:
        yield Watches(
            api_client=api_client,
            requester=requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000)),
        )
    finally:
        await api_client.close()
        await runner.cleanup()
