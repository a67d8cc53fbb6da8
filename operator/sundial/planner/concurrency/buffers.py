"""Buffered overlap: ``concurrencyPolicy: BufferOne | BufferAll`` (DESIGN §4.1, Temporal's ``BUFFER_ONE`` /
``BUFFER_ALL``).

A new run that comes due while another run is active or waiting for a retry (or while earlier runs are
already buffered) is not skipped but kept in ``status.buffered`` with its nominal time and trigger
(counted ``buffered``, Event ``RunBuffered``). Because the buffer is in status, a restart or a failover
keeps it, and a buffered run keeps the Job name and idempotency key of its nominal time (exactly once).
``BufferOne`` keeps at most one waiting run - a later one is skipped (counted ``skipped``, Event
``RunSkipped``); ``BufferAll`` keeps up to :data:`~sundial.model.status.MAX_BUFFERED`, oldest first.

When no run is active or waiting for a retry, the oldest buffered run starts (one per pass: the next
one waits for it in turn). ``spec.suspend`` does not hold back a run already buffered (it was due before);
an open dead-letter circuit and deletion do. If the policy is changed away from a buffer policy, the
buffered runs are handed to the new policy as new due runs.

Under ``Allow`` the buffer holds the runs a pass had no Job creates left for (:func:`defer`,
``Context.creates_per_pass``, DESIGN §11.1): each pass hands them back as new due runs, oldest first, and
the object is planned again at once while any wait (:func:`deferred`). So does a catch-up or backfill run the
namespace's budget had no create for (``Context.backlog_creates``), under every policy; the object is then
planned again when the budget has one (``Plan.backlog_waiting``), not at once. Under the buffer policies such
a run at the head of the buffer stands where the active run would: it starts first, and the buffer holds
its full count besides it.
"""

from __future__ import annotations

from datetime import datetime

from sundial.model.enums import ConcurrencyPolicy, Trigger
from sundial.model.status import MAX_BUFFERED, BufferedRun, StatusCounter
from sundial.planner.actions import EventReason
from sundial.planner.runs import attempts
from sundial.planner.status.drafts import Draft, NewRun

BUFFERING = frozenset({ConcurrencyPolicy.BUFFER_ONE, ConcurrencyPolicy.BUFFER_ALL})
"""The concurrency policies that keep an overlapping run waiting instead of skipping it."""


def capacity(policy: ConcurrencyPolicy) -> int:
    """How many runs may wait in ``status.buffered`` under ``policy``."""
    return 1 if policy is ConcurrencyPolicy.BUFFER_ONE else MAX_BUFFERED


def buffer(draft: Draft, *, scheduled_time: datetime, trigger: Trigger, manual: bool) -> bool:
    """Keep a due run waiting; returns False (and counts it skipped) when the buffer is full."""
    policy = draft.spec.concurrency_policy
    label = f"{'manual run' if manual else 'run'} {attempts.when(scheduled_time)}"
    limit = capacity(policy) + int(draft.budget_held and not draft.busy)  # the head waits for the budget
    if len(draft.buffered) >= limit:
        draft.count(StatusCounter.SKIPPED)
        draft.emit(
            EventReason.RUN_SKIPPED,
            f"Skipped {label}: {len(draft.buffered)} run(s) already wait (concurrencyPolicy {policy}, at most {limit})",
            warning=True,
        )
        return False
    draft.buffered.append(
        BufferedRun(scheduled_time=scheduled_time, trigger=trigger, buffered_at=draft.now, manual=manual)
    )
    draft.count(StatusCounter.BUFFERED)
    draft.emit(
        EventReason.RUN_BUFFERED,
        f"Buffered {label}: it starts when the active run ends (concurrencyPolicy {policy})",
    )
    return True


def defer(draft: Draft, *, scheduled_time: datetime, trigger: Trigger, manual: bool) -> None:
    """Keep a run this pass has no Job create left for (``Allow``): it starts in the next pass."""
    draft.buffered.append(
        BufferedRun(scheduled_time=scheduled_time, trigger=trigger, buffered_at=draft.now, manual=manual)
    )


def deferred(draft: Draft) -> bool:
    """Runs wait for the next pass (not for a run to end): plan again at once."""
    return bool(draft.buffered) and draft.spec.concurrency_policy not in BUFFERING and not _held(draft)


def _held(draft: Draft) -> bool:
    return draft.circuit_open or draft.closing


def release(draft: Draft) -> list[NewRun]:
    """Start the oldest buffered run if nothing is active or waiting for a retry (see the module docstring).

    Returns the runs to hand to the current policy as new due runs (only when it no longer buffers).
    """
    if not draft.buffered:
        return []
    if draft.spec.concurrency_policy not in BUFFERING:
        if _held(draft):
            return []
        handed = [(b.scheduled_time, b.trigger, b.manual) for b in draft.buffered]
        draft.buffered.clear()
        return handed
    head = draft.buffered[0]
    if draft.busy or _held(draft) or not draft.may_start(head.trigger, head.scheduled_time):
        return []
    oldest = draft.buffered.pop(0)
    attempts.start_run(draft, scheduled_time=oldest.scheduled_time, trigger=oldest.trigger, manual=oldest.manual)
    draft.started(oldest.trigger, oldest.scheduled_time)
    return []
