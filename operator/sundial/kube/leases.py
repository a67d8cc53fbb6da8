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

    async def create(
        self, *, namespace: str, name: str, record: LeaseRecord
    ) -> LeaseRecord | results.Conflict: ...

    async def replace(
        self, *, namespace: str, name: str, record: LeaseRecord
    ) -> LeaseRecord | results.Conflict: ...


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

    async def create(
        self, *, namespace: str, name: str, record: LeaseRecord
    ) -> LeaseRecord | results.Conflict:
        body = body_from(
            namespace=namespace, name=name, record=dataclasses.replace(record, resource_version="")
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
        except errors.KubeError as error:
            if error.code == 409:
                return results.Conflict()
            raise
        return self._record(created)

    async def replace(
        self, *, namespace: str, name: str, record: LeaseRecord
    ) -> LeaseRecord | results.Conflict:
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
        self._record = record
        self._renewed_at = started
        return True

    async def tick(self) -> bool:
        """One acquire-or-renew attempt. Returns :attr:`holding` afterwards."""
        started = self._clock()
        try:
            return await self._attempt(started)
        except errors.KubeError as error:
            # Outcome unknown (e.g. a timed-out update that may have succeeded): keep the old renewal time;
            # the renew deadline ends our acting on its own, and the next read tells what happened.
            logger.warning("lease %s/%s: %s", self.namespace, self.name, error)
            return self.holding

    async def _attempt(self, started: float) -> bool:
        now = self._wall()
        duration = max(1, round(self._duration))
        current = await self._api.get(namespace=self.namespace, name=self.name)
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
            logger.info(
                "lease %s/%s acquired (transitions=%d)", self.namespace, self.name, replaced.transitions
            )
        return self._won(replaced, started)

    async def release(self) -> None:
        """Graceful shutdown: stop acting first, then empty the holder so a standby takes over at once."""
        record, was_held = self._record, self._renewed_at is not None
        self._lose()
        if record is None or not was_held:
            return
        released = dataclasses.replace(record, holder=None, duration_seconds=1, renew_time=self._wall())
        with contextlib.suppress(errors.KubeError, asyncio.TimeoutError):
            await self._api.replace(namespace=self.namespace, name=self.name, record=released)
        self._record = None

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


def _changed(old: LeaseRecord, new: LeaseRecord) -> bool:
    return (old.holder, old.renew_time, old.resource_version) != (
        new.holder,
        new.renew_time,
        new.resource_version,
    )
