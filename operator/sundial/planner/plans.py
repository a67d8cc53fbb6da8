"""The planner's input context and output."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sundial import schedule
from sundial.model import handovers
from sundial.model.calendars import ScheduleCalendarSpec
from sundial.model.enums import ConditionReason, Trigger
from sundial.model.resource import ScheduledJob
from sundial.model.spec import ScheduledJobSpec
from sundial.model.status import ScheduledJobStatus
from sundial.planner.actions import Action

CREATES_PER_PASS = 10
"""Job creates one pass starts for new runs (catch-up, backfill) before it yields its namespace's turn (DESIGN
§11.1): the rest wait in ``status.buffered`` and the object is planned again at once, after the dispatcher has
served the other namespaces' turns. Equal to ``catchUp.maxRuns``' default, so a default catch-up fits one pass."""

BACKLOG = frozenset({Trigger.CATCH_UP, Trigger.BACKFILL})
"""The triggers whose first attempts draw from the namespace's create budget (``Context.backlog_creates``,
DESIGN §11.1): one outage or one backfill request can ask for many of them at once. The scheduled run, a
manual run and the next attempts of a run (retries, redrives, re-issues) do not draw: each is one Job for
one due time or one request, and none of them waits behind the namespace's catch-up and backfill. Nor does
the catch-up run due just before a pass's scheduled run (``Draft.late_by_one``): late by one period, as a
loaded operator makes runs, it is at most one more per scheduled run, not a backlog. Nor does a catch-up run
due within :data:`LAG_ALLOWANCE` of the pass: the operator's own lag (a busy replica, a shard's takeover), not
a backlog the tenant asked for - were it rationed, a namespace whose schedules fire faster than the budget
refills would fall further behind with every period it ran late and never catch up."""

LAG_ALLOWANCE = timedelta(minutes=1)
"""A catch-up run due at most this long before the pass is the operator's lag and does not draw from the
namespace's budget (see :data:`BACKLOG`); each is still one of ``Context.creates_per_pass``."""

RESERVE_AHEAD = timedelta(minutes=5)
"""A reservation that is missing or stale (another fencing token: after a failover; an older version's status) is
written on its own, in the low-priority lane, once its run is due within this long (DESIGN §7.5); a status
write the object gets anyway always carries the current one."""

HOLD_START = timedelta(seconds=10)
"""After a prepared run's Job is created, the status write that records its start waits for the Job's end (so one
write records the start and the completion) while nothing else needs writing, at most this long after its instant
(DESIGN §7.5): ``status.active`` lags a running Job by at most this much (plus the lane's wait), as the CronJob
controller's does, so ``kubectl get``, ``describe`` and the exported ``running`` state see a run that is still
going within seconds. A short Job (the herd's, most first runs) ends within it: one write for start and end."""

HOLD_MARGIN = timedelta(minutes=1)
"""... and ends this long before the next run's instant, so that the write (in the low-priority lane, served within
30 s) reserves the next run before it is due."""


@dataclass(frozen=True)
class Compiled:
    """What a pass derives from the spec alone (and the calendars it names): the same for every pass of one
    (uid, generation, calendar resourceVersions), so the runtime may compute it once and hand it in through
    :attr:`Context.compiled` (DESIGN §11.1)."""

    when: schedule.When
    """Where the nominal times come from."""
    exclusion: schedule.Exclusion
    """``spec.exclude`` plus the usable calendars."""
    calendar_problem: tuple[ConditionReason, str] | None
    """A calendar of ``spec.calendarRefs`` is missing or invalid: (reason, message)."""


def compile_spec(
    obj: ScheduledJob, spec: ScheduledJobSpec, calendars: Mapping[str, ScheduleCalendarSpec | None], *, now: datetime
) -> Compiled:
    """Compile OBJ's valid SPEC against CALENDARS (as :attr:`Context.calendars`); NOW stands in for a missing
    creation time (an ASAP one-off runs at it). A cron object handed over from a CronJob
    starts after that CronJob's last run (:mod:`sundial.model.handovers`) when it is earlier than its creation."""
    uid = obj.metadata.uid
    created = obj.metadata.creation_timestamp or now.replace(microsecond=0)
    handover = handovers.handed_over(obj.metadata.annotations)
    if handover is not None and not spec.is_one_off:
        created = min(created, handover.after)  # taken over from a CronJob: due after its last run (DESIGN §12.4)
    problem, exclusion = spec.calendar_exclusion(calendars, uid=uid)
    return Compiled(when=spec.when(uid=uid, created=created), exclusion=exclusion, calendar_problem=problem)


