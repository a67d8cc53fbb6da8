"""The namespaces' create budgets (DESIGN §11.1): one token bucket per namespace, from which every catch-up
and backfill run of that namespace draws, across all its objects and passes (``--backlog-qps``,
``--backlog-burst``).

The bucket is a GCRA (the generic cell rate algorithm, a token bucket kept as one "theoretical arrival
time"): at most ``burst`` creates at once, then ``rate`` per second, on the reconciler's injected clock. A
pass is told what it may start (:meth:`NamespaceBudgets.available`: ``Context.backlog_creates``, at most
``per_pass``); right after planning - no await in between, so two passes of one namespace never count the
same token - it takes what its plan starts (:meth:`~NamespaceBudgets.take`), kept once its claim is written
(:meth:`~NamespaceBudgets.commit`) and given back otherwise (a conflict re-plans, an error ends the pass:
:meth:`~NamespaceBudgets.release`).

A pass whose runs wait for the budget (``Plan.backlog_waiting``) reserves the next token, as Go's
``rate.Limiter.Reserve`` does (:meth:`~NamespaceBudgets.settle`): the object is planned again when that
token is due, and then it is that object's. So the waiting objects of a namespace take turns in reservation
order, each woken once per token it gets - no busy loop, no herd of passes at every refill. A reservation no
longer needed is given back; one left unclaimed for :data:`STALE` after it came due (its shard moved away)
is dropped. A namespace whose bucket is full and idle keeps no state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sundial.planner.plans import CREATES_PER_PASS, Plan
from sundial.runtime.watch.store import Key

STALE = timedelta(seconds=60)
"""A reservation not claimed this long after it came due is dropped."""
_EPSILON = 1e-9


class Budgets(Protocol):
    """What the reconciler asks of the namespaces' budgets: :class:`NamespaceBudgets`, or :class:`NoBudgets`."""

    def available(self, key: Key, now: datetime) -> int | None: ...
    def take(self, key: Key, plan: Plan, now: datetime) -> None: ...
    def commit(self, key: Key) -> None: ...
    def release(self, key: Key) -> None: ...
    def settle(self, key: Key, plan: Plan, now: datetime) -> datetime | None: ...
    def forget(self, key: Key) -> None: ...


class NoBudgets:
    """No namespace budget: a pass may start as many catch-up and backfill runs as its own bound allows."""

    def available(self, key: Key, now: datetime) -> int | None:
        return None

    def take(self, key: Key, plan: Plan, now: datetime) -> None:
        return None

    def commit(self, key: Key) -> None:
        return None

    def release(self, key: Key) -> None:
        return None

    def settle(self, key: Key, plan: Plan, now: datetime) -> datetime | None:
        return plan.wake_at

    def forget(self, key: Key) -> None:
        return None


@dataclass
class _Held:
    """What a pass in progress took: tokens of the bucket, and the reservation it claimed (its due time)."""

    tokens: int = 0
    reservation: datetime | None = None


@dataclass
class _Bucket:
    tat: datetime
    """The theoretical arrival time: every token taken or reserved moved it one interval on."""
    reserved: dict[Key, datetime] = field(default_factory=dict)
    """Reservations by object: when its token is due."""
    held: dict[Key, _Held] = field(default_factory=dict)
    """Passes in progress that took tokens, not yet committed."""


