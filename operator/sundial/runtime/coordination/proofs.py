"""Fencing that proves itself (DESIGN §11.3, docs/fencing.md): a refusal is confirmed, enforcement is probed.

* :func:`confirm` — the API server's fencing policy refused a write under a shard's token. Before the shard is
  given up, the Lease is re-read from the API server (a quorum GET, never a cache): only if it really moved on
  (another holder, other ``leaseTransitions``, another UID: recreated) does the replica stop acting. If it is
  still ours, the refusal came from stale data (a Job whose ``sundial.dev/shard`` label a tenant rewrote, an
  API server serving an old copy of the Lease to the policy): it is counted
  (``sundial_fenced_unconfirmed_total``), the shard is kept and the refused write is retried after the pass's
  backoff — never the old give-up/re-acquire/refused-again loop.
* :func:`probe` — at each acquire and every ``--fencing-probe-period`` while held, a dry-run write the policy
  must refuse (an Event under this shard's token with a UID no Lease has). Refused:
  ``sundial_fencing_enforced{shard} 1``. Admitted (no policy installed, or a kustomize overlay's
  ``namespace:``/``namePrefix:`` made its matchCondition or paramRef miss): 0, a log line and a Warning Event
  on the Lease. A 403 from anything else than the configured policy is "not enforced" too:
  real refusals would not be recognised either. An admitted probe is sent again after short pauses before it
  counts (:data:`PROBE_PAUSES`): the policy reads the shard Leases from the API server's informer, which may
  not have seen a Lease created a moment ago (the first acquire, a new shard after a ``--shards`` change), and
  without its param the binding allows (``parameterNotFoundAction: Allow``). The periodic probes of a Lease
  held all along are sent once (no pauses), and the Warning Event is written only when the result turns to 0.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from sundial.kube import errors, leases
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.serving.metrics import Metrics

logger = logging.getLogger(__name__)

#: Seconds between the tries of an admitted probe (measured on a loaded 2-core sandbox: a probe 0.1 s after the
#: Lease's create was admitted, the same probe a moment later refused).
PROBE_PAUSES: tuple[float, ...] = (0.5, 1.0, 2.0)


class FencingApi(Protocol):
    """The calls of :func:`confirm` and :func:`probe` (:class:`sundial.kube.leases.KubeLeaseApi`)."""

    async def get(self, *, namespace: str, name: str) -> leases.LeaseRecord | None: ...

    async def probe_fencing(self, *, namespace: str, name: str, shard: int, transitions: int) -> bool: ...

    async def warn(self, *, namespace: str, name: str, reason: str, message: str) -> None: ...


def moved_on(mine: leases.LeaseRecord | None, current: leases.LeaseRecord | None, *, identity: str) -> bool:
    """True unless ``current`` (just read) is still the Lease we hold: our holder, transitions and UID."""
    if mine is None or current is None:
        return True
    return (current.holder, current.transitions, current.uid) != (identity, mine.transitions, mine.uid)


async def confirm(elector: LeaseElector, api: FencingApi, *, shard: int, metrics: Metrics | None) -> bool:
    """Re-read ``elector``'s Lease after a refusal; stop acting only if it moved on. True: stopped."""
    mine = elector.record
    try:
        current = await api.get(namespace=elector.namespace, name=elector.name)
    except errors.KubeError as error:
        logger.warning(
            "shard %d: a write was refused and the Lease could not be re-read (%s); stopped acting", shard, error
        )
        elector.stop()
        return True
    if moved_on(mine, current, identity=elector.identity):
        logger.warning(
            "shard %d: a write was refused and Lease %s moved on (now %s, transitions %s); stopped acting",
            shard,
            elector.name,
            current.holder if current else "gone",
            current.transitions if current else "-",
        )
        elector.stop()
        return True
    if metrics is not None:
        metrics.fencing.unconfirmed.inc()
    logger.warning(
        "shard %d: a write was refused, yet Lease %s is still ours (transitions %d): shard kept, the write is "
        "retried after a backoff (a relabelled Job, or a stale copy of the Lease in the API server)",
        shard,
        elector.name,
        mine.transitions if mine else 0,
    )
    return False


async def probe(
    elector: LeaseElector,
    api: FencingApi,
    *,
    shard: int,
    policy: str,
    metrics: Metrics | None,
    pauses: Sequence[float] = PROBE_PAUSES,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    previous: bool | None = None,
) -> bool | None:
    """Prove that ``policy`` refuses a stale write on ``shard``: True enforced, False not, None unknown (the
    probe failed, or the shard was lost while an admitted probe waited to be sent again). PREVIOUS: the last
    probe's result for this shard: the log line and the Warning Event are written only when the result changes."""
    record = elector.record
    transitions = record.transitions if record is not None else 0
    reason = ""
    for pause in (*pauses, None):
        try:
            enforced = await api.probe_fencing(
                namespace=elector.namespace, name=elector.name, shard=shard, transitions=transitions
            )
        except errors.ForbiddenError as error:  # refused, but not by the configured policy
            enforced, reason = False, f"refused by something else than policy {policy!r}: {error.message}"
            break
        except errors.KubeError as error:
            logger.warning("shard %d: the fencing probe failed (%s); trying again at the next probe", shard, error)
            return None
        if enforced or pause is None:
            break
        await sleep(pause)  # the policy may not have seen the Lease yet: ask again
        if not elector.holding:
            return None
    if metrics is not None:
        metrics.fencing.enforced.labels(shard=str(shard)).set(1 if enforced else 0)
    if enforced:
        if previous is not True:
            logger.info("shard %d: fencing enforced (the policy %s refused the probe)", shard, policy)
        return True
    if previous is False:
        return False  # said already
    message = (
        f"fencing is NOT enforced for shard {shard}: a dry-run write under a stale token was "
        f"{reason or 'admitted'}. Is the ValidatingAdmissionPolicy {policy!r} installed, does its matchCondition "
        f"name this ServiceAccount and its binding's paramRef the namespace {elector.namespace!r} "
        "(a kustomize namespace:/namePrefix: overlay must patch both), and --fencing-policy its name?"
    )
    logger.error("shard %d: %s", shard, message)
    try:
        await api.warn(
            namespace=elector.namespace, name=elector.name, reason=leases.NOT_ENFORCED_REASON, message=message
        )
    except errors.KubeError as error:
        logger.warning("shard %d: the FencingNotEnforced Event failed: %s", shard, error)
    return False
