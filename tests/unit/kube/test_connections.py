"""The operator's API client session: the environment is trusted only when a proxy variable asks for it, and
the send guard runs again once a request has its connection."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client

from sundial.kube import connections, requests


def _configuration() -> client.Configuration:
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:6443"
    return configuration


async def test_without_proxy_variables_the_session_does_not_trust_the_environment() -> None:
    api = connections.api_client(_configuration(), environ={"HOME": "/nonexistent"})
    try:
        assert api.rest_client.pool_manager.trust_env is False
    finally:
        await api.close()


async def test_a_proxy_variable_keeps_the_environment_trusted() -> None:
    api = connections.api_client(_configuration(), environ={"HTTPS_PROXY": "http://proxy.example:3128"})
    try:
        assert api.rest_client.pool_manager.trust_env is True
    finally:
        await api.close()


class LostError(Exception):
    pass


async def test_the_send_guard_runs_again_on_the_connection_new_or_reused() -> None:
    received: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        received.append(request.path)
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/{name}", handler)
    checks: list[str] = []
    lost = False

    def guard() -> None:
        checks.append("check")
        if lost:
            raise LostError("not holding shard 0")

    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        connections.fence(session)
        token = requests.SEND_GUARD.set(guard)
        try:
            async with session.post(server.make_url("/first")) as response:  # a new connection
                assert response.status == 200
                await response.read()
            assert checks == ["check"]
            async with session.post(server.make_url("/second")) as response:  # the kept-alive one
                await response.read()
            assert checks == ["check", "check"]
            lost = True  # e.g. resumed after a SIGSTOP while the request waited for its connection
            with pytest.raises(LostError):
                await session.post(server.make_url("/third"))
        finally:
            requests.SEND_GUARD.reset(token)
        async with session.post(server.make_url("/unguarded")) as response:  # no guard set: no check
            await response.read()
    assert received == ["/first", "/second", "/unguarded"]
    assert len(checks) == 3


async def test_the_operators_client_is_fenced() -> None:
    api = connections.api_client(_configuration(), environ={})
    try:
        hooks = [trace.on_connection_reuseconn for trace in api.rest_client.pool_manager._trace_configs]
        assert len(hooks) == 1 and len(hooks[0]) == 1
    finally:
        await api.close()