class NamespaceBudgets:
    """Per-namespace GCRA buckets of catch-up and backfill creates (see the module docstring)."""

    def __init__(self, *, rate: float, burst: int, per_pass: int = CREATES_PER_PASS) -> None:
        if not (math.isfinite(rate) and rate > 0) or burst < 1 or per_pass < 1:
            raise ValueError("rate must be a finite number > 0, burst and per_pass at least 1")
        self._interval = timedelta(seconds=1 / rate)
        self._tolerance = self._interval * (burst - 1)
        self._per_pass = per_pass
        self._buckets: dict[str, _Bucket] = {}

    def available(self, key: Key, now: datetime) -> int:
        """Catch-up and backfill runs the pass of ``key`` may start now: its due reservation, if it holds one,
        what its previous plan took (given back when it takes again) and the tokens free in its namespace's
        bucket (at most ``per_pass`` in all)."""
        bucket = self._buckets.get(key[0])
        if bucket is None:
            return min(self._per_pass, self._free(None, now))
        due = self._reservation(bucket, key, now)
        held = bucket.held.get(key) or _Held()
        own = int(due is not None and due <= now) + held.tokens + int(held.reservation is not None)
        return min(self._per_pass, own + self._free(bucket, now))

    def take(self, key: Key, plan: Plan, now: datetime) -> None:
        """Take what ``plan`` starts (its reservation first), held until :meth:`commit`; a pass planned again
        gives back what its previous plan took first."""
        self.release(key)
        wanted = plan.backlog_creates
        if wanted <= 0:
            return
        bucket = self._bucket(key[0], now)
        held = _Held()
        due = self._reservation(bucket, key, now)
        if due is not None and due <= now:
            held.reservation = bucket.reserved.pop(key)
            wanted -= 1
        held.tokens = wanted
        bucket.tat = max(bucket.tat, now) + self._interval * wanted
        bucket.held[key] = held

    def commit(self, key: Key) -> None:
        """The claim that started the taken runs is written: they are spent."""
        bucket = self._buckets.get(key[0])
        if bucket is not None:
            bucket.held.pop(key, None)

    def release(self, key: Key) -> None:
        """Give back what the pass of ``key`` took and did not commit (its claim was not written)."""
        bucket = self._buckets.get(key[0])
        held = bucket.held.pop(key, None) if bucket is not None else None
        if bucket is None or held is None:
            return
        bucket.tat -= self._interval * held.tokens
        if held.reservation is not None:
            bucket.reserved[key] = held.reservation

    def settle(self, key: Key, plan: Plan, now: datetime) -> datetime | None:
        """The pass ended with ``plan``: when to plan ``key`` again - ``plan.wake_at``, or earlier when its
        runs wait for the budget: when its reservation (made now if it holds none) is due."""
        self.release(key)
        bucket = self._buckets.get(key[0])
        if not plan.backlog_waiting:
            if bucket is not None and bucket.reserved.pop(key, None) is not None:
                bucket.tat -= self._interval  # no longer needed: the next object may have it
            self._drop_if_idle(key[0], now)
            return plan.wake_at
        bucket = self._bucket(key[0], now)
        due = self._reservation(bucket, key, now)
        if due is None:
            self._prune(bucket, now)
            due = max(now, bucket.tat - self._tolerance)
            bucket.tat = max(bucket.tat, now) + self._interval
            bucket.reserved[key] = due
        return due if plan.wake_at is None else min(plan.wake_at, due)

    def forget(self, key: Key) -> None:
        """The object is gone: drop what it took or reserved."""
        self.release(key)
        bucket = self._buckets.get(key[0])
        if bucket is not None and bucket.reserved.pop(key, None) is not None:
            bucket.tat -= self._interval

    def waiting(self, namespace: str) -> int:
        """Objects of ``namespace`` holding a reservation."""
        bucket = self._buckets.get(namespace)
        return len(bucket.reserved) if bucket is not None else 0

    def _free(self, bucket: _Bucket | None, now: datetime) -> int:
        """Tokens free now: ``burst`` for a full bucket, fewer the further its arrival time is ahead of now."""
        ahead = max(bucket.tat - now, timedelta(0)) if bucket is not None else timedelta(0)
        return max(0, math.floor((self._tolerance - ahead) / self._interval + _EPSILON) + 1)

    def _bucket(self, namespace: str, now: datetime) -> _Bucket:
        bucket = self._buckets.get(namespace)
        if bucket is None:
            bucket = self._buckets[namespace] = _Bucket(tat=now)
        return bucket

    @staticmethod
    def _reservation(bucket: _Bucket, key: Key, now: datetime) -> datetime | None:
        """When the reservation of ``key`` is due (None: it holds none, or it was left unclaimed too long)."""
        due = bucket.reserved.get(key)
        if due is not None and due < now - STALE:
            del bucket.reserved[key]
            return None
        return due

    @staticmethod
    def _prune(bucket: _Bucket, now: datetime) -> None:
        for key in [key for key, due in bucket.reserved.items() if due < now - STALE]:
            del bucket.reserved[key]

    def _drop_if_idle(self, namespace: str, now: datetime) -> None:
        bucket = self._buckets.get(namespace)
        if bucket is not None and not bucket.reserved and not bucket.held and bucket.tat <= now:
            del self._buckets[namespace]
