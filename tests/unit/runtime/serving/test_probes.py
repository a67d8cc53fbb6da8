"""/readyz: ready once the initial state is indexed and, with a webhook, once the webhook accepts connections."""

from __future__ import annotations

import asyncio

from aiohttp.test_utils import TestClient, TestServer

from sundial.runtime.serving import probes


async def get(app: object, path: str) -> tuple[int, str]:
    async with TestClient(TestServer(app)) as client:  # type: ignore[arg-type]
        response = await client.get(path)
        return response.status, await response.text()


async def test_readyz_waits_for_the_index_and_the_webhook() -> None:
    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    indexed = False
    app = probes.health_app(alive=lambda: True, ready=lambda: indexed, webhook=probes.listening("0.0.0.0", port))

    assert await get(app, "/readyz") == (503, "not ready: initial state not indexed yet\n")
    indexed = True
    assert await get(app, "/readyz") == (200, "ready\n")
    server.close()
    await server.wait_closed()
    status, text = await get(app, "/readyz")
    assert status == 503 and "admission webhook" in text
    assert await get(app, "/healthz") == (200, "ok\n")


async def test_without_a_webhook_only_the_index_counts() -> None:
    app = probes.health_app(alive=lambda: False, ready=lambda: True)
    assert await get(app, "/readyz") == (200, "ready\n")
    assert await get(app, "/healthz") == (503, "dead\n")


async def test_readyz_fails_while_the_planning_loop_is_behind_its_watchdog_and_liveness_stays() -> None:
    lag = [0.4]
    app = probes.health_app(alive=lambda: True, ready=lambda: True, loop_lag=lambda: lag[0], max_lag=5.0)
    assert await get(app, "/readyz") == (200, "ready\n")
    lag[0] = 6.0
    assert await get(app, "/readyz") == (503, "not ready: the planning loop is 6.0s behind its watchdog\n")
    assert await get(app, "/healthz") == (200, "ok\n")  # not restarted: it withdraws and recovers instead
    lag[0] = 1.0
    assert await get(app, "/readyz") == (200, "ready\n")
