"""Leases (``coordination.k8s.io/v1``): compare-and-set calls and the monotonic-clock elector (DESIGN §7).

Discipline borrowed from Patroni's ``dcs/kubernetes.py``: every write carries the resourceVersion that was
read; a 409 means "re-read from the API", never "trust the cache"; and an update whose outcome is unknown
(timeout) might have succeeded — the next read shows it, and the holder-is-me path continues from there
without counting a transition.

A Lease is an optimisation, not a guarantee: the elector only says whether *this* replica may act right
now — it holds the lease AND its last successful renewal, measured on the local monotonic clock from the
moment *before* the renewal request was sent, is younger than ``renew_deadline`` (< ``lease_duration``).
Other replicas wait ``lease_duration`` after they last *saw the record change* (also on their own monotonic
clock), so wall-clock skew between nodes never shortens the safety gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from kubernetes_asyncio import client

from sundial.kube import errors, requests, results

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    """The spec of a Lease plus its resourceVersion (the compare-and-set token)."""

    holder: str | None
    duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int
    resource_version: str = ""


class LeaseApi(Protocol):
    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None: ...

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict: ...

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict: ...


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
    return LeaseRecord(
        holder=spec.get("holderIdentity") or None,
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=_parse(spec.get("acquireTime")),
        renew_time=_parse(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str((body.get("metadata") or {}).get("resourceVersion") or ""),
    )


def body_from(*, namespace: str, name: str, record: LeaseRecord) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
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
    """:class:`LeaseApi` on the real API server."""

    def __init__(self, *, api_client: Any, requester: requests.Requester) -> None:
        self._client = api_client
        self._api: Any = client.CoordinationV1Api(api_client)
        self._req = requester

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
        except errors.KubeError as error:
            if error.code == 404:
                return None
            raise
        return self._record(body)

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        body = body_from(namespace=namespace, name=name, record=dataclasses.replace(record, resource_version=""))
        try:
            created = await self._req.call(
                verb="create",
                resource="leases",
                ok=201,
                request=lambda: self._api.create_namespaced_lease(
                    namespace, body, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.KubeError as error:
            if error.code == 409:
                return results.Conflict()
            raise
        return self._record(created)

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        body = body_from(namespace=namespace, name=name, record=record)
        try:
            replaced = await self._req.call(
                verb="update",
                resource="leases",
                request=lambda: self._api.replace_namespaced_lease(
                    name, namespace, body, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.KubeError as error:
            if error.code in (409, 404):
                return results.Conflict()
            raise
        return self._record(replaced)

    async def list(self, *, namespace: str) -> dict[str, LeaseRecord]:
        """Every Lease of the namespace by name (one consistent read)."""
        listing = await self._req.call(
            verb="list",
            resource="leases",
            request=lambda: self._api.list_namespaced_lease(namespace, _request_timeout=requests.REQUEST_TIMEOUT),
        )
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
        try:
            await self._req.call(
                verb="delete",
                resource="leases",
                request=lambda: self._api.delete_namespaced_lease(
                    name, namespace, body=options, _request_timeout=requests.REQUEST_TIMEOUT
                ),
            )
        except errors.KubeError as error:
            if error.code not in (404, 409):
                raise


class Unread:
    """Marker type: :meth:`LeaseElector.tick` reads the Lease itself."""


UNREAD = Unread()


def _utcnow() -> datetime:
    return datetime.now(UTC)


class LeaseElector:
    """Acquires and renews one Lease; says whether this replica may act right now."""

    def __init__(
        self,
        *,
        api: LeaseApi,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        clock: Callable[[], float] = time.monotonic,
        wallclock: Callable[[], datetime] = _utcnow,
    ) -> None:
        if not 0 < retry_period < renew_deadline < lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self._api = api
        self._duration = lease_duration
        self._deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._wall = wallclock
        self._record: LeaseRecord | None = None  # last record we wrote as the holder
        self._renewed_at: float | None = None  # monotonic time before the last successful renewal
        self._observed: LeaseRecord | None = None  # another holder's record, as last seen
        self._observed_at = 0.0
        self.terms = 0
        """Incremented each time holding starts (again): after an acquisition, or a renewal past the deadline."""

    @property
    def holding(self) -> bool:
        """True while our last successful renewal is younger than the renew deadline (monotonic clock)."""
        return self._renewed_at is not None and self._clock() - self._renewed_at < self._deadline

    @property
    def transitions(self) -> int:
        """``leaseTransitions`` of the record we hold: the fencing token's second part."""
        return self._record.transitions if self._record is not None else 0

    def _lose(self) -> None:
        self._renewed_at = None

    def _won(self, record: LeaseRecord, started: float) -> bool:
        if not self.holding:
            self.terms += 1
        self._record = record
        self._renewed_at = started
        return True

    @property
    def record(self) -> LeaseRecord | None:
        """The record we last wrote as the holder (None once released)."""
        return self._record

    def observe(self, current: LeaseRecord | None, started: float) -> None:
        """Note another holder's record read elsewhere (e.g. a LIST) at monotonic time ``started``.

        Keeps the expiry timing current while this replica does not try to acquire the Lease, so that once
        it is asked to (its owner died), it waits only for the rest of the lease duration, not a new one.
        """
        if current is None or current.holder is None or current.holder == self.identity:
            return
        if self._observed is None or _changed(self._observed, current):
            self._observed = current
            self._observed_at = started

    def stop(self) -> None:
        """Stop acting at once (:attr:`holding` becomes False); the Lease stays ours until :meth:`release`."""
        self._lose()

    async def tick(self, *, current: LeaseRecord | Unread | None = UNREAD, started: float | None = None) -> bool:
        """One acquire-or-renew attempt. Returns :attr:`holding` afterwards.

        ``current``: the Lease as just read by the caller (e.g. from a LIST whose monotonic start time is
        ``started``), saving a GET; by default the Lease is read here. A stale record only costs a 409.
        """
        if started is None:
            started = self._clock()
        try:
            if isinstance(current, Unread):
                current = await self._api.get(namespace=self.namespace, name=self.name)
            return await self._attempt(started, current)
        except errors.KubeError as error:
            # Outcome unknown (e.g. a timed-out update that may have succeeded): keep the old renewal time;
            # the renew deadline ends our acting on its own, and the next read tells what happened.
            logger.warning("lease %s/%s: %s", self.namespace, self.name, error)
            return self.holding

    async def _attempt(self, started: float, current: LeaseRecord | None) -> bool:
        now = self._wall()
        duration = max(1, round(self._duration))
        if current is None:
            fresh = LeaseRecord(
                holder=self.identity,
                duration_seconds=duration,
                acquire_time=now,
                renew_time=now,
                transitions=0,
            )
            created = await self._api.create(namespace=self.namespace, name=self.name, record=fresh)
            if isinstance(created, results.Conflict):
                self._lose()
                return False
            return self._won(created, started)

        if current.holder is not None and current.holder != self.identity:
            if self._observed is None or _changed(self._observed, current):
                self._observed = current
                self._observed_at = started
            expires = self._observed_at + max(current.duration_seconds, 1)
            if started < expires:
                self._lose()
                return False

        takeover = current.holder != self.identity
        wanted = dataclasses.replace(
            current,
            holder=self.identity,
            duration_seconds=duration,
            renew_time=now,
            acquire_time=now if takeover else current.acquire_time,
            transitions=current.transitions + 1 if takeover else current.transitions,
        )
        replaced = await self._api.replace(namespace=self.namespace, name=self.name, record=wanted)
        if isinstance(replaced, results.Conflict):
            self._lose()  # someone else moved first; the next tick re-reads from the API
            return False
        if takeover:
            logger.info("lease %s/%s acquired (transitions=%d)", self.namespace, self.name, replaced.transitions)
        return self._won(replaced, started)

    async def release(self) -> bool:
        """Stop acting first, then empty the holder so another replica takes over at once.

        Works after :meth:`stop` too. The write carries the resourceVersion we last wrote; on a 409 the Lease
        is re-read and emptied only if it still names us (e.g. our last renewal timed out yet went
        through), so a Lease someone else took over is never touched. True: released (or not ours anyway);
        False: the write failed, the Lease expires on its own.
        """
        record = self._record
        self._lose()
        if record is None:
            return True
        wall = self._wall()
        try:
            released = await self._api.replace(namespace=self.namespace, name=self.name, record=_emptied(record, wall))
            if isinstance(released, results.Conflict):
                current = await self._api.get(namespace=self.namespace, name=self.name)
                if current is not None and current.holder == self.identity:
                    released = await self._api.replace(
                        namespace=self.namespace, name=self.name, record=_emptied(current, wall)
                    )
                    if isinstance(released, results.Conflict):
                        return False
        except (TimeoutError, errors.KubeError) as error:
            logger.warning("lease %s/%s: release failed: %s", self.namespace, self.name, error)
            return False
        self._record = None
        return True

    async def run(self, stopping: asyncio.Event, on_change: Callable[[bool], None]) -> None:
        """Tick every ``retry_period`` until ``stopping`` is set; report holding changes."""
        was = False
        while not stopping.is_set():
            now_holding = await self.tick()
            if now_holding != was:
                on_change(now_holding)
                was = now_holding
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self.retry_period)
            if was and not self.holding:
                on_change(False)
                was = False


def _emptied(record: LeaseRecord, now: datetime) -> LeaseRecord:
    return dataclasses.replace(record, holder=None, duration_seconds=1, renew_time=now)


def _changed(old: LeaseRecord, new: LeaseRecord) -> bool:
    return (old.holder, old.renew_time, old.resource_version) != (
        new.holder,
        new.renew_time,
        new.resource_version,
    )
