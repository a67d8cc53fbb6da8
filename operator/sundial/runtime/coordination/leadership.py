"""Shard Leases: "may this replica act on shard i right now?" and who should hold what (DESIGN §7, issue 8).

One loop per replica, every retry period:

1. LISTs the Lease namespace (one read gives every member and shard Lease);
2. renews this replica's member Lease ``<prefix>-member-<hash(identity)>``;
3. derives the live members (a member Lease whose record changed within its duration, by this replica's
   monotonic clock) and the balanced assignment :func:`sundial.runtime.coordination.assignment.assign`;
4. acquires/renews the shards assigned to it; for a shard it holds but is no longer assigned it hands off:
   **stop acting** (``acting()`` is False from then on), wait for in-flight passes of that shard to finish
   (bounded), then **release** the Lease so the new owner takes it at once; other shard Leases are only
   observed, so an assignee that inherits a dead replica's shard waits only for the rest of its duration.

Before each round the replica's guards are asked (:attr:`Sharding.guard`, DESIGN §12.2): while one says
"withdraw" (the planning loop is behind its watchdog, the replica's clock is off the API server's), the round
only makes sure the replica holds nothing: it stops acting, releases every shard Lease and empties its member
Lease, so the others reassign its shards at their next round and take them over at once. When the guards
clear, the next round joins again like a new member.

Every shard held is probed for fencing enforcement at its acquire, every ``fencing_probe_period`` after it, and
seconds after a change of the fencing policy or its binding is seen (:meth:`Leadership.fencing_changed`;
:func:`sundial.runtime.coordination.proofs.probe`): a policy or binding deleted later sets
``sundial_fencing_enforced`` to 0.

Membership only decides who *tries*. Mutual exclusion still comes from the Lease compare-and-set and the
renew deadline (:mod:`sundial.runtime.coordination.decisions`, applied by
:class:`sundial.runtime.coordination.LeaseElector`), so replicas that briefly disagree about the
member set (or a partitioned one) can delay a shard, never put two actors on it. See docs/sharding.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime

from sundial.kube import errors, leases
from sundial.model import names
from sundial.runtime.coordination import assignment, decisions, members, provers
from sundial.runtime.coordination.electors import UNREAD, LeaseElector, Unread
from sundial.runtime.coordination.proofs import FencingApi
from sundial.runtime.coordination.provers import Prover
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import Metrics, WithdrawReason
from sundial.schedule import utcnow

logger = logging.getLogger(__name__)


async def _nothing_in_flight(shard: int) -> None:
    return None


def _never_withdraw() -> WithdrawReason | None:
    return None


@dataclasses.dataclass(kw_only=True)
class Sharding:
    """What the shard loop needs besides the shard electors: the member Lease and the Lease namespace."""

    api: leases.LeaseListApi
    member: LeaseElector
    """This replica's member Lease (``holderIdentity`` = the replica identity)."""
    prefix: str
    """Member Leases are ``<prefix>-member-*``."""
    retry_period: float
    drain: Callable[[int], Awaitable[None]] = _nothing_in_flight
    """Returns once no write on the shard is in flight (awaited after stopping, before releasing)."""
    drain_timeout: float = 10.0
    metrics: Metrics | None = None
    wallclock: Callable[[], datetime] = utcnow
    """The API server's time as this replica estimates it (:meth:`sundial.runtime.coordination.clocks.ServerClock.now`):
    other replicas' ``renewTime`` is compared with it (first sight of a member, stale member cleanup)."""
    fencing: FencingApi | None = None
    """Where refusals are confirmed (a fresh Lease read) and acquires probed; None: a refusal stops acting."""
    fencing_policy: str = ""
    """The fencing policy's name; empty: none is installed, acquires are not probed."""
    fencing_probe_period: float = 60.0
    """Seconds between two enforcement probes of a shard held all along (besides the one at its acquire)."""
    fencing_change_delays: Sequence[float] = provers.CHANGE_PROBE_DELAYS
    """Seconds after a change of the fencing policy or its binding is seen (:meth:`Leadership.fencing_changed`) at
    which every held shard is probed again."""
    guard: Callable[[], WithdrawReason | None] = _never_withdraw
    """Asked before every round: a reason to hold nothing right now, or None
    (:class:`sundial.runtime.coordination.guards.Guards`)."""


