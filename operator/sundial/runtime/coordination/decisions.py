"""Lease decisions: what a replica does with a Lease record, as pure functions (DESIGN §7).

Given the record just read, what this replica knows about the Lease (a :class:`Tenure`), its identity, the
time on its monotonic clock, the wall-clock time to stamp on a write, and the timings of
:class:`~sundial.runtime.settings.LeaseSettings` (which checks their order),
:func:`decide` returns a :class:`LeaseDecision`: a :class:`Move` and, where the move writes, the record to write.
:func:`settle` says what the replica knows once that write is answered. Nothing here reads a clock or calls
the API; :class:`sundial.runtime.coordination.electors.LeaseElector` does both and applies the decisions.

The rules (Patroni's ``dcs/kubernetes.py`` and client-go's leader election are the models):

* this replica may act only while its last successful write as the holder, timed on its monotonic clock
  from *before* the request was sent, is younger than ``renew_deadline`` (< ``duration``);
* another holder's Lease is taken over only after its record has not changed for its
  ``leaseDurationSeconds``, measured on *our* monotonic clock from when we *saw* it change — its
  ``renewTime`` (someone else's wall clock) is never trusted, so clock skew never shortens the safety gap;
* a takeover (from another holder or an emptied holder) counts one ``leaseTransitions``; a renewal of our
  own record — also the first one after a 409 or a write whose answer was lost — counts none;
* a renewal answered after the renew deadline has passed starts a new term (acting was paused meanwhile);
* a release empties the holder only of a record that still names us.
"""

from __future__ import annotations

import dataclasses
import enum
from datetime import datetime

from sundial.kube import results
from sundial.kube.leases import LeaseRecord
from sundial.runtime.settings import LeaseSettings


