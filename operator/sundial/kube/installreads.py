"""What ``kubectl sundial check --in-cluster`` reads, through the operator's own client instead of kubectl: the
CRDs, the operator's Deployments and pods, the fencing policies and bindings, the shard Leases and their
Events, and the webhook check's one server-side dry run (``dryRun=All``: nothing is stored).

The chart's ``helm test`` pod runs the check from the operator image, which has no kubectl; it authenticates
with the pod's service account (:func:`in_cluster`). Failures raise as :func:`sundial.kube.errors.classify`
makes them (a :class:`~sundial.kube.errors.KubeError`; the denial text of a webhook is redacted there, its
head, naming the webhook, stays).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config

from sundial.kube import connections, errors, objects


class Listing(enum.Enum):
    """The lists the check reads; the value is the resource's plural."""

    DEPLOYMENTS = "deployments"
    PODS = "pods"
    LEASES = "leases"
    EVENTS = "events"
    POLICIES = "validatingadmissionpolicies"
    BINDINGS = "validatingadmissionpolicybindings"


async def in_cluster() -> Any:
    """An ``ApiClient`` with the pod's service account (token, CA, ``KUBERNETES_SERVICE_HOST``); close it with
    ``await api.close()``. Raises :class:`sundial.kube.connections.LoginError` outside a pod."""
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except config.ConfigException as error:
        raise connections.LoginError(f"not in a pod with a service account: {error}") from error
    return connections.api_client(configuration)


#: The pod's namespace, as the kubelet mounts it beside the service account's token.
NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def pod_namespace(path: Path = NAMESPACE_FILE) -> str:
    """The namespace of the pod this runs in (from the service account's mount)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise connections.LoginError(f"not in a pod with a service account: {error}") from error


class InstallReads:
    """The check's calls on one ``ApiClient``; each gives up after ``timeout`` seconds."""

    def __init__(self, api_client: Any, *, timeout: float = 10.0) -> None:
        self._extensions = client.ApiextensionsV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._coordination = client.CoordinationV1Api(api_client)
        self._admission = client.AdmissionregistrationV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._timeout = timeout

    async def _json(self, pending: Awaitable[Any]) -> dict[str, Any]:
        try:
            return await objects.raw_json(pending)
        except Exception as error:
            classified = errors.classify(error)
            if classified is None:
                raise
            raise classified from None

    def _options(self, **query: str | None) -> dict[str, Any]:
        chosen = {key: value for key, value in query.items() if value}
        return {**chosen, "_request_timeout": self._timeout, "_preload_content": False}

    async def crd(self, name: str) -> dict[str, Any] | None:
        """The CustomResourceDefinition NAME, None when it does not exist."""
        try:
            return await self._json(self._extensions.read_custom_resource_definition(name, **self._options()))
        except errors.NotFoundError:
            return None

    async def items(
        self,
        listing: Listing,
        *,
        namespace: str | None = None,
        selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """The objects of LISTING (in NAMESPACE, or all namespaces for Deployments without one) that match the
        label SELECTOR and the FIELD_SELECTOR."""
        options = self._options(label_selector=selector, field_selector=field_selector)
        if listing is Listing.DEPLOYMENTS and not namespace:
            return await self._list(self._apps.list_deployment_for_all_namespaces(**options))
        namespaced: dict[Listing, Callable[..., Awaitable[Any]]] = {
            Listing.DEPLOYMENTS: self._apps.list_namespaced_deployment,
            Listing.PODS: self._core.list_namespaced_pod,
            Listing.EVENTS: self._core.list_namespaced_event,
            Listing.LEASES: self._coordination.list_namespaced_lease,
        }
        if listing in namespaced:
            if not namespace:
                raise ValueError(f"namespace: {listing.value} are listed in one namespace; none was given")
            return await self._list(namespaced[listing](namespace, **options))
        scoped: dict[Listing, Callable[..., Awaitable[Any]]] = {
            Listing.POLICIES: self._admission.list_validating_admission_policy,
            Listing.BINDINGS: self._admission.list_validating_admission_policy_binding,
        }
        return await self._list(scoped[listing](**options))

    async def _list(self, pending: Awaitable[Any]) -> list[dict[str, Any]]:
        body = await self._json(pending)
        found: list[dict[str, Any]] = body.get("items") or []
        return found

    async def dry_run_create(self, *, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """A server-side dry run (``dryRun=All``) of creating the ScheduledJob BODY in NAMESPACE: admission runs
        (the webhook too), nothing is stored. The object as it would have been stored."""
        group, _, version = str(body["apiVersion"]).partition("/")
        pending = self._custom.create_namespaced_custom_object(
            group, version, namespace, "scheduledjobs", dict(body), **self._options(dry_run="All")
        )
        return await self._json(pending)