@dataclass(frozen=True)
class Context:
    """The environment of one planning pass."""

    now: datetime
    """UTC-aware; the only clock the planner knows."""
    fencing_token: str
    """``<shard>-<lease transitions>-<lease uid>`` of the acting replica, stamped on every Job it creates."""
    max_enumerated_runs: int = 10_000
    """Bound on nominal times enumerated per pass (a per-second schedule after a long outage)."""
    reissue_after: timedelta = timedelta(seconds=15)
    """A claimed attempt whose Job has not been observed this long after the claim gets its (idempotent,
    same-name) CreateJob again: the replica that claimed it may have died between the claim and the create."""
    creates_per_pass: int = CREATES_PER_PASS
    """At most this many Job creates per pass for new runs (:data:`CREATES_PER_PASS`; retries count too)."""
    backlog_creates: int | None = None
    """At most this many catch-up and backfill runs (:data:`BACKLOG`) may start in this pass: what the
    namespace's create budget holds for it (the runtime's token bucket, DESIGN §11.1). The others wait -
    catch-up runs in ``status.buffered``, a backfill in its progress - and :attr:`Plan.backlog_waiting` says
    so. None: no namespace budget (only :attr:`creates_per_pass`)."""
    calendars: Mapping[str, ScheduleCalendarSpec | None] = field(default_factory=dict)
    """The ScheduleCalendars of the object's namespace that its ``spec.calendarRefs`` name and that exist, by
    name (None: it exists but is invalid). A name missing here is a calendar that does not exist."""
    compiled: Compiled | None = None
    """:func:`compile_spec` of this object's spec and ``calendars``, computed ahead (a cache of the runtime's);
    None: the pass compiles it itself."""
    lane: bool = False
    """The pass is the low-priority lane's (DESIGN §7.5): a reservation that differs from the stored one is
    written even when nothing else changed."""
    reserve_ahead: timedelta = RESERVE_AHEAD
    """:data:`RESERVE_AHEAD`."""
    hold_start: timedelta = HOLD_START
    """:data:`HOLD_START` (zero: a used reservation is recorded by the lane's first pass, the Job still running)."""
    prepared_runs: bool = True
    """Reserve the next run ahead of its instant (DESIGN §7.5); False (``--no-prepared-runs``): nothing is
    reserved and every run is claimed by a status write first (a stored reservation still counts once its Job
    is observed)."""


@dataclass(frozen=True)
class Plan:
    """Everything one pass decided.

    The runtime writes ``status`` first, as a compare-and-set on the object's resourceVersion, when
    ``write_status`` is true (that write is the claim); only after it succeeds does it run ``actions`` in
    order. A 409 means another writer moved first: re-read the object from the API and plan again.

    With ``deferred`` (and ``write_status`` false) the actions run at once and the object owes a status write
    that may wait: the low-priority lane plans it again (``Context.lane``) after the due work of the moment -
    a prepared run's instant (its reservation is the claim) or a reservation to write (DESIGN §7.5).
    """

    status: ScheduledJobStatus
    write_status: bool
    actions: tuple[Action, ...]
    wake_at: datetime | None
    """When to plan this object again at the latest (None: only on a change). Not "now" for runs that wait
    only for the namespace's budget: see :attr:`backlog_waiting`."""
    backlog_creates: int = 0
    """Catch-up and backfill runs this plan starts (:data:`BACKLOG`): what it draws from the namespace's budget."""
    backlog_waiting: bool = False
    """Catch-up or backfill runs wait only for ``Context.backlog_creates``: plan again once the namespace's
    budget has a create for this object (the runtime knows when; ``wake_at`` does not include it)."""
    deferred: bool = False
    """A status write is owed after the actions, in the low-priority lane (see above)."""
    hold_until: datetime | None = None
    """With ``deferred``: the owed write only records a prepared run's start while its Job runs, and may wait for
    a change of its Jobs (the Job's end) until this time before the lane serves it (:data:`HOLD_START`)."""
