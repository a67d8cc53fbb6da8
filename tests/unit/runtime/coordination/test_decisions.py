"""The pure lease decision: every transition of a replica's view of one Lease, as tables of named cases."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from sundial.kube import results
from sundial.kube.leases import LeaseRecord
from sundial.runtime.coordination.decisions import (
    Intent,
    LeaseDecision,
    Move,
    Sighting,
    Tenure,
    acting,
    decide,
    observed,
    settle,
)
from sundial.runtime.settings import LeaseSettings

ME, OTHER = "replica-a", "replica-b"
TIMINGS = LeaseSettings(duration=15, renew_deadline=10, retry_period=2)
T = 1000.0
"""This replica's monotonic clock, now."""
WALL = datetime(2026, 3, 1, 12, tzinfo=UTC)
"""The wall-clock time stamped on what this replica writes now."""
ACQUIRED = WALL - timedelta(minutes=30)


def seconds_ago(seconds: float) -> float:
    return T - seconds


def lease(
    holder: str | None,
    *,
    duration: int = 15,
    acquired: datetime | None = ACQUIRED,
    renewed: datetime | None = WALL - timedelta(seconds=2),
    transitions: int = 3,
    version: str = "7",
) -> LeaseRecord:
    return LeaseRecord(holder, duration, acquired, renewed, transitions, version)


OTHERS = lease(OTHER)
OURS = lease(ME)
NEW = Tenure()
"""A replica that just started: never held, never saw the Lease."""


def acting_since(seconds: float, *, record: LeaseRecord = OURS) -> Tenure:
    """Our last successful write as the holder was sent ``seconds`` ago."""
    return Tenure(record=record, renewed_at=seconds_ago(seconds), terms=1)


def having_seen(record: LeaseRecord, seconds: float) -> Tenure:
    """Another holder's record, last seen changing ``seconds`` ago."""
    return Tenure(sighting=Sighting(record, seconds_ago(seconds)))


@dataclass(frozen=True, kw_only=True)
class Case:
    id: str
    # record
    record: LeaseRecord | None
    """The Lease as just read (for letting go: the record we last wrote, or the one re-read after a 409)."""
    # replica
    intent: Intent = Intent.HOLD
    tenure: Tenure = NEW
    """What the replica knew before reading (default: nothing, as after a start)."""
    # environment
    now: float = T
    # expectations
    move: Move
    write: LeaseRecord | None = None
    create: bool = False
    sighted_at: float | None = None
    acting: bool = False
    """May the replica act right after deciding (before the write is answered)?"""


