"""Every internal of aiohttp and kubernetes_asyncio that :mod:`sundial.kube.compat` relies on is still there
and still does what the operator needs. A failure here means an upgrade moved one: its message names the
package, the installed version and the compat function to review."""

from __future__ import annotations

import tomllib
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client

from sundial.kube import compat

ROOT = Path(__file__).resolve().parents[3]


def pins() -> dict[str, str]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return dict(requirement.split("==", 1) for requirement in dependencies)


@pytest.mark.parametrize("package", sorted(compat.CHECKED_AGAINST))
def test_the_pins_are_the_versions_compat_was_checked_against(package: str) -> None:
    pinned = pins().get(package)
    assert pinned == compat.CHECKED_AGAINST[package], (
        f"pyproject.toml pins {package}=={pinned}, but sundial.kube.compat was checked against "
        f"{compat.CHECKED_AGAINST[package]}: review every {package} internal in sundial/kube/compat.py "
        f"(this test module exercises them), then update compat.CHECKED_AGAINST"
    )


def test_the_error_names_the_package_its_version_and_the_function_to_review() -> None:
    error = compat.InternalChangedError("aiohttp", "ClientSession._trust_env", "distrust_environment")
    installed = pins()["aiohttp"]
    assert str(error) == (
        f"aiohttp {installed} (Sundial was checked against {compat.CHECKED_AGAINST['aiohttp']}): "
        "ClientSession._trust_env is gone or changed; "
        "review sundial.kube.compat.distrust_environment for this aiohttp version"
    )


async def test_kubernetes_asyncio_api_clients_have_an_aiohttp_session() -> None:
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:6443"
    api = client.ApiClient(configuration=configuration)
    try:
        assert isinstance(compat.session_of(api), aiohttp.ClientSession)
    finally:
        await api.close()


def test_a_missing_internal_fails_loudly() -> None:
    with pytest.raises(compat.InternalChangedError, match=r"kubernetes-asyncio .*review sundial\.kube\.compat"):
        compat.session_of(object())
    with pytest.raises(compat.InternalChangedError, match=r"aiohttp .*ClientSession\._trust_env"):
        compat.distrust_environment(object())  # type: ignore[arg-type]
    with pytest.raises(compat.InternalChangedError, match=r"aiohttp .*ClientSession\._trace_configs"):
        compat.add_trace_config(object(), aiohttp.TraceConfig())  # type: ignore[arg-type]


async def test_aiohttp_sessions_can_stop_trusting_the_environment() -> None:
    async with aiohttp.ClientSession(trust_env=True) as session:
        compat.distrust_environment(session)
        assert session.trust_env is False


async def test_a_trace_config_added_to_an_open_session_sees_its_connections() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", handler)
    seen: list[str] = []

    async def created(*_: object) -> None:
        seen.append("created")

    async def reused(*_: object) -> None:
        seen.append("reused")

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(created)
    trace.on_connection_reuseconn.append(reused)
    trace.freeze()
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        compat.add_trace_config(session, trace)
        for _ in range(2):
            async with session.get(server.make_url("/")) as response:
                await response.read()
    assert seen == ["created", "reused"]
