"""Jobs, ScheduledJobs (status compare-and-set: a merge patch of the owned fields) and Events: the calls
the reconciler makes."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from sundial import model
from sundial.kube import codec, errors, jobdeletes, requests, results, wire
from sundial.kube.ownership import controller_uid, same_attempt
from sundial.model import names

_SJ = (model.resource.GROUP, model.resource.VERSION)
#: Event messages are cut to this many characters (as events.k8s.io limits a note to 1 kB).
MAX_EVENT_MESSAGE = 1024


def _timestamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


async def raw_json(pending: Awaitable[Any]) -> dict[str, Any]:
    """The JSON body of a generated-client call made with ``_preload_content=False``, as plain dicts.

    The generated client would build model objects from the response (and we would turn them back into
    dicts): under load that round trip costs more CPU than the HTTP request itself (docs/benchmarks.md).
    Non-2xx answers raise the same :class:`ApiException` the client raises, so classification is unchanged.
    """
    response = await pending
    try:
        data = await response.read()
    finally:
        response.release()
    raise_for(response, data)
    # A body orjson refuses for its depth alone (a tenant's deeply nested ScheduledJob) is decoded off the loop.
    body: dict[str, Any] = await codec.decode(data) if data else {}
    return body


def raise_for(response: Any, data: bytes) -> None:
    """Raise the generated client's :class:`ApiException` for a non-2xx RESPONSE whose body is DATA."""
    if not 200 <= response.status <= 299:
        error = ApiException(status=response.status, reason=response.reason)
        text: Any = data.decode("utf-8", errors="replace")  # as the generated client leaves it (a str)
        error.body = text
        error.headers = response.headers
        raise error


