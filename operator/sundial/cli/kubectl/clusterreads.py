"""Where ``kubectl sundial check`` reads the cluster (its :class:`~.checks.Reads`): :class:`KubectlReads`
through kubectl with the user's global flags (the default), or :func:`in_cluster`, the pod's service account
through Sundial's own client (:mod:`sundial.kube.installreads`, loaded only then): the chart's ``helm test`` pod
runs the check from the operator image, which has no kubectl.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from sundial.cli.kubectl.runner import Kubectl, LoginError, PluginError, UnreachableError

T = TypeVar("T")


class KubectlReads:
    """The checks' reads as kubectl calls (``kubectl get -o json``, ``kubectl create --dry-run=server``)."""

    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl
        self.namespace = kubectl.namespace

    def crd(self, name: str) -> dict[str, Any] | None:
        try:
            return self.kubectl.get_json("customresourcedefinition", name, namespaced=False)
        except PluginError as error:
            if "NotFound" in str(error) or "not found" in str(error):
                return None
            raise

    def items(
        self, kind: str, *, namespace: str | None = None, selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        args = [kind, f"--namespace={namespace}" if namespace else "--all-namespaces"]
        if selector:
            args += ["-l", selector]
        if field_selector:
            args.append(f"--field-selector={field_selector}")
        found: list[dict[str, Any]] = self.kubectl.get_json(*args, namespaced=False).get("items") or []
        return found

    def dry_run(self, body: Mapping[str, Any]) -> None:
        self.kubectl.run("create", "--dry-run=server", "-o", "name", "-f", "-", stdin=json.dumps(body))


class ApiReads:
    """The checks' reads through :class:`sundial.kube.installreads.InstallReads` on an event loop of its own;
    the client's errors become the plugin's (unreachable, refused login, or the server's message)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, reads: Any, *, namespace: str) -> None:
        self._loop = loop
        self._reads = reads
        self.namespace: str | None = namespace

    def _wait(self, pending: Awaitable[T]) -> T:
        from sundial.kube import errors  # noqa: PLC0415 - the client, only with --in-cluster

        try:
            return self._loop.run_until_complete(pending)
        except errors.KubeError as error:
            if isinstance(error, errors.TransientError) and error.code == 0:
                raise UnreachableError(f"the cluster is unreachable: {error.message}") from None
            if error.code == 401:
                raise LoginError(f"the cluster refused the pod's service account token: {error.message}") from None
            raise PluginError(error.message or str(error)) from None

    def crd(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._wait(self._reads.crd(name))
        return found

    def items(
        self, kind: str, *, namespace: str | None = None, selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        from sundial.kube import installreads  # noqa: PLC0415 - the client, only with --in-cluster

        listing = installreads.Listing(kind)
        found: list[dict[str, Any]] = self._wait(
            self._reads.items(listing, namespace=namespace, selector=selector, field_selector=field_selector)
        )
        return found

    def dry_run(self, body: Mapping[str, Any]) -> None:
        assert self.namespace is not None
        self._wait(self._reads.dry_run_create(namespace=self.namespace, body=body))


@contextmanager
def in_cluster(*, namespace: str | None) -> Iterator[ApiReads]:
    """:class:`ApiReads` with the pod's service account; the dry run is made in NAMESPACE (default: the pod's
    own namespace, as kubectl would in a pod). Raises :class:`~.runner.LoginError` outside a pod."""
    from sundial.kube import connections, installreads  # noqa: PLC0415 - the client, only with --in-cluster

    loop = asyncio.new_event_loop()
    try:
        try:
            api = loop.run_until_complete(installreads.in_cluster())
        except connections.LoginError as error:
            raise LoginError(str(error)) from None
        try:
            where = namespace or installreads.pod_namespace()
            yield ApiReads(loop, installreads.InstallReads(api), namespace=where)
        finally:
            loop.run_until_complete(api.close())
    finally:
        loop.close()
