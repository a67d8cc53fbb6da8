"""The operator's API client session: the environment is trusted only when a proxy variable asks for it."""

from __future__ import annotations

from kubernetes_asyncio import client

from sundial.kube import connections


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