CASES = [
    # -- no Lease, or one nobody holds ---------------------------------------------------------------------
    Case(
        id="with no Lease yet the replica creates one naming itself with no transitions",
        record=None,
        move=Move.ACQUIRE,
        write=LeaseRecord(ME, 15, WALL, WALL, 0, ""),
        create=True,
    ),
    Case(
        id="an emptied holder (a release) is taken over at once with one more transition",
        record=lease(None, duration=1),
        move=Move.ACQUIRE,
        write=lease(ME, acquired=WALL, renewed=WALL, transitions=4),
    ),
    # -- held by another replica -----------------------------------------------------------------------------
    Case(
        id="on first sight of another holder's record the replica stands by for a full lease duration",
        record=OTHERS,
        move=Move.STAND_BY,
        sighted_at=T,
    ),
    Case(
        id="a record that changed since it was last seen restarts the wait",
        record=OTHERS,
        tenure=having_seen(lease(OTHER, version="6"), 14.9),
        move=Move.STAND_BY,
        sighted_at=T,
    ),
    Case(
        id="an unchanged record seen just under a lease duration ago is still left alone",
        record=OTHERS,
        tenure=having_seen(OTHERS, 14.9),
        move=Move.STAND_BY,
        sighted_at=seconds_ago(14.9),
    ),
    Case(
        id="an unchanged record seen a full lease duration ago has expired and is taken over with one more transition",
        record=OTHERS,
        tenure=having_seen(OTHERS, 15),
        move=Move.ACQUIRE,
        write=lease(ME, acquired=WALL, renewed=WALL, transitions=4),
        sighted_at=seconds_ago(15),
    ),
    Case(
        id="expiry follows the record's own duration and the takeover writes ours",
        record=lease(OTHER, duration=5),
        tenure=having_seen(lease(OTHER, duration=5), 5),
        move=Move.ACQUIRE,
        write=lease(ME, duration=15, acquired=WALL, renewed=WALL, transitions=4),
        sighted_at=seconds_ago(5),
    ),
    Case(
        id="a record with a zero duration expires after one second unchanged",
        record=lease(OTHER, duration=0),
        tenure=having_seen(lease(OTHER, duration=0), 1),
        move=Move.ACQUIRE,
        write=lease(ME, acquired=WALL, renewed=WALL, transitions=4),
        sighted_at=seconds_ago(1),
    ),
    # -- clock skew: the other holder's renewTime is its wall clock, never trusted ----------------------------
    Case(
        id="a renewTime a day in the past does not shorten the wait when the record is new to us",
        record=lease(OTHER, renewed=WALL - timedelta(days=1)),
        move=Move.STAND_BY,
        sighted_at=T,
    ),
    Case(
        id="a renewTime an hour in the future does not lengthen the wait once the record sat unchanged",
        record=lease(OTHER, renewed=WALL + timedelta(hours=1)),
        tenure=having_seen(lease(OTHER, renewed=WALL + timedelta(hours=1)), 15),
        move=Move.ACQUIRE,
        write=lease(ME, acquired=WALL, renewed=WALL, transitions=4),
        sighted_at=seconds_ago(15),
    ),
    Case(
        id="a replica that was acting gives up when a fresh record of another holder is there",
        record=OTHERS,
        tenure=acting_since(2),
        move=Move.GIVE_UP,
        sighted_at=T,
    ),
    # -- our own record -------------------------------------------------------------------------------------
    Case(
        id="our own record is renewed keeping its acquire time and transitions while we act",
        record=OURS,
        tenure=acting_since(2),
        move=Move.RENEW,
        write=lease(ME, renewed=WALL),
        acting=True,
    ),
    Case(
        id="our own record re-read after a 409 is renewed not taken over",
        record=lease(ME, version="8"),
        tenure=Tenure(record=OURS, renewed_at=None, terms=1),
        move=Move.RENEW,
        write=lease(ME, renewed=WALL, version="8"),
    ),
    Case(
        id="our own record written by an update whose answer was lost is renewed without a transition",
        record=lease(ME, transitions=4),
        tenure=having_seen(OTHERS, 20),
        move=Move.RENEW,
        write=lease(ME, renewed=WALL, transitions=4),
        sighted_at=seconds_ago(20),
    ),
    Case(
        id="just inside the renew deadline the replica still acts while it renews",
        record=OURS,
        tenure=acting_since(9.9),
        move=Move.RENEW,
        write=lease(ME, renewed=WALL),
        acting=True,
    ),
    Case(
        id="once the renew deadline passed our record is still renewed but the replica does not act meanwhile",
        record=OURS,
        tenure=acting_since(10),
        move=Move.RENEW,
        write=lease(ME, renewed=WALL),
    ),
    # -- letting go (handoff, shutdown) ---------------------------------------------------------------------
    Case(
        id="letting go of our record stops acting and empties its holder with a one second duration",
        record=OURS,
        intent=Intent.LET_GO,
        tenure=acting_since(2),
        move=Move.RELEASE,
        write=lease(None, duration=1, renewed=WALL),
    ),
    Case(
        id="letting go with nothing of ours gives up and writes nothing",
        record=None,
        intent=Intent.LET_GO,
        move=Move.GIVE_UP,
    ),
    Case(
        id="after a 409 on release a re-read record someone else took over is left alone",
        record=OTHERS,
        intent=Intent.LET_GO,
        tenure=Tenure(record=OURS, terms=1),
        move=Move.GIVE_UP,
    ),
    Case(
        id="after a 409 on release a re-read record that still names us is emptied at its new version",
        record=lease(ME, version="8"),
        intent=Intent.LET_GO,
        tenure=Tenure(record=OURS, terms=1),
        move=Move.RELEASE,
        write=lease(None, duration=1, renewed=WALL, version="8"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_decide(case: Case) -> None:
    decision = decide(
        case.record, tenure=case.tenure, intent=case.intent, identity=ME, now=case.now, wall=WALL, timings=TIMINGS
    )
    assert decision.move is case.move
    assert decision.write == case.write
    assert decision.create is case.create
    assert decision.at == case.now
    sighting = decision.tenure.sighting
    assert (None if sighting is None else sighting.at) == case.sighted_at
    assert acting(decision.tenure, now=case.now, timings=TIMINGS) is case.acting
    assert (decision.write is None) is (case.move in (Move.STAND_BY, Move.GIVE_UP))
    assert decision.tenure.terms == case.tenure.terms  # terms only change when a write is answered
    if case.intent is Intent.LET_GO and case.move is Move.GIVE_UP:
        assert decision.tenure.record is None  # nothing of ours left to release


@dataclass(frozen=True, kw_only=True)
class Answered:
    id: str
    # decision
    move: Move
    decided_at: float = T
    # replica
    tenure: Tenure
    """What the replica knows when the answer arrives."""
    # environment
    answer: LeaseRecord | results.Conflict
    now: float
    """Monotonic time of the answer."""
    # expectations
    record: LeaseRecord | None
    acting: bool
    terms: int


ANSWERS = [
    Answered(
        id="an acquisition answered within the renew deadline acts and starts the first term",
        move=Move.ACQUIRE,
        tenure=NEW,
        answer=lease(ME, version="9"),
        now=T + 0.5,
        record=lease(ME, version="9"),
        acting=True,
        terms=1,
    ),
    Answered(
        id="a renewal answered within the renew deadline continues the term",
        move=Move.RENEW,
        tenure=acting_since(2),
        answer=lease(ME, version="9"),
        now=T + 0.5,
        record=lease(ME, version="9"),
        acting=True,
        terms=1,
    ),
    Answered(
        id="a renewal answered after the renew deadline starts a new term",
        move=Move.RENEW,
        tenure=acting_since(9.9),
        answer=lease(ME, version="9"),
        now=T + 0.2,
        record=lease(ME, version="9"),
        acting=True,
        terms=2,
    ),
    Answered(
        id="an acquisition answered a renew deadline after it was sent is won but not acted on",
        move=Move.ACQUIRE,
        tenure=NEW,
        answer=lease(ME, version="9"),
        now=T + 10,
        record=lease(ME, version="9"),
        acting=False,
        terms=1,
    ),
    Answered(
        id="a 409 stops acting and keeps our last record until the next read",
        move=Move.RENEW,
        tenure=acting_since(2),
        answer=results.Conflict(),
        now=T + 0.5,
        record=OURS,
        acting=False,
        terms=1,
    ),
    Answered(
        id="an answered release forgets our record",
        move=Move.RELEASE,
        tenure=Tenure(record=OURS, terms=1),
        answer=lease(None, duration=1, version="9"),
        now=T + 0.5,
        record=None,
        acting=False,
        terms=1,
    ),
]


@pytest.mark.parametrize("case", ANSWERS, ids=[case.id for case in ANSWERS])
def test_settle(case: Answered) -> None:
    decision = LeaseDecision(move=case.move, tenure=case.tenure, write=OURS, at=case.decided_at)
    tenure = settle(case.tenure, decision, case.answer, now=case.now, timings=TIMINGS)
    assert tenure.record == case.record
    assert acting(tenure, now=case.now, timings=TIMINGS) is case.acting
    assert tenure.terms == case.terms
    if not isinstance(case.answer, results.Conflict) and case.move is not Move.RELEASE:
        assert tenure.renewed_at == case.decided_at  # timed from before the request was sent


@pytest.mark.parametrize(
    "record",
    [None, lease(None), OURS],
    ids=["no Lease", "an emptied holder", "our own record"],
)
def test_only_another_holders_record_is_sighted(record: LeaseRecord | None) -> None:
    tenure = having_seen(OTHERS, 5)
    assert observed(tenure, record, identity=ME, now=T) == tenure


def test_an_unchanged_record_keeps_the_time_it_was_first_seen() -> None:
    tenure = having_seen(OTHERS, 5)
    assert observed(tenure, dataclasses.replace(OTHERS), identity=ME, now=T) == tenure
    assert observed(tenure, lease(OTHER, version="8"), identity=ME, now=T).sighting == Sighting(
        lease(OTHER, version="8"), T
    )
