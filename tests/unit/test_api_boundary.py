"""Only :mod:`sundial.kube` talks to the API (issue 20): outside ``sundial/kube/`` no module imports
``kubernetes_asyncio`` (also an import-linter contract in ``pyproject.toml``) nor aiohttp's client. The runtime
serves its probes, ``/metrics`` and the webhook with ``aiohttp.web``: that, and only that, may be imported from
aiohttp there. import-linter sees only an external package's top level, hence this check of the syntax tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sundial

PACKAGE = Path(sundial.__file__).resolve().parent
KUBE = PACKAGE / "kube"
#: The one part of aiohttp the layers outside kube may use (its server).
SERVER = "web"


def _server(module: str) -> bool:
    """``aiohttp.web`` and its submodules (``aiohttp.web_request``, ...: the server's own modules)."""
    parts = module.split(".")
    return parts[0] == "aiohttp" and len(parts) > 1 and parts[1].startswith(SERVER)


def violations(source: str) -> list[str]:
    """Each use of the API client libraries in SOURCE, as ``line: what``."""
    tree = ast.parse(source)
    found: list[str] = []
    aliases: set[str] = set()  # names bound to the aiohttp package itself
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top == "kubernetes_asyncio":
                    found.append(f"{node.lineno}: import {alias.name}")
                elif alias.name == "aiohttp" or (top == "aiohttp" and alias.asname is None):
                    aliases.add(alias.asname or "aiohttp")  # ``import aiohttp.web`` binds ``aiohttp``
                    if alias.name != "aiohttp" and not _server(alias.name):
                        found.append(f"{node.lineno}: import {alias.name}")
                elif top == "aiohttp" and not _server(alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top == "kubernetes_asyncio":
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif node.module == "aiohttp":
                found.extend(
                    f"{node.lineno}: from aiohttp import {alias.name}" for alias in node.names if alias.name != SERVER
                )
            elif top == "aiohttp" and not _server(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr != SERVER
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def _outside_kube() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if KUBE not in path.parents)


def test_the_modules_outside_kube_are_found() -> None:
    names = {path.relative_to(PACKAGE).as_posix() for path in _outside_kube()}
    assert "runtime/serving/probes.py" in names
    assert "runtime/serving/access.py" in names
    assert not any(name.startswith("kube/") for name in names)


def test_only_kube_uses_the_api_client_libraries() -> None:
    found = {
        path.relative_to(PACKAGE).as_posix(): hits
        for path in _outside_kube()
        if (hits := violations(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"API client code outside sundial.kube (move the call into a sundial.kube module): {found}"


@pytest.mark.parametrize(
    "source",
    [
        "from aiohttp import web",
        "from aiohttp.web import Application",
        "import aiohttp.web\napp = aiohttp.web.Application()",
        "import aiohttp\nrunner = aiohttp.web.AppRunner",
        "from aiohttp.web_request import Request",
        "import logging\nlogging.getLogger('aiohttp.access')",
    ],
)
def test_the_server_is_allowed(source: str) -> None:
    assert violations(source) == []


@pytest.mark.parametrize(
    "source",
    [
        "import kubernetes_asyncio",
        "from kubernetes_asyncio import client",
        "from kubernetes_asyncio.client.exceptions import ApiException",
        "import kubernetes_asyncio.client as k",
        "def f():\n    from kubernetes_asyncio import client",
        "import aiohttp\nsession = aiohttp.ClientSession()",
        "import aiohttp\ntry:\n    pass\nexcept aiohttp.ClientError:\n    pass",
        "import aiohttp as http\nhttp.TCPConnector()",
        "from aiohttp import ClientSession",
        "from aiohttp import web, ClientTimeout",
        "from aiohttp.client import ClientSession",
        "import aiohttp.client",
    ],
)
def test_the_client_is_flagged(source: str) -> None:
    assert violations(source) != []