@dataclasses.dataclass(frozen=True)
class Sighting:
    """Another holder's record and the monotonic time this replica saw it change (or first saw it)."""

    record: LeaseRecord
    at: float

    @property
    def expires(self) -> float:
        """Monotonic time from which the record, if still unchanged, may be taken over."""
        return self.at + max(self.record.duration_seconds, 1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Tenure:
    """What one replica knows about one Lease between two attempts. Immutable: replaced whole."""

    record: LeaseRecord | None = None
    """The record we last wrote as the holder (None: never ours, or released)."""
    renewed_at: float | None = None
    """Monotonic time before our last successful write as the holder; None once we stopped acting."""
    sighting: Sighting | None = None
    """Another holder's record as we last saw it change."""
    terms: int = 0
    """Times holding started (again): an acquisition, or a renewal answered after the renew deadline."""


class Intent(enum.Enum):
    """What the replica wants of the Lease."""

    HOLD = "hold"
    """Acquire it, or renew it while it is ours."""
    LET_GO = "let go"
    """Stop acting and empty the holder so another replica takes over at once (handoff, shutdown)."""


class Move(enum.Enum):
    """What a replica does with a Lease record."""

    ACQUIRE = "acquire"
    """Write ourselves as the new holder: create the Lease, or take over an emptied or expired one."""
    RENEW = "renew"
    """Write a new renewTime into our own record."""
    STAND_BY = "stand by"
    """Another holder's record has not expired yet: write nothing, keep watching it change."""
    RELEASE = "release"
    """Empty the holder of our record (duration 1 s), so another replica takes over at once."""
    GIVE_UP = "give up"
    """Stop acting and write nothing: the Lease is someone else's now, or nothing of ours is left to release."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LeaseDecision:
    """One :class:`Move`, the record it writes (if any) and what the replica knows until the write is answered."""

    move: Move
    tenure: Tenure
    write: LeaseRecord | None = None
    """The record to create (:attr:`create`) or replace (compare-and-set on its resourceVersion)."""
    create: bool = False
    """True when no Lease exists yet: the write is a create."""
    at: float
    """Monotonic time of the decision, taken before the request is sent."""


def acting(tenure: Tenure, *, now: float, timings: LeaseSettings) -> bool:
    """True while our last successful write as the holder is younger than the renew deadline."""
    return tenure.renewed_at is not None and now - tenure.renewed_at < timings.renew_deadline


def changed(old: LeaseRecord, new: LeaseRecord) -> bool:
    """True when ``new`` is a different write than ``old`` (holder, renewTime or resourceVersion moved)."""
    return (old.holder, old.renew_time, old.resource_version) != (new.holder, new.renew_time, new.resource_version)


def observed(tenure: Tenure, current: LeaseRecord | None, *, identity: str, now: float) -> Tenure:
    """``tenure`` after seeing ``current`` at monotonic time ``now``; only another holder's record counts."""
    if current is None or current.holder is None or current.holder == identity:
        return tenure
    seen = tenure.sighting
    if seen is not None and not changed(seen.record, current):
        return tenure
    return dataclasses.replace(tenure, sighting=Sighting(current, now))


def decide(
    current: LeaseRecord | None,
    *,
    tenure: Tenure,
    intent: Intent = Intent.HOLD,
    identity: str,
    now: float,
    wall: datetime,
    timings: LeaseSettings,
) -> LeaseDecision:
    """What to do with ``current``, the Lease as just read (None: there is none; for :attr:`Intent.LET_GO`
    the record we last wrote, then, after a 409, the record re-read).

    ``now`` is the monotonic time before the read, ``wall`` the UTC time stamped on what is written.
    """
    if intent is Intent.LET_GO:
        return _let_go(current, tenure=tenure, identity=identity, now=now, wall=wall)
    if current is None:
        fresh = LeaseRecord(
            holder=identity,
            duration_seconds=timings.duration_seconds,
            acquire_time=wall,
            renew_time=wall,
            transitions=0,
        )
        return LeaseDecision(move=Move.ACQUIRE, tenure=tenure, write=fresh, create=True, at=now)
    if current.holder is not None and current.holder != identity:
        tenure = observed(tenure, current, identity=identity, now=now)
        assert tenure.sighting is not None  # another holder's record is always sighted
        if now < tenure.sighting.expires:
            move = Move.GIVE_UP if acting(tenure, now=now, timings=timings) else Move.STAND_BY
            return LeaseDecision(move=move, tenure=dataclasses.replace(tenure, renewed_at=None), at=now)
    takeover = current.holder != identity
    wanted = dataclasses.replace(
        current,
        holder=identity,
        duration_seconds=timings.duration_seconds,
        renew_time=wall,
        acquire_time=wall if takeover else current.acquire_time,
        transitions=current.transitions + 1 if takeover else current.transitions,
    )
    return LeaseDecision(move=Move.ACQUIRE if takeover else Move.RENEW, tenure=tenure, write=wanted, at=now)


def _let_go(current: LeaseRecord | None, *, tenure: Tenure, identity: str, now: float, wall: datetime) -> LeaseDecision:
    stopped = dataclasses.replace(tenure, renewed_at=None)
    if current is None or current.holder != identity:
        return LeaseDecision(move=Move.GIVE_UP, tenure=dataclasses.replace(stopped, record=None), at=now)
    emptied = dataclasses.replace(current, holder=None, duration_seconds=1, renew_time=wall)
    return LeaseDecision(move=Move.RELEASE, tenure=stopped, write=emptied, at=now)


def settle(
    tenure: Tenure,
    decision: LeaseDecision,
    answer: LeaseRecord | results.Conflict,
    *,
    now: float,
    timings: LeaseSettings,
) -> Tenure:
    """What the replica knows once the write of ``decision`` is answered at monotonic time ``now``.

    ``tenure`` is what it knows right then (a :meth:`stop` may have come meanwhile). A 409 means "someone
    moved first": stop acting; the next attempt re-reads the Lease from the API.
    """
    if isinstance(answer, results.Conflict):
        return dataclasses.replace(tenure, renewed_at=None)
    if decision.move is Move.RELEASE:
        return dataclasses.replace(tenure, record=None, renewed_at=None)
    terms = tenure.terms if acting(tenure, now=now, timings=timings) else tenure.terms + 1
    return dataclasses.replace(tenure, record=answer, renewed_at=decision.at, terms=terms)
