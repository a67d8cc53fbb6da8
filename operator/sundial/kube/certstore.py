"""The webhook serving certificate's Secret and the ValidatingWebhookConfiguration whose ``caBundle``
trusts it: the reads and writes of :mod:`sundial.runtime.serving.certrotators`, which decides what to
write and when (and which Secret and configuration: RBAC scopes them by ``resourceNames``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes_asyncio import client

from sundial.kube import errors, objects, requests


class CertStoreApi:
    """Every call through the operator's rate-limited requester, answered as plain dicts."""

    def __init__(self, *, api_client: Any, requester: requests.Requester) -> None:
        self._core: Any = client.CoreV1Api(api_client)
        self._admission: Any = client.AdmissionregistrationV1Api(api_client)
        self._req = requester

    async def get_secret(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        """The Secret as stored now (never a cache); None when it does not exist."""
        try:
            return await self._req.call(
                verb="get",
                resource="secrets",
                request=lambda: objects.raw_json(
                    self._core.read_namespaced_secret(
                        name, namespace, _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                    )
                ),
            )
        except errors.NotFoundError:
            return None

    async def create_secret(self, *, namespace: str, body: Mapping[str, Any]) -> None:
        """Create the Secret; :class:`sundial.kube.errors.ConflictError` if it exists already."""
        await self._req.call(
            verb="create",
            resource="secrets",
            ok=201,
            request=lambda: objects.raw_json(
                self._core.create_namespaced_secret(
                    namespace, dict(body), _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                )
            ),
        )

    async def replace_secret(self, *, namespace: str, name: str, body: Mapping[str, Any]) -> None:
        """Update the Secret at BODY's ``resourceVersion`` (compare-and-set):
        :class:`sundial.kube.errors.ConflictError` when it moved on."""
        await self._req.call(
            verb="update",
            resource="secrets",
            request=lambda: objects.raw_json(
                self._core.replace_namespaced_secret(
                    name, namespace, dict(body), _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                )
            ),
        )

    async def get_webhook_configuration(self, name: str) -> dict[str, Any] | None:
        """The ValidatingWebhookConfiguration NAME; None when it does not exist."""
        try:
            return await self._req.call(
                verb="get",
                resource="validatingwebhookconfigurations",
                request=lambda: objects.raw_json(
                    self._admission.read_validating_webhook_configuration(
                        name, _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                    )
                ),
            )
        except errors.NotFoundError:
            return None

    async def patch_webhook_configuration(self, name: str, patch: Sequence[Mapping[str, Any]]) -> None:
        """Apply a JSON patch to the ValidatingWebhookConfiguration NAME."""
        await self._req.call(
            verb="patch",
            resource="validatingwebhookconfigurations",
            request=lambda: objects.raw_json(
                self._admission.patch_validating_webhook_configuration(
                    name, list(patch), _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                )
            ),
        )
