"""Leases (``coordination.k8s.io/v1``): the record, its (de)serialisation and the compare-and-set calls.

Every write carries the resourceVersion that was read; a 409 (and, for an update, a 404) comes back as
:class:`sundial.kube.results.Conflict`, so the caller re-reads from the API instead of trusting a cache.
What a replica does with a record (acquire, renew, stand by, release) is decided in
:mod:`sundial.runtime.coordination.decisions` and carried out by
:class:`sundial.runtime.coordination.electors.LeaseElector` (DESIGN §7).

The Leases are made at run time, not by an install, so an uninstall would leave them behind. Each carries an
ownerReference instead (:class:`Owner`): the shard Leases to the operator's ServiceAccount, a member Lease to
its replica's pod, both learnt from a SelfSubjectReview (allowed to every authenticated user, no RBAC). When
``helm uninstall`` or ``kubectl delete -k`` deletes the ServiceAccount (and the pods), the garbage collector
deletes the Leases. A shard Lease made again later has another UID, so fencing tokens of the old one are
refused (docs/fencing.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import enum
import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes_asyncio import client

from sundial.kube import errors, requests, results
from sundial.model import names

logger = logging.getLogger(__name__)

#: The Lease UID no Lease has: a fencing token with it is stale for every Lease (the enforcement probe's).
NO_UID = "00000000-0000-0000-0000-000000000000"
#: Reason of the Warning Event on a shard Lease whose enforcement probe was admitted.
NOT_ENFORCED_REASON = "FencingNotEnforced"


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    """The spec of a Lease plus its resourceVersion (the compare-and-set token)."""

    holder: str | None
    duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str = ""
    uid: str = ""
    """``metadata.uid``: a recreated Lease has another one (the fencing token's last part)."""
    owners: tuple[Mapping[str, str], ...] = ()
    """``metadata.ownerReferences`` as read; a replace keeps them unless this replica knows its own."""


class Owner(enum.Enum):
    """What a Lease belongs to: the garbage collector deletes the Lease once its owner is gone."""

    SERVICE_ACCOUNT = "ServiceAccount"
    """The shard Leases: they outlive the pods (a restart keeps a shard's fencing tokens), not the install."""
    POD = "Pod"
    """A replica's member Lease: it goes with the pod, also when the pod could not delete it itself."""


#: ``userInfo.extra`` keys of a pod-bound ServiceAccount token (what the kubelet projects).
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
SERVICE_ACCOUNT_USER = "system:serviceaccount:"
#: After a failed SelfSubjectReview, the next try waits this long (seconds): at most one extra call a minute.
OWNER_RETRY_SECONDS = 60.0


def owner_references(user_info: Mapping[str, Any], namespace: str) -> dict[Owner, dict[str, str]]:
    """The ownerReferences a Lease in ``namespace`` may carry, from a SelfSubjectReview's ``userInfo``: the
    ServiceAccount (its UID is the user's) and the pod of a pod-bound token. None for any other user (a
    kubeconfig's), nor when the ServiceAccount lives in another namespace: the garbage collector treats a
    namespaced owner in another namespace as absent and would delete the Lease at once."""
    username = str(user_info.get("username") or "")
    if not username.startswith(SERVICE_ACCOUNT_USER):
        return {}
    account_namespace, _, account = username.removeprefix(SERVICE_ACCOUNT_USER).partition(":")
    if account_namespace != namespace or not account:
        return {}
    found: dict[Owner, dict[str, str]] = {}
    uid = str(user_info.get("uid") or "")
    if uid:
        found[Owner.SERVICE_ACCOUNT] = {"apiVersion": "v1", "kind": "ServiceAccount", "name": account, "uid": uid}
    extra = user_info.get("extra") or {}
    pod, pod_uid = (next(iter(extra.get(key) or []), "") for key in (POD_NAME_KEY, POD_UID_KEY))
    if pod and pod_uid:
        found[Owner.POD] = {"apiVersion": "v1", "kind": "Pod", "name": str(pod), "uid": str(pod_uid)}
    return found


class LeaseApi(Protocol):
    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None: ...

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict: ...

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict: ...


class ServerDates(Protocol):
    """Told the API server's ``Date`` header of each Lease LIST
    (:class:`sundial.runtime.coordination.clocks.ServerClock`)."""

    def wallclock(self) -> datetime: ...

    def observe(self, *, sent: datetime, received: datetime, date: datetime) -> None: ...


def header_date(headers: Mapping[str, str] | None) -> datetime | None:
    """The ``Date`` header of an answer as an aware UTC datetime; None when absent or unreadable."""
    raw = (headers or {}).get("Date") or (headers or {}).get("date")
    if not raw:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class LeaseListApi(LeaseApi, Protocol):
    """Also list the namespace's Leases and delete one (member discovery and clean-up, issue 8)."""

    async def list(self, *, namespace: str) -> dict[str, LeaseRecord]: ...

    async def delete(self, *, namespace: str, name: str, resource_version: str) -> None: ...


def _micro(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


def record_from(body: dict[str, Any]) -> LeaseRecord:
    spec = body.get("spec") or {}
    metadata = body.get("metadata") or {}
    return LeaseRecord(
        holder=spec.get("holderIdentity") or None,
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse(spec.get("acquireTime")),
        renew_time=_parse(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str(metadata.get("resourceVersion") or ""),
        uid=str(metadata.get("uid") or ""),
        owners=tuple(dict(ref) for ref in metadata.get("ownerReferences") or []),
    )


def body_from(
    *, namespace: str, name: str, record: LeaseRecord, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if record.owners:
        metadata["ownerReferences"] = [dict(ref) for ref in record.owners]
    if record.resource_version:
        metadata["resourceVersion"] = record.resource_version
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": record.holder,
            "leaseDurationSeconds": record.duration_seconds,
            "acquireTime": _micro(record.acquire_time),
            "renewTime": _micro(record.renew_time),
            "leaseTransitions": record.transitions,
        },
    }


class KubeLeaseApi:
    """:class:`LeaseApi` on the real API server.

    ``labels``: the labels of some Leases by name, written on every create and replace (the shard Leases carry
    ``sundial.dev/shard-lease: "<i>"``, by which the server-side fencing policy's binding finds them).
    ``owners``: the :class:`Owner` of some Leases by name, written as their ownerReference on every create and
    replace once a SelfSubjectReview told who this replica is (until then a replace keeps what the Lease had).
    ``dates``: told the ``Date`` header of every LIST answer (the clock check).
    """

    def __init__(
        self,
        *,
        api_client: Any,
        requester: requests.Requester,
        labels: Mapping[str, Mapping[str, str]] | None = None,
        owners: Mapping[str, Owner] | None = None,
        clock: Callable[[], float] = time.monotonic,
        dates: ServerDates | None = None,
    ) -> None:
        self._dates = dates
        self._client = api_client
        self._api: Any = client.CoordinationV1Api(api_client)
        self._core: Any = client.CoreV1Api(api_client)
        self._auth: Any = client.AuthenticationV1Api(api_client)
        self._req = requester
        self._labels = dict(labels or {})
        self._owners = dict(owners or {})
        self._clock = clock
        self._references: dict[Owner, dict[str, str]] | None = None  # None: not known yet
        self._next_review = 0.0

    def _record(self, value: Any) -> LeaseRecord:
        return record_from(self._client.sanitize_for_serialization(value))

    async def close(self) -> None:
        """Close the API client this object was given (the lease thread's own)."""
        await self._client.close()

    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None:
        try:
            body = await self._req.call(
                verb="get",
                resource="leases",
                request=lambda: self._api.read_namespaced_lease(
                    name, namespace, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.NotFoundError:
            return None
        return self._record(body)

    async def _owned(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        """``record`` with this replica's owner of Lease ``name`` (if it has one and it is known), else as is."""
        owner = self._owners.get(name)
        if owner is None:
            return record
        if self._references is None and self._clock() >= self._next_review:
            self._references = await self._review(namespace)
        reference = (self._references or {}).get(owner)
        return dataclasses.replace(record, owners=(reference,)) if reference else record

    async def _review(self, namespace: str) -> dict[Owner, dict[str, str]] | None:
        """Who this replica is (a SelfSubjectReview); None after a transient failure (tried again later)."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            review = await self._req.call(
                verb="create",
                resource="selfsubjectreviews",
                ok=201,
                request=lambda: self._auth.create_self_subject_review(body, _request_timeout=requests.REQUEST_TIMEOUT),
            )
        except errors.TransientError as error:
            self._next_review = self._clock() + OWNER_RETRY_SECONDS
            logger.warning("SelfSubjectReview failed (%s): the Leases get their owner later", error)
            return None
        except errors.KubeError as error:
            logger.warning("no SelfSubjectReview (%s): the Leases get no owner and stay after an uninstall", error)
            return {}
        user = (self._client.sanitize_for_serialization(review).get("status") or {}).get("userInfo") or {}
        found = owner_references(user, namespace)
        logger.info("Lease owners: %s", ", ".join(f"{r['kind']}/{r['name']}" for r in found.values()) or "none")
        return found

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        body = body_from(
            namespace=namespace,
            name=name,
            record=dataclasses.replace(await self._owned(namespace, name, record), resource_version=""),
            labels=self._labels.get(name),
        )
        try:
            created = await self._req.call(
                verb="create",
                resource="leases",
                ok=201,
                request=lambda: self._api.create_namespaced_lease(
                    namespace, body, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.ConflictError:
            return results.Conflict()
        return self._record(created)

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        owned = await self._owned(namespace, name, record)
        body = body_from(namespace=namespace, name=name, record=owned, labels=self._labels.get(name))
        try:
            replaced = await self._req.call(
                verb="update",
                resource="leases",
                request=lambda: self._api.replace_namespaced_lease(
                    name, namespace, body, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except (errors.ConflictError, errors.NotFoundError):
            return results.Conflict()
        return self._record(replaced)

    async def list(self, *, namespace: str) -> dict[str, LeaseRecord]:
        """Every Lease of the namespace by name (one consistent read); its ``Date`` header goes to ``dates``."""
        sent = self._dates.wallclock() if self._dates is not None else None
        listing, _, headers = await self._req.call(
            verb="list",
            resource="leases",
            request=lambda: self._api.list_namespaced_lease_with_http_info(
                namespace, _request_timeout=requests.REQUEST_TIMEOUT
            ),
        )
        date = header_date(headers)
        if self._dates is not None and sent is not None and date is not None:
            self._dates.observe(sent=sent, received=self._dates.wallclock(), date=date)
        body = self._client.sanitize_for_serialization(listing)
        found: dict[str, LeaseRecord] = {}
        for item in body.get("items") or []:
            name = str((item.get("metadata") or {}).get("name") or "")
            if name:
                found[name] = record_from(item)
        return found

    async def delete(self, *, namespace: str, name: str, resource_version: str) -> None:
        """Delete a Lease if it is still at ``resource_version`` (404 and 409 are ignored)."""
        options = {"preconditions": {"resourceVersion": resource_version}}
        with contextlib.suppress(errors.NotFoundError, errors.ConflictError):
            await self._req.call(
                verb="delete",
                resource="leases",
                request=lambda: self._api.delete_namespaced_lease(
                    name, namespace, body=options, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )

    async def probe_fencing(self, *, namespace: str, name: str, shard: int, transitions: int) -> bool:
        """Is the fencing policy enforced for this replica? A dry-run (``dryRun=All``: nothing is stored) Event
        create in the Lease namespace under a token the policy must refuse (this shard, the Lease's current
        transitions, a UID no Lease has). True: refused by the configured policy (:func:`errors.is_fenced`);
        False: admitted. Any other failure raises (a 403 of something else: :class:`errors.ForbiddenError`)."""
        token = names.fencing_token(shard, transitions, NO_UID)
        body = _event(namespace, name, "Normal", "FencingProbe", "a dry-run write the fencing policy must refuse")
        body["metadata"]["annotations"] = {names.FENCING_TOKEN_ANNOTATION: token}
        try:
            await self._req.call(
                verb="create",
                resource="events",
                ok=201,
                request=lambda: self._core.create_namespaced_event(
                    namespace, body, dry_run="All", _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.FencedError:
            return True
        return False

    async def warn(self, *, namespace: str, name: str, reason: str, message: str) -> None:
        """A Warning Event on the Lease ``name`` (best effort: failures are the caller's to log)."""
        body = _event(namespace, name, "Warning", reason, message)
        await self._req.call(
            verb="create",
            resource="events",
            ok=201,
            request=lambda: self._core.create_namespaced_event(
                namespace, body, _request_timeout=requests.REQUEST_TIMEOUT
            ),
        )


def _event(namespace: str, lease: str, type_: str, reason: str, message: str) -> dict[str, Any]:
    now = _micro(datetime.now(UTC))
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{lease}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "name": lease,
            "namespace": namespace,
        },
        "type": type_,
        "reason": reason,
        "message": message,
        "source": {"component": "sundial"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
