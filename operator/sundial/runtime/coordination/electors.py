"""The Lease elector: one Lease, the API calls and the clocks around the pure decisions (DESIGN §7).

:class:`LeaseElector` reads the Lease (or takes the record a caller just read), asks
:func:`sundial.runtime.coordination.decisions.decide` what to do, sends the write it returns and keeps what
:func:`~sundial.runtime.coordination.decisions.settle` says it knows afterwards. Discipline borrowed from
Patroni's ``dcs/kubernetes.py``: every write carries the resourceVersion that was read; a 409 means "re-read
from the API", never "trust the cache"; and a write whose outcome is unknown (timeout) might have succeeded —
the next read shows it, and the holder-is-me path continues from there without counting a transition.

A Lease is an optimisation, not a guarantee: the elector only says whether *this* replica may act right now
(:attr:`LeaseElector.holding`). What it knows is one immutable :class:`~.decisions.Tenure`, replaced by one
assignment, so another thread reading :attr:`~LeaseElector.holding` always sees a consistent state.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from datetime import datetime

from sundial.kube import errors, results
from sundial.kube.leases import LeaseApi, LeaseRecord
from sundial.runtime.coordination import decisions
from sundial.runtime.coordination.decisions import Intent, Move, Tenure
from sundial.runtime.settings import LeaseSettings
from sundial.schedule import utcnow

logger = logging.getLogger(__name__)


class Unread:
    """Marker type: :meth:`LeaseElector.tick` reads the Lease itself."""


UNREAD = Unread()


class LeaseElector:
    """Acquires and renews one Lease; says whether this replica may act right now."""

    def __init__(
        self,
        *,
        api: LeaseApi,
        namespace: str,
        name: str,
        identity: str,
        timings: LeaseSettings,
        clock: Callable[[], float] = time.monotonic,
        wallclock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timings = timings
        self._api = api
        self._clock = clock
        self._wall = wallclock
        self._tenure = Tenure()

    @property
    def tenure(self) -> Tenure:
        """What this elector knows about its Lease right now."""
        return self._tenure

    @property
    def holding(self) -> bool:
        """True while our last successful renewal is younger than the renew deadline (monotonic clock)."""
        return decisions.acting(self._tenure, now=self._clock(), timings=self.timings)

    @property
    def terms(self) -> int:
        """Incremented each time holding starts (again): after an acquisition, or a renewal past the deadline."""
        return self._tenure.terms

    @property
    def transitions(self) -> int:
        """``leaseTransitions`` of the record we hold: the fencing token's second part."""
        record = self._tenure.record
        return record.transitions if record is not None else 0

    @property
    def record(self) -> LeaseRecord | None:
        """The record we last wrote as the holder (None once released)."""
        return self._tenure.record

    def observe(self, current: LeaseRecord | None, started: float) -> None:
        """Note another holder's record read elsewhere (e.g. a LIST) at monotonic time ``started``.

        Keeps the expiry timing current while this replica does not try to acquire the Lease, so that once
        it is asked to (its owner died), it waits only for the rest of the lease duration, not a new one.
        """
        self._tenure = decisions.observed(self._tenure, current, identity=self.identity, now=started)

    def stop(self) -> None:
        """Stop acting at once (:attr:`holding` becomes False); the Lease stays ours until :meth:`release`."""
        self._tenure = dataclasses.replace(self._tenure, renewed_at=None)

    def _decide(self, current: LeaseRecord | None, started: float, intent: Intent) -> decisions.LeaseDecision:
        decision = decisions.decide(
            current,
            tenure=self._tenure,
            intent=intent,
            identity=self.identity,
            now=started,
            wall=self._wall(),
            timings=self.timings,
        )
        self._tenure = decision.tenure
        return decision

    def _settle(self, decision: decisions.LeaseDecision, answer: LeaseRecord | results.Conflict) -> None:
        self._tenure = decisions.settle(self._tenure, decision, answer, now=self._clock(), timings=self.timings)

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
        decision = self._decide(current, started, Intent.HOLD)
        if decision.write is None:
            return False
        if decision.create:
            answer = await self._api.create(namespace=self.namespace, name=self.name, record=decision.write)
        else:
            answer = await self._api.replace(namespace=self.namespace, name=self.name, record=decision.write)
        self._settle(decision, answer)
        if isinstance(answer, results.Conflict):
            return False  # someone else moved first; the next tick re-reads from the API
        if decision.move is Move.ACQUIRE and not decision.create:
            logger.info("lease %s/%s acquired (transitions=%d)", self.namespace, self.name, answer.transitions)
        return True  # won (:attr:`holding` is already False if the answer came after the renew deadline)

    async def release(self) -> bool:
        """Stop acting first, then empty the holder so another replica takes over at once.

        Works after :meth:`stop` too. The write carries the resourceVersion we last wrote; on a 409 the Lease
        is re-read and emptied only if it still names us (e.g. our last renewal timed out yet went
        through), so a Lease someone else took over is never touched. True: released (or not ours anyway);
        False: the write failed, the Lease expires on its own.
        """
        self.stop()
        try:
            if await self._empty(self._tenure.record):
                return True
            # A 409: re-read from the API, and empty the Lease only if it still names us.
            return await self._empty(await self._api.get(namespace=self.namespace, name=self.name))
        except (TimeoutError, errors.KubeError) as error:
            logger.warning("lease %s/%s: release failed: %s", self.namespace, self.name, error)
            return False

    async def _empty(self, current: LeaseRecord | None) -> bool:
        """Carry out the let-go decision for ``current``; False only on a 409."""
        decision = self._decide(current, self._clock(), Intent.LET_GO)
        if decision.write is None:
            return True  # nothing of ours to release
        answer = await self._api.replace(namespace=self.namespace, name=self.name, record=decision.write)
        self._settle(decision, answer)
        return not isinstance(answer, results.Conflict)