class ObjectsApi:
    """Typed calls on Jobs, ScheduledJobs and Events. Every call is rate-limited and instrumented."""

    def __init__(self, *, api_client: Any, requester: requests.Requester) -> None:
        self._req = requester
        self._batch: Any = client.BatchV1Api(api_client)
        self._core: Any = client.CoreV1Api(api_client)
        self._custom: Any = client.CustomObjectsApi(api_client)
        self._wire: Any = wire.Wire(api_client)

    async def warm(self, count: int) -> None:
        """Open COUNT connections ahead of a burst of requests (:meth:`sundial.kube.wire.Wire.warm`)."""
        await self._wire.warm(count)

    # ScheduledJobs -----------------------------------------------------------------------------------

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as the API has it now (never a cache); None if it is gone."""
        try:
            body: dict[str, Any] = await self._req.call(
                verb="get",
                resource=model.resource.PLURAL,
                request=lambda: self._custom.get_namespaced_custom_object(
                    *_SJ, namespace, model.resource.PLURAL, name, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.NotFoundError:
            return None
        return body

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult:
        """Write the status subresource as compare-and-set (the claim): a JSON merge patch of the fields this
        version owns (:func:`sundial.model.resource.status_patch`) with ``metadata.resourceVersion`` as its
        precondition (409 when the object moved). Never a PUT of the whole status: status fields of a newer
        version (a rollback, a rolling update) are not in the patch, so the API server keeps them."""
        body = {
            "metadata": {"resourceVersion": resource_version},
            "status": model.resource.status_patch(status),
        }
        try:
            written: dict[str, Any] = await self._req.call(
                verb="patch",
                resource=f"{model.resource.PLURAL}/status",
                request=lambda: raw_json(
                    self._wire.send(
                        "PATCH",
                        wire.path("apis", *_SJ, "namespaces", namespace, model.resource.PLURAL, name, "status"),
                        body,
                        content_type=wire.MERGE_PATCH,
                        timeout=requests.REQUEST_TIMEOUT,
                    )
                ),
            )
        except errors.ConflictError:
            return results.Conflict()
        except errors.NotFoundError:
            return results.Gone()
        return results.Written(body=written)

    async def delete_scheduled_job(
        self, *, namespace: str, name: str, uid: str, resource_version: str = ""
    ) -> results.DeleteResult:
        """Delete (``ttlSecondsAfterFinished``) only the object the decision was made on: its UID and, when
        given, the ``resourceVersion`` the pass last wrote or read (a 409 if the user changed it meanwhile)."""
        preconditions = {"uid": uid} | ({"resourceVersion": resource_version} if resource_version else {})
        options = {"preconditions": preconditions, "propagationPolicy": "Background"}
        try:
            await self._req.call(
                verb="delete",
                resource=model.resource.PLURAL,
                request=lambda: self._custom.delete_namespaced_custom_object(
                    *_SJ,
                    namespace,
                    model.resource.PLURAL,
                    name,
                    body=options,
                    _request_timeout=requests.REQUEST_TIMEOUT,
                ),
            )
        except errors.NotFoundError:
            return results.Done()
        except errors.ConflictError:
            return results.Conflict()
        return results.Done()

    # Jobs --------------------------------------------------------------------------------------------

    async def get_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            body = await self._req.call(
                verb="get",
                resource="jobs",
                request=lambda: raw_json(
                    self._batch.read_namespaced_job(
                        name, namespace, _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                    )
                ),
            )
        except errors.NotFoundError:
            return None
        return body

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        """Create a Job. AlreadyExists: adopt it if ``owner_uid`` controls it *and* it is this run's attempt (the
        idempotency key, scheduled time and attempt annotations of ``manifest``), else report it unexpected: a
        controller ownerReference is easy to copy (UIDs are readable), so the UID alone adopts nothing.
        ``encoded``: ``manifest`` already encoded as JSON (sent as it is)."""
        try:
            body = await self._req.call(
                verb="create",
                resource="jobs",
                ok=201,
                request=lambda: raw_json(
                    self._wire.send(
                        "POST",
                        wire.path("apis", "batch", "v1", "namespaces", namespace, "jobs"),
                        manifest if encoded is None else encoded,
                        timeout=requests.REQUEST_TIMEOUT,
                    )
                ),
            )
        except errors.InvalidError as error:
            return results.Invalid(message=error.message or error.reason)
        except errors.ConflictError:
            name = str((manifest.get("metadata") or {}).get("name", ""))
            existing = await self.get_job(namespace=namespace, name=name)
            if existing is None:  # deleted in between: a retry of the pass will create it again
                raise errors.TransientError(code=409, reason="AlreadyExists", message="vanished on read") from None
            owner = controller_uid(existing)
            if owner == owner_uid and same_attempt(existing, manifest):
                return results.Adopted(body=existing)
            return results.Unexpected(owner_uid=owner)
        return results.Created(body=body)

    async def delete_job(
        self,
        *,
        namespace: str,
        name: str,
        uid: str,
        resource_version: str = "",
        label: str = "",
        shard: str = "",
        token: str = "",
    ) -> results.DeleteResult:
        """Delete the Job of this UID as seen (its ``sundial.dev/shard`` ``label`` and ``resource_version``), first
        relabelled to ``shard`` under ``token`` when the label differs: :func:`sundial.kube.jobdeletes.delete`.
        Only observed Jobs are deleted: an empty ``uid`` is refused (``ValueError``), no delete by name alone."""
        if not uid:
            raise ValueError(f"deleting Job {namespace}/{name} needs its UID (a delete precondition)")
        job = jobdeletes.Target(namespace=namespace, name=name, uid=uid, shard=shard, token=token)
        read = functools.partial(self.get_job, namespace=namespace, name=name)
        first = jobdeletes.Seen(label=label, resource_version=resource_version)
        return await jobdeletes.delete(self._batch, self._req, job, first, read=read, decode=raw_json)

    # Events ------------------------------------------------------------------------------------------

    async def create_event(
        self,
        *,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        first: datetime,
        last: datetime,
        count: int,
        instance: str,
        fencing_token: str = "",
    ) -> str:
        """A core/v1 Event on the ScheduledJob (reportingComponent ``sundial``); returns its name.

        ``count`` occurrences between ``first`` and ``last``: an Event series (``kubectl describe`` shows
        "(x<count> over <last - first>)"), continued by :meth:`patch_event`. ``fencing_token`` goes in the
        ``sundial.dev/fencing-token`` annotation (checked by the server-side fencing policy).
        """
        metadata: dict[str, Any] = {"generateName": f"{involved.name}.", "namespace": involved.namespace}
        if fencing_token:
            metadata["annotations"] = {names.FENCING_TOKEN_ANNOTATION: fencing_token}
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": metadata,
            "involvedObject": {
                "apiVersion": f"{model.resource.GROUP}/{model.resource.VERSION}",
                "kind": model.resource.KIND,
                "name": involved.name,
                "namespace": involved.namespace,
                "uid": involved.uid,
                "resourceVersion": involved.resource_version,
            },
            "type": type_,
            "reason": reason,
            "message": message[:MAX_EVENT_MESSAGE],
            "firstTimestamp": _timestamp(first),
            "lastTimestamp": _timestamp(last),
            "count": count,
            "source": {"component": "sundial"},
            "reportingComponent": "sundial",
            "reportingInstance": instance[:128],
        }
        created = await self._req.call(
            verb="create",
            resource="events",
            ok=201,
            request=lambda: raw_json(
                self._core.create_namespaced_event(
                    involved.namespace, body, _request_timeout=requests.REQUEST_TIMEOUT, _preload_content=False
                )
            ),
        )
        return str((created.get("metadata") or {}).get("name", ""))

    async def patch_event(
        self,
        *,
        namespace: str,
        name: str,
        count: int,
        last_timestamp: datetime,
        message: str,
        fencing_token: str = "",
    ) -> results.PatchResult:
        """Continue an Event series: a merge patch of ``count``, ``lastTimestamp`` and ``message`` (and the
        writer's fencing token: the Event may have been created under an older one).

        :class:`results.Gone` when the Event no longer exists (the API server's Event TTL, 1 h by default).
        """
        patch: dict[str, Any] = {
            "count": count,
            "lastTimestamp": _timestamp(last_timestamp),
            "message": message[:MAX_EVENT_MESSAGE],
        }
        if fencing_token:
            patch["metadata"] = {"annotations": {names.FENCING_TOKEN_ANNOTATION: fencing_token}}
        try:
            await self._req.call(
                verb="patch",
                resource="events",
                request=lambda: raw_json(
                    self._core.patch_namespaced_event(
                        name,
                        namespace,
                        patch,
                        _content_type="application/merge-patch+json",
                        _request_timeout=requests.REQUEST_TIMEOUT,
                        _preload_content=False,
                    )
                ),
            )
        except errors.NotFoundError:
            return results.Gone()
        return results.Done()
