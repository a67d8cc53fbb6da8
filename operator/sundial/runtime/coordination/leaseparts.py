"""The Lease parts of the operator process, made from the settings (used by :mod:`sundial.runtime.assembly`): the
Lease API of the lease thread, the owners of the Leases, and one elector per Lease."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sundial.kube import connections, leases, ratelimits, requests
from sundial.model import names
from sundial.runtime.coordination import clocks, leasethread
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.coordination.members import member_lease_name
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings


def lease_api(
    settings: Settings, configuration: Any, metrics: Metrics, dates: clocks.ServerClock
) -> leasethread.DeferredLeaseApi:
    """Lease calls run on a thread of their own (coordination/leasethread.py), with their own API client and
    token bucket: neither a herd of Job creations nor a busy event loop may delay a renewal. The client is
    made on first use, on that thread's loop."""
    shards = settings.leases.shards

    def factory() -> leases.KubeLeaseApi:
        lease_requester = requests.Requester(
            bucket=ratelimits.TokenBucket(rate=max(10.0, 4 * shards), burst=20 + 4 * shards), observer=metrics
        )
        return leases.KubeLeaseApi(
            api_client=connections.api_client(configuration),
            requester=lease_requester,
            labels={settings.leases.name(i): {names.SHARD_LEASE_LABEL: str(i)} for i in range(shards)},
            owners=lease_owners(settings),
            dates=dates,
        )

    return leasethread.DeferredLeaseApi(factory)


def lease_owners(settings: Settings) -> dict[str, leases.Owner]:
    """The shard Leases go with the ServiceAccount, the member Lease with its pod (kube/leases.py, Owner)."""
    owners = {settings.leases.name(i): leases.Owner.SERVICE_ACCOUNT for i in range(settings.leases.shards)}
    owners[member_lease_name(settings.leases.name_prefix, settings.identity)] = leases.Owner.POD
    return owners


def elector(
    settings: Settings, api: leasethread.DeferredLeaseApi, name: str, wallclock: Callable[[], datetime]
) -> LeaseElector:
    return LeaseElector(
        api=api,
        namespace=settings.leases.namespace,
        name=name,
        identity=settings.identity,
        timings=settings.leases,
        wallclock=wallclock,
    )
