"""The member set: who takes part in the shard assignment (docs/sharding.md).

Each replica renews its member Lease ``<prefix>-member-<hash(identity)>``; the others count it live while its
record changes within its duration, by their own monotonic clock (:func:`track`). Only who *tries* depends on
membership; safety never does. A member Lease whose ``renewTime`` is long past is deleted (:func:`collect`):
identities change with every pod. Times another replica wrote are compared with the API server's time as this
replica estimates it (``wall``, :meth:`sundial.runtime.coordination.clocks.ServerClock.now`), never with its own
clock alone, so a replica whose clock is off deletes no live member Lease (DESIGN §12.2).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
from collections.abc import Mapping
from datetime import datetime

from sundial.kube import errors, leases
from sundial.runtime.coordination import decisions

logger = logging.getLogger(__name__)

#: A member Lease whose renewTime is older than this many lease durations (and at least a minute) is deleted.
STALE_MEMBER_DURATIONS = 10


def member_lease_name(prefix: str, identity: str) -> str:
    """``<prefix>-member-<10 hex of sha256(identity)>``: a valid name whatever the identity looks like."""
    return f"{prefix}-member-{hashlib.sha256(identity.encode('utf-8')).hexdigest()[:10]}"


def track(
    known: Mapping[str, decisions.Sighting],
    listed: Mapping[str, leases.LeaseRecord],
    *,
    prefix: str,
    own: str,
    wall: datetime,
    started: float,
) -> dict[str, decisions.Sighting]:
    """The other members' sightings after a LIST made at monotonic time STARTED (server time WALL)."""
    seen: dict[str, decisions.Sighting] = {}
    for name, record in listed.items():
        if not name.startswith(f"{prefix}-member-") or name == own or record.holder is None:
            continue
        old = known.get(name)
        if old is None:
            # First sight: estimate from renewTime how long ago it changed. Only who *tries* depends on
            # this (clock skew at worst delays a member by one change); safety never does.
            age = (wall - record.renew_time).total_seconds() if record.renew_time else math.inf
            seen[name] = decisions.Sighting(record, started - max(age, 0.0))
        elif decisions.changed(old.record, record):
            seen[name] = decisions.Sighting(record, started)
        else:
            seen[name] = decisions.Sighting(record, old.at)
    return seen


async def collect(
    api: leases.LeaseListApi,
    listed: Mapping[str, leases.LeaseRecord],
    *,
    namespace: str,
    prefix: str,
    own: str,
    wall: datetime,
) -> None:
    """Delete member Leases left by replicas long gone (renewTime older than the limit, by server time WALL)."""
    for name, record in listed.items():
        if not name.startswith(f"{prefix}-member-") or name == own:
            continue
        limit = max(60.0, STALE_MEMBER_DURATIONS * max(record.duration_seconds, 1))
        renewed = record.renew_time
        if renewed is not None and (wall - renewed).total_seconds() < limit:
            continue
        with contextlib.suppress(errors.KubeError):
            await api.delete(namespace=namespace, name=name, resource_version=record.resource_version)
            logger.info("deleted stale member Lease %s (holder %s)", name, record.holder)
