"""The working copy of one planning pass: every change is collected here, then frozen into a status.

Like the CronJob controller's single deep copy: helpers mutate a :class:`Draft`, and
:meth:`Draft.freeze` builds the one new :class:`ScheduledJobStatus` the runtime writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sundial import schedule
from sundial.model.enums import CompleteReason, ConditionReason, Trigger
from sundial.model.resource import ScheduledJob
from sundial.model.spec import ScheduledJobSpec
from sundial.model.status import (
    MAX_RECENT_RUNS,
    ActiveRun,
    BackfillProgress,
    BufferedRun,
    Condition,
    Counters,
    DeadLetter,
    PendingRetry,
    Reservation,
    RunRecord,
    ScheduledJobStatus,
    StatusCounter,
)
from sundial.planner.actions import Action, CreateJob, EmitEvent, EventReason, EventType
from sundial.planner.observed import ObservedJob
from sundial.planner.plans import BACKLOG, LAG_ALLOWANCE, Context, compile_spec

RunKey = tuple[datetime, bool]
"""Identity of a run: (nominal time, manual)."""
NewRun = tuple[datetime, Trigger, bool]
"""A run handed to admission (:mod:`sundial.planner.concurrency`): (nominal time, trigger, manual)."""
UNBOUNDED = 2**31
"""What :meth:`Draft.backlog_left` says without a namespace budget (``Context.backlog_creates`` None)."""


@dataclass
class Draft:
    """Mutable state of one pass over one valid ScheduledJob."""

    obj: ScheduledJob
    spec: ScheduledJobSpec
    context: Context
    when: schedule.When
    """Where the nominal times come from (cron or one-off alike): the planner asks only this."""
    active: list[ActiveRun]
    pending: list[PendingRetry]
    recent: list[RunRecord]
    dead_letters: list[DeadLetter]
    buffered: list[BufferedRun]
    backfills: list[BackfillProgress]
    counters: Counters
    conditions: list[Condition]
    cursor: datetime | None
    next_schedule_time: datetime | None
    last_schedule_time: datetime | None
    last_successful_time: datetime | None
    last_failure_time: datetime | None
    consecutive_dead_letters: int
    circuit_generation: int | None
    last_handled_trigger: str | None
    last_handled_redrive: str | None
    last_handled_backfill: str | None
    finished_at: datetime | None
    actions: list[Action] = field(default_factory=list)
    one_off_outcome: CompleteReason | None = None
    """How the run of a finite source (a one-off) ended in this pass, if it did."""
    exclusion: schedule.Exclusion = field(default_factory=schedule.Exclusion)
    """The excluded times (``spec.exclude`` and the calendars found): such nominal times are never run."""
    calendar_problem: tuple[ConditionReason, str] | None = None
    """A calendar of ``spec.calendarRefs`` is missing or invalid: (reason, message); nothing new fires."""
    backlog_started: int = 0
    """Catch-up and backfill runs started in this pass (``Context.backlog_creates`` counts them)."""
    budget_held: bool = False
    """A catch-up or backfill run could have started in this pass but for ``Context.backlog_creates``."""
    late_by_one: datetime | None = None
    """The nominal time due just before this pass's scheduled run: its catch-up run is late by one period, as
    a loaded operator makes runs, not a backlog, and does not draw from the namespace's budget."""
    adopted: list[ObservedJob] = field(default_factory=list)
    """Running Jobs of the CronJob this object took over from (:mod:`sundial.model.handovers`): they count as
    active runs for ``concurrencyPolicy`` (:attr:`busy`), and Replace deletes them."""
    reservation: Reservation | None = None
    """The next run, reserved ahead of its instant (DESIGN §7.5): the stored one until the pass reserves anew."""

    @classmethod
    def start(cls, obj: ScheduledJob, spec: ScheduledJobSpec, context: Context) -> Draft:
        status = obj.status
        compiled = context.compiled or compile_spec(obj, spec, context.calendars, now=context.now)
        return cls(
            obj=obj,
            spec=spec,
            context=context,
            when=compiled.when,
            active=list(status.active),
            pending=list(status.pending_retries),
            recent=list(status.recent_runs),
            dead_letters=list(status.dead_letters),
            buffered=list(status.buffered),
            backfills=list(status.backfills),
            counters=status.counters,
            conditions=list(status.conditions),
            cursor=status.schedule_cursor,
            next_schedule_time=status.next_schedule_time,
            last_schedule_time=status.last_schedule_time,
            last_successful_time=status.last_successful_time,
            last_failure_time=status.last_failure_time,
            consecutive_dead_letters=status.consecutive_dead_letters,
            circuit_generation=status.circuit_generation,
            last_handled_trigger=status.last_handled_trigger,
            last_handled_redrive=status.last_handled_redrive,
            last_handled_backfill=status.last_handled_backfill,
            finished_at=status.finished_at,
            exclusion=compiled.exclusion,
            calendar_problem=compiled.calendar_problem,
            reservation=status.reservation,
        )

    @property
    def now(self) -> datetime:
        return self.context.now

    @property
    def uid(self) -> str:
        return self.obj.metadata.uid

    @property
    def generation(self) -> int:
        return self.obj.metadata.generation

    @property
    def closing(self) -> bool:
        """The ScheduledJob is being deleted: no new Jobs."""
        return self.obj.metadata.deletion_timestamp is not None

    @property
    def circuit_open(self) -> bool:
        """The suspendAfter circuit is open (for the current generation)."""
        return self.circuit_generation is not None and self.circuit_generation == self.generation

    def count(self, counter: StatusCounter, amount: int = 1) -> None:
        """Add ``amount`` to one of :class:`Counters`' fields."""
        if amount:
            current: int = getattr(self.counters, counter.value)
            self.counters = self.counters.model_copy(update={counter.value: current + amount})

    def emit(self, reason: EventReason, message: str, *, warning: bool = False) -> None:
        kind = EventType.WARNING if warning else EventType.NORMAL
        self.actions.append(EmitEvent(type=kind, reason=reason, message=message))

    def record(self, run: RunRecord) -> None:
        """Append a finished run to ``recentRuns`` (newest last, bounded)."""
        self.recent.append(run)
        del self.recent[:-MAX_RECENT_RUNS]

    def keys_in_flight(self) -> set[RunKey]:
        """Runs that are active, waiting for a retry or buffered (waiting for the active run to end)."""
        return (
            {(a.scheduled_time, a.manual) for a in self.active}
            | {(p.scheduled_time, p.manual) for p in self.pending}
            | {(b.scheduled_time, b.manual) for b in self.buffered}
        )

    def creates_left(self) -> int:
        """Job creates this pass may still start (``Context.creates_per_pass`` minus those already planned)."""
        planned = sum(isinstance(action, CreateJob) for action in self.actions)
        return self.context.creates_per_pass - planned

    def backlog_left(self) -> int:
        """Catch-up and backfill runs this pass may still start (``Context.backlog_creates`` minus those started;
        :data:`UNBOUNDED` without a namespace budget)."""
        budget = self.context.backlog_creates
        return UNBOUNDED if budget is None else budget - self.backlog_started

    def draws(self, trigger: Trigger, nominal: datetime) -> bool:
        """A new run of ``trigger`` at ``nominal`` draws from the namespace's budget (see :data:`BACKLOG`)."""
        if trigger is Trigger.CATCH_UP and (nominal == self.late_by_one or nominal >= self.context.now - LAG_ALLOWANCE):
            return False
        return trigger in BACKLOG

    def may_start(self, trigger: Trigger, nominal: datetime) -> bool:
        """A new run may start as far as the namespace's budget goes; one that may not marks the pass
        :attr:`budget_held` (its run waits for a later pass)."""
        if not self.draws(trigger, nominal) or self.backlog_left() > 0:
            return True
        self.budget_held = True
        return False

    def started(self, trigger: Trigger, nominal: datetime) -> None:
        """A new run started: counted against the namespace's budget if it draws from it."""
        self.backlog_started += self.draws(trigger, nominal)

    @property
    def busy(self) -> bool:
        """A run is active or waiting for a retry, or a Job of the CronJob handed over still runs (what ``Forbid``
        and the buffer policies wait for)."""
        return bool(self.active or self.pending or self.adopted)

    def freeze(self) -> ScheduledJobStatus:
        """The new status (``observedGeneration`` set to the object's generation)."""
        return ScheduledJobStatus(
            observed_generation=self.generation,
            conditions=tuple(self.conditions),
            next_schedule_time=self.next_schedule_time,
            last_schedule_time=self.last_schedule_time,
            schedule_cursor=self.cursor,
            last_successful_time=self.last_successful_time,
            last_failure_time=self.last_failure_time,
            active=tuple(self.active),
            pending_retries=tuple(self.pending),
            recent_runs=tuple(self.recent),
            dead_letters=tuple(self.dead_letters),
            buffered=tuple(self.buffered),
            backfills=tuple(self.backfills),
            counters=self.counters,
            consecutive_dead_letters=self.consecutive_dead_letters,
            circuit_generation=self.circuit_generation,
            last_handled_trigger=self.last_handled_trigger,
            last_handled_redrive=self.last_handled_redrive,
            last_handled_backfill=self.last_handled_backfill,
            finished_at=self.finished_at,
            reservation=self.reservation,
        )
