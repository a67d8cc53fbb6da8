"""The one module that reaches into the internals of aiohttp and kubernetes_asyncio.

Each function here relies on something its package does not promise - a private attribute, a module-level
name, an internal class - and names it. :data:`CHECKED_AGAINST` holds the versions this module was written
against (the exact pins of ``pyproject.toml``). When an internal is missing, the function raises
:class:`InternalChangedError` naming the package, its installed version and the function to review; the unit
test ``tests/unit/kube/test_compat.py`` exercises every internal and checks :data:`CHECKED_AGAINST` against the
pins, so an upgrade that moves one fails in the unit suite rather than in a running operator. Nothing else in
``sundial`` touches these internals.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import aiohttp

#: Versions whose internals this module was checked against; bump together with the pins, after a review.
CHECKED_AGAINST: dict[str, str] = {
    "aiohttp": "3.14.5",
    "kubernetes-asyncio": "36.1.0",
}


class InternalChangedError(RuntimeError):
    """An internal of a pinned dependency that :mod:`sundial.kube.compat` relies on moved or disappeared."""

    def __init__(self, package: str, internal: str, function: str) -> None:
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            installed = "(not installed)"
        super().__init__(
            f"{package} {installed} (Sundial was checked against {CHECKED_AGAINST[package]}): {internal} "
            f"is gone or changed; review sundial.kube.compat.{function} for this {package} version"
        )
        self.package = package


# kubernetes_asyncio ----------------------------------------------------------------------------------------


def session_of(api_client: Any) -> aiohttp.ClientSession:
    """The aiohttp session behind a kubernetes_asyncio ``ApiClient`` (``api_client.rest_client.pool_manager``,
    not part of its documented API)."""
    session = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    if not isinstance(session, aiohttp.ClientSession):
        raise InternalChangedError("kubernetes-asyncio", "ApiClient.rest_client.pool_manager", "session_of")
    return session


# aiohttp ---------------------------------------------------------------------------------------------------


def distrust_environment(session: aiohttp.ClientSession) -> None:
    """Make an open session stop trusting the environment (proxy variables, netrc): aiohttp offers
    ``trust_env`` only as a constructor argument, so this sets its private ``_trust_env``."""
    if not isinstance(getattr(session, "_trust_env", None), bool):
        raise InternalChangedError("aiohttp", "ClientSession._trust_env", "distrust_environment")
    session._trust_env = False


def add_trace_config(session: aiohttp.ClientSession, trace: aiohttp.TraceConfig) -> None:
    """Add a (frozen) trace configuration to an open session: aiohttp takes them only as a constructor
    argument, and reads the private ``_trace_configs`` list on every request."""
    configs = getattr(session, "_trace_configs", None)
    if not isinstance(configs, list):
        raise InternalChangedError("aiohttp", "ClientSession._trace_configs (a list)", "add_trace_config")
    configs.append(trace)