class Leadership:
    """Runs the shard electors, for the shards assigned to this replica."""

    def __init__(
        self,
        electors: Sequence[LeaseElector],
        *,
        sharding: Sharding,
        on_change: Callable[[int, bool], None] = lambda shard, held: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._electors = list(electors)
        self._on_change = on_change
        self._sharding = sharding
        self._clock = clock
        self._reported = [False] * len(self._electors)
        self._terms = [0] * len(self._electors)
        self._members: dict[str, decisions.Sighting] = {}  # first sight: `at` estimated from renewTime
        self._assignment: tuple[str, ...] = ()
        self._mine: frozenset[int] = frozenset()
        self._assigned_at: dict[int, float] = {}
        self._waiting: set[int] = set()
        self._handoffs: dict[int, asyncio.Task[None]] = {}
        self._first_step = True
        self._prover = Prover(
            self._electors,
            fencing=sharding.fencing,
            policy=sharding.fencing_policy,
            period=sharding.fencing_probe_period,
            metrics=sharding.metrics,
            clock=clock,
            change_delays=sharding.fencing_change_delays,
        )
        self._withdrawn: WithdrawReason | None = None

    @property
    def shards(self) -> int:
        return len(self._electors)

    def acting(self, shard: int) -> bool:
        """True while this replica holds the shard's Lease and renewed it within the renew deadline."""
        return self._electors[shard].holding

    def check(self, shard: int) -> None:
        """Raise :class:`NotActingError` unless :meth:`acting`; call right before every write."""
        if not self.acting(shard):
            raise NotActingError(f"not holding shard {shard}")

    def fencing_token(self, shard: int) -> str:
        """``<shard>-<leaseTransitions>-<lease uid>``: stamped on every Job so stale holders can be rejected."""
        elector = self._electors[shard]
        record = elector.record
        return names.fencing_token(shard, elector.transitions, record.uid if record is not None else "")

    def fenced(self, shard: int) -> None:
        """The API server's fencing policy refused a write under this shard's token (called on the main loop).

        Confirmed before the shard is given up (:func:`sundial.runtime.coordination.proofs.confirm`, on the
        lease loop): the Lease is re-read from the API server and acting stops only if it moved on; otherwise the
        refusal is counted and the shard kept (the refused pass backs off). Without a :attr:`Sharding.fencing`
        API, or before :meth:`run` started, acting stops at once.
        """
        logger.warning("shard %d: a write was refused under token %s", shard, self.fencing_token(shard))
        self._prover.fenced(shard)

    def fencing_changed(self) -> None:
        """The fencing policy or its binding changed (any thread; :mod:`sundial.runtime.watch.fencingpolicies`):
        every held shard is probed again within seconds (:meth:`.provers.Prover.changed`), not at the next period."""
        self._prover.changed()

    async def settle_background(self) -> None:
        """Wait for the confirmations and probes started so far (tests)."""
        await self._prover.settle()

    def held(self) -> int:
        return sum(1 for elector in self._electors if elector.holding)

    @property
    def assigned(self) -> frozenset[int]:
        """The shards the current assignment gives this replica."""
        return self._mine

    @property
    def members(self) -> tuple[str, ...]:
        """The live members of the current assignment, sorted."""
        return tuple(sorted(set(self._assignment)))

    async def run(self, stopping: asyncio.Event) -> None:
        self._prover.loop = asyncio.get_running_loop()
        try:
            while not stopping.is_set():
                await self.step()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stopping.wait(), timeout=self._sharding.retry_period)
        finally:
            await self._prover.close()

    @property
    def withdrawn(self) -> WithdrawReason | None:
        """Why this replica holds nothing on its own right now (None: it takes part)."""
        return self._withdrawn

    async def step(self) -> None:
        """One round: list, renew membership, assign, acquire/renew/hand off, report. Never sleeps.

        While :attr:`Sharding.guard` gives a reason, the round withdraws instead (:meth:`_withdraw`)."""
        reason = self._sharding.guard()
        if reason is WithdrawReason.CLOCK_SKEW:  # measure again (a LIST's Date header), then decide
            with contextlib.suppress(errors.KubeError):
                await self._sharding.api.list(namespace=self._sharding.member.namespace)
            reason = self._sharding.guard()
        if reason is not None:
            await self._withdraw(reason)
            return
        if self._withdrawn is not None:
            logger.warning("withdrawn (%s) no more: joining the member set again", self._withdrawn.value)
            self._withdrawn = None
            self._first_step = True
        await self._take_part()

    async def _withdraw(self, reason: WithdrawReason) -> None:
        """Hold nothing: stop acting on every shard, release every Lease held and empty the member Lease (each
        round while withdrawn, so a failed release is tried again)."""
        if self._withdrawn is None:
            held = self.held()
            logger.error(
                "withdrawing (%s): stopped acting, releasing %d shard Lease(s) and leaving the member set",
                reason.value,
                held,
            )
            if self._sharding.metrics is not None and (held or self._sharding.member.record is not None):
                self._sharding.metrics.guards.withdrawals.labels(reason=reason).inc()
        self._withdrawn = reason
        for handoff in list(self._handoffs.values()):
            handoff.cancel()  # its drain waits for the main loop, which may be the one that is stuck
        await self.settle()
        for elector in self._electors:
            elector.stop()
        self._report()
        member = self._sharding.member
        member.stop()
        owned = [e for e in (*self._electors, member) if e.record is not None]
        await asyncio.gather(*(e.release() for e in owned), return_exceptions=True)
        self._members = {}
        self._assignment = ()
        self._mine = frozenset()
        self._waiting = set()
        self._assigned_at.clear()
        if self._sharding.metrics is not None:
            self._sharding.metrics.leases.assigned.set(0)

    async def _take_part(self) -> None:
        sharding = self._sharding
        started = self._clock()
        member = sharding.member
        # Renewals of what this replica holds go out *with* the LIST, not after it: each carries the record
        # (resourceVersion) of our own last write, so it needs no read, and a slow LIST on a loaded API
        # server no longer adds to the renewal's age. A stale record only costs a 409 (then: not holding).
        # Only while holding: after a 409 our record is stale, and such a shard goes through the LIST below.
        early = [
            shard
            for shard, elector in enumerate(self._electors)
            if shard in self._mine and shard not in self._handoffs and elector.holding and elector.record is not None
        ]
        member_early = member.holding and member.record is not None
        renewed = asyncio.gather(
            *(self._electors[shard].tick(current=self._electors[shard].record, started=started) for shard in early),
            *([member.tick(current=member.record, started=started)] if member_early else []),
        )
        listed: Mapping[str, leases.LeaseRecord] | None
        try:
            listed = await sharding.api.list(namespace=sharding.member.namespace)
        except errors.KubeError as error:
            logger.warning("listing Leases in %s: %s", sharding.member.namespace, error)
            listed = None
        finally:
            outcomes = await renewed
        kept = {shard for shard, held in zip(early, outcomes, strict=False) if held}

        if not (member_early and member.holding):
            await member.tick(current=_from(listed, member.name), started=started)
        if listed is not None:
            self._members = members.track(self._members, listed, prefix=sharding.prefix, own=member.name,
                                          wall=sharding.wallclock(), started=started)  # fmt: skip
        live = {seen.record.holder for seen in self._members.values() if started < seen.expires}
        # A replica always counts itself: it knows it is alive even when its own member renewal came late
        # (a stalled event loop, an API server restart). Leaving itself out made replicas hand each other
        # the same shards after every restart, so nobody acted for a lease period. Safety never depends on
        # membership: only the shard Leases' compare-and-set and the renew deadline decide who acts.
        live.add(member.identity)
        self._reassign(tuple(sorted(h for h in live if h)), started)

        renewals = []
        for shard, elector in enumerate(self._electors):
            if shard in self._handoffs:
                continue
            if shard in self._mine:
                if shard not in kept:  # acquire (or re-acquire after a 409) with what the LIST saw
                    renewals.append(elector.tick(current=_from(listed, elector.name), started=started))
            elif elector.record is not None:
                self._handoffs[shard] = asyncio.create_task(self._hand_off(shard), name=f"handoff {shard}")
            elif listed is not None:
                elector.observe(listed.get(elector.name), started)
        await asyncio.gather(*renewals)
        self._report()
        self._prover.periodically(started)
        if listed is not None:
            await members.collect(sharding.api, listed, namespace=member.namespace, prefix=sharding.prefix,
                                  own=member.name, wall=sharding.wallclock())  # fmt: skip

    def _reassign(self, live: tuple[str, ...], started: float) -> None:
        sharding = self._sharding
        new = assignment.assign(live, self.shards)
        if new != self._assignment:
            mine = assignment.shards_of(new, sharding.member.identity)
            counts = assignment.counts(new)
            logger.info(
                "shard assignment: %d member(s) %s; mine: %s",
                len(counts),
                ", ".join(f"{m}={n}" for m, n in sorted(counts.items())),
                ",".join(map(str, sorted(mine))) or "none",
            )
            if not self._first_step and sharding.metrics is not None:
                sharding.metrics.leases.rebalances.inc()
            self._assignment = new
            self._mine = mine
        self._first_step = False
        for shard in self._mine - self._waiting:
            self._assigned_at[shard] = started  # newly assigned: the acquire phase of a handoff starts
        self._waiting = set(self._mine)
        for shard in list(self._assigned_at):
            if shard not in self._mine:
                del self._assigned_at[shard]
        if sharding.metrics is not None:
            sharding.metrics.leases.assigned.set(len(self._mine))
            sharding.metrics.leases.members.set(len(live))

    async def _hand_off(self, shard: int) -> None:
        """Stop acting on ``shard``, let in-flight passes finish (bounded), then release its Lease."""
        sharding = self._sharding
        decided = self._clock()
        elector = self._electors[shard]
        elector.stop()  # from here on acting(shard) is False: no new write on this shard starts
        self._report()
        try:
            try:
                await asyncio.wait_for(sharding.drain(shard), timeout=sharding.drain_timeout)
            except TimeoutError:
                logger.warning("shard %d: writes still in flight after %.0fs; releasing", shard, sharding.drain_timeout)
            released = await elector.release()
            took = self._clock() - decided
            logger.info("shard %d handed off (%s in %.3fs)", shard, "released" if released else "left to expire", took)
            if sharding.metrics is not None:
                sharding.metrics.leases.handoff.labels(phase="release").observe(took)
        finally:
            self._handoffs.pop(shard, None)

    async def settle(self) -> None:
        """Wait for the handoffs started so far (tests; shutdown)."""
        while self._handoffs:
            await asyncio.gather(*self._handoffs.values(), return_exceptions=True)

    def _report(self) -> None:
        now = self._clock()
        for shard, elector in enumerate(self._electors):
            held = elector.holding
            lapsed = held and self._reported[shard] and elector.terms != self._terms[shard]
            self._terms[shard] = elector.terms
            if lapsed:
                # Renewed only after the renew deadline had passed: passes that ran meanwhile saw
                # acting() False and dropped their keys. Report it as lost and held again, so that every
                # object of the shard is planned again.
                logger.warning("shard %d: renewal came after the renew deadline; acting was paused", shard)
                self._on_change(shard, False)
            elif held == self._reported[shard]:
                continue
            self._reported[shard] = held
            logger.info("shard %d lease %s", shard, "held" if held else "lost")
            if held:
                self._prover.acquired(shard)
                since = self._assigned_at.pop(shard, None)
                if since is not None and self._sharding.metrics is not None:
                    self._sharding.metrics.leases.handoff.labels(phase="acquire").observe(max(now - since, 0.0))
            else:
                self._prover.lost(shard)
            self._on_change(shard, held)

    async def release(self) -> None:
        """Graceful shutdown: stop acting on every shard, give every held Lease up, leave the member set."""
        await self.settle()
        for elector in self._electors:
            elector.stop()
        self._report()
        await asyncio.gather(*(e.release() for e in self._electors), return_exceptions=True)
        member = self._sharding.member
        record = member.record
        member.stop()
        if record is not None:
            with contextlib.suppress(errors.KubeError, asyncio.TimeoutError):
                await self._sharding.api.delete(
                    namespace=member.namespace, name=member.name, resource_version=record.resource_version
                )


def _from(listed: Mapping[str, leases.LeaseRecord] | None, name: str) -> leases.LeaseRecord | Unread | None:
    if listed is None:
        return UNREAD
    return listed.get(name)
