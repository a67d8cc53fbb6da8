"""An API client from a kubeconfig file (``--kubeconfig`` or ``KUBECONFIG``) or the in-cluster account."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client, config

from sundial.kube import compat, requests


class LoginError(RuntimeError):
    """No way to authenticate: neither a kubeconfig nor an in-cluster service account."""


async def load_configuration(kubeconfig: Path | None) -> Any:
    """A fresh ``Configuration`` (never the library's global default).

    Order: the explicit ``kubeconfig`` path; else the in-cluster service account; else ``KUBECONFIG`` /
    ``~/.kube/config`` (read here, at call time, never at import time).
    """
    configuration = client.Configuration()
    if kubeconfig is not None:
        await config.load_kube_config(
            config_file=str(kubeconfig), client_configuration=configuration, persist_config=False
        )
        return configuration
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return configuration
    except config.ConfigException:
        pass
    path = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        await config.load_kube_config(
            config_file=path.split(os.pathsep)[0], client_configuration=configuration, persist_config=False
        )
    except (config.ConfigException, OSError) as error:
        raise LoginError(f"not in a cluster and no usable kubeconfig: {error}") from error
    return configuration


#: Environment variables through which aiohttp's ``trust_env`` can matter (proxies, netrc credentials).
PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NETRC")


def api_client(configuration: Any, environ: Mapping[str, str] | None = None) -> Any:
    """An ``ApiClient`` bound to ``configuration``; close it with ``await client.close()``.

    kubernetes_asyncio opens its aiohttp session with ``trust_env=True``: then *every* request looks up a
    netrc file and the proxy variables, the netrc part in a thread-pool hop (a sizeable share of the
    operator's CPU under load: docs/benchmarks.md). Unless a proxy (or ``NETRC``) variable is set, the
    session does not trust the environment; credentials come from the kubeconfig or the service account,
    never from netrc.
    """
    api = client.ApiClient(configuration=configuration)
    session = compat.session_of(api)
    environ = os.environ if environ is None else environ
    if not any(environ.get(name) for name in PROXY_ENV):
        compat.distrust_environment(session)
    fence(session)
    return api


def fence(session: aiohttp.ClientSession) -> None:
    """Run :data:`sundial.kube.requests.SEND_GUARD` again once the request has its connection, right before
    aiohttp writes it.

    The Requester checks the guard after the token bucket; the connection comes after that check, and opening
    one (TCP + TLS) takes milliseconds - more under load. A process paused (SIGSTOP, a frozen VM) inside that
    window sent its write on resume, after another replica had taken over: the chaos harness caught resumed
    zombies sending Events this way. Re-checking on the connection narrows the window to writing the bytes.
    (If the check fails on a *new* connection, aiohttp drops that connection without closing it; the server
    closes it when idle. That happens only to a replica that just lost its Lease.)

    On a new connection the check waits one event-loop turn first: uvloop hands the connection over *before*
    it flushes the TLS handshake's last flight (the client Finished goes out from a callback scheduled after
    the wake-up), so a pause right after the check left the server with a half-open handshake that completed
    only on resume - a write that was in flight looked, on the server side, like a connection opened after
    the resume. After the turn, the handshake is complete on both ends before the last check.
    """
    trace = aiohttp.TraceConfig()

    async def check(*_: object) -> None:
        guard = requests.SEND_GUARD.get()
        if guard is not None:
            guard()

    async def settle_then_check(*args: object) -> None:
        if requests.SEND_GUARD.get() is not None:
            await asyncio.sleep(0)  # the TLS handshake's last flight leaves first (see above)
        await check(*args)

    trace.on_connection_create_end.append(settle_then_check)
    trace.on_connection_reuseconn.append(check)
    trace.freeze()
    compat.add_trace_config(session, trace)
