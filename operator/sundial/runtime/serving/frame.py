"""kopf as the admission webhook's server only (DESIGN §12.1: kopf watches nothing).

Every object comes in through Sundial's own informers (:mod:`sundial.runtime.watch`). kopf runs only to serve the
validating webhook (:mod:`sundial.runtime.serving.admission`), with:

* event posting off (``settings.posting.enabled = False``): kopf posts no log lines as Events; our Events are
  explicit API calls. Peering off (standalone): Leases coordinate replicas.
* cluster scanning off (``settings.scanning.disabled = True``): kopf would otherwise LIST/WATCH
  CustomResourceDefinitions and Namespaces cluster-wide, which the shipped RBAC does not grant.
* an explicit ``@kopf.on.login`` with the same credentials as our own client (kopf discovers the resource its
  validating handler names).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import kopf


async def connection_info(configuration: Any) -> Any:
    """kopf credentials from the kubernetes_asyncio configuration our own client uses."""
    header = configuration.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):
        header = await header
    parts = header.split(" ", 1) if header else []
    scheme, token = (None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def operator_settings() -> Any:
    """kopf settings: no Event posting, no peering, no cluster scanning."""
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.posting.loggers = False
    settings.peering.standalone = True
    settings.peering.mandatory = False
    settings.scanning.disabled = True
    return settings


def registry(*, configuration: Any, on_login: Callable[[], None] = lambda: None) -> Any:
    """A fresh kopf registry (no module-level handlers) with only the login: no watching handler of any kind."""
    reg = kopf.OperatorRegistry()

    @kopf.on.login(registry=reg)
    async def login(**_: Any) -> Any:
        info = await connection_info(configuration)
        on_login()
        return info

    return reg
