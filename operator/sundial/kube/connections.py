"""An API client from a kubeconfig file (``--kubeconfig`` or ``KUBECONFIG``) or the in-cluster account."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config


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


def api_client(configuration: Any) -> Any:
    """An ``ApiClient`` bound to ``configuration``; close it with ``await client.close()``."""
    return client.ApiClient(configuration=configuration)
