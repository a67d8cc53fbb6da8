"""``plan(obj, jobs, context) -> Plan``: every decision of one pass over one ScheduledJob (DESIGN §4-§6).

The planner is pure: it never reads the clock (``context.now``), never does I/O and never raises for a
bad spec. The order of one pass:

1. An invalid spec (``obj.spec is None``) only reports itself: ``Ready=False`` with reason
   ``InvalidSchedule`` (the first problem is under ``spec.schedule``, ``spec.timeZone`` or
   ``spec.daylightSaving``), ``ObjectTooLarge`` (the store kept only a stub of an object over its bound),
   ``Quarantined`` (the intake could not read the object and kept only a stub)
   or ``InvalidSpec``, the error text (naming the field) as message, and one
   Warning Event of that reason when the condition changes. No runs, no wake-up.
2. A spec change (``generation != status.circuitGeneration``) closes an open dead-letter circuit.
3. A new ``sundial.dev/redrive`` token redrives the dead letters (:mod:`.requests.triggers`).
4. Claimed attempts are matched with their Jobs (:mod:`.runs.outcomes`): success, failure -> retry or dead
   letter (:mod:`.runs.retries`), JobLost, UnexpectedJob, re-issue of never-seen creates.
5. Pending retries whose ``notBefore`` has come start (not while the circuit is open); then the oldest
   buffered run, if nothing is active or waiting (:mod:`.concurrency.buffers`).
6. Due nominal times (:mod:`.times.due`) - not while suspended, while the circuit is open or while the
   object is being deleted - plus one manual run for a new ``sundial.dev/trigger`` token (allowed while
   suspended) go through ``concurrencyPolicy`` (:mod:`.concurrency.admission`); then a new ``sundial.dev/backfill``
   request is taken and the runs of the oldest unfinished backfill that the policy admits now
   (:mod:`.requests.backfills`). Running Jobs of a CronJob the object took over from count as active
   (:mod:`.concurrency.adoptions`). Catch-up and backfill runs start only as far as ``Context.backlog_creates``
   (the namespace's budget, DESIGN §11.1) goes; the others wait for a later pass.
7. Finished Jobs beyond the history limits are deleted (:mod:`.runs.history`).
8. One-offs complete; ``ttlSecondsAfterFinished`` deletes the object (:mod:`.summary`).
9. Conditions (:mod:`.summary`), ``nextScheduleTime`` and the wake-up time are computed: "now" while runs
   wait only for this pass's creates, never for runs that wait for the namespace's budget
   (``Plan.backlog_waiting``: the runtime knows when it has a create again).

``write_status`` is true when the status changed materially; ``activeRuns[].jobSeen`` flips alone are
not material (they ride along with the next material write), nor is ``fencingToken`` (stamped by the
runtime on every write: a new token alone, after a failover, writes nothing). Planning again with the returned status,
the same Jobs (minus those it deleted) and the same ``now`` writes nothing and acts on nothing.

``nextScheduleTime`` is the first nominal time not yet handled (after the cursor; it may be a little in
the past while its jitter delay runs); while suspended or with the circuit open it is the first nominal
time after ``now`` (shown, so users see when a resumed schedule runs next); for one-offs it is the
nominal time until it is handled, then unset.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType, Trigger
from sundial.model.errors import ObjectQuarantinedError, ObjectTooLargeError
from sundial.model.resource import ScheduledJob
from sundial.model.status import ActiveRun, ScheduledJobStatus
from sundial.planner import summary
from sundial.planner.actions import CONDITION_EVENTS, Action, EmitEvent, EventType
from sundial.planner.concurrency import admission, adoptions, buffers
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.plans import BACKLOG, HOLD_MARGIN, Context, Plan
from sundial.planner.requests import backfills, triggers
from sundial.planner.runs import attempts, history, outcomes, reservations, retries
from sundial.planner.status import conditions
from sundial.planner.status.drafts import Draft, NewRun
from sundial.planner.times import due, exclusions, missed

_SCHEDULE_FIELDS = ("spec.schedule", "spec.timeZone", "spec.daylightSaving")


def plan(obj: ScheduledJob, jobs: Sequence[ObservedJob], context: Context) -> Plan:
    """Plan one pass over ``obj`` given its observed ``jobs`` (see the module docstring)."""
    spec = obj.spec
    if spec is None:
        return _invalid(obj, context)
    draft = Draft.start(obj, spec, context)
    observed = _by_name(jobs)
    draft.adopted = adoptions.running(draft, observed.values())

    if draft.circuit_generation is not None and not draft.circuit_open:
        draft.circuit_generation = None
        draft.consecutive_dead_letters = 0
    triggers.redrive(draft)
    started = reservations.record_used(draft, observed)
    outcomes.resolve_active(draft, observed)
    retries.start_due_retries(draft)
    new_runs: list[NewRun] = buffers.release(draft)

    paused = spec.suspend or draft.circuit_open or draft.closing or draft.calendar_problem is not None
    was_suspended = obj.status.condition(ConditionType.SUSPENDED)
    resumed_since = None
    if not paused and was_suspended is not None and was_suspended.status == ConditionStatus.TRUE:
        resumed_since = was_suspended.last_transition_time
    if not paused:
        found = due.find_due(draft, resumed_since=resumed_since)
        draft.cursor = found.cursor
        circuit_drop = found.dropped if was_suspended and was_suspended.reason != ConditionReason.SUSPENDED else 0
        missed.record(draft, found.missed, unlisted=found.missed_unlisted, dropped=circuit_drop)
        exclusions.record(draft, found.excluded)
        new_runs += [(t, trigger, False) for t, trigger in found.to_run]
        draft.late_by_one = _late_by_one(found.to_run)
    manual = triggers.manual_request(draft)
    if manual is not None and not draft.closing:
        new_runs.append((manual, Trigger.MANUAL, True))
    admission.admit(draft, new_runs, observed)
    backfills.request(draft)
    admission.admit(draft, backfills.runs_to_start(draft, observed), observed)
    history.prune(draft, jobs)

    finished = summary.finish_one_off(draft)
    draft.next_schedule_time = due.next_time(draft, paused=paused)
    summary.put_conditions(draft, finished=finished)
    ahead = draft.context.prepared_runs and not paused and not finished
    draft.reservation = reservations.reserve(draft, draft.next_schedule_time if ahead else None)
    return _decide(draft, paused=paused, started=started)


def _decide(draft: Draft, *, paused: bool, started: datetime | None) -> Plan:
    """Whether and when to write the pass's status (DESIGN §6, §7.5): before the actions (the claim), after
    them in the low-priority lane (the reserved run's instant; a reservation on its own; a used reservation's
    start, held while its Job runs), or not at all."""
    stored = draft.obj.status
    status = draft.freeze()
    reserve = draft.reservation != stored.reservation
    reserve_at = hold = None
    if reservations.instant(draft, stored.reservation):
        write, deferred = False, True
        hold = _hold_until(draft, status, stored, instant=True)
    elif _material(status) != _material(stored):
        hold = _hold_until(draft, status, stored, instant=False) if started is not None else None
        write, deferred = hold is None, hold is not None
    elif reserve and draft.reservation is not None:
        due_at = due.fire_at(draft, draft.reservation.scheduled_time)
        soon = due_at - draft.now <= draft.context.reserve_ahead
        write, deferred = draft.context.lane and soon, soon and not draft.context.lane
        reserve_at = None if soon else due_at - draft.context.reserve_ahead
    else:
        write, deferred = False, False
    wake = _wake_at(draft, paused=paused)
    if reserve_at is not None:
        wake = reserve_at if wake is None else min(wake, reserve_at)
    return Plan(
        status=status,
        write_status=write,
        actions=tuple(draft.actions),
        wake_at=wake,
        backlog_creates=draft.backlog_started,
        backlog_waiting=_waits_for_budget(draft),
        deferred=deferred,
        hold_until=hold,
    )


def _hold_until(
    draft: Draft, status: ScheduledJobStatus, stored: ScheduledJobStatus, *, instant: bool
) -> datetime | None:
    """Until when the owed write of a used reservation may wait for its Job's end (DESIGN §7.5), None: not held.
    Held only while the pass's one change is that run's start (it is active, its Job not finished, the pass has
    no other action than the instant's own), for at most ``Context.hold_start`` after its instant and never
    closer than :data:`HOLD_MARGIN` to the next run's instant. Everything the pass decides is decided on the run
    as started either way (``reservations.record_used``); only the status write waits."""
    reservation = stored.reservation
    if reservation is None or draft.context.hold_start <= timedelta(0):
        return None
    run = next((r for r in status.active if r.job == reservation.job and r.attempt == 1), None)
    if run is None or run.scheduled_time != reservation.scheduled_time:
        return None
    if not instant and draft.actions:  # the instant's create and Event are its only ones (``reservations.instant``)
        return None
    if _material(_without_start(status, stored, run)) != _material(stored):
        return None
    until = due.fire_at(draft, run.scheduled_time) + draft.context.hold_start  # its Job was created after that
    if draft.next_schedule_time is not None:
        until = min(until, due.fire_at(draft, draft.next_schedule_time) - HOLD_MARGIN)
    return until if until > draft.now else None


def _without_start(status: ScheduledJobStatus, stored: ScheduledJobStatus, run: ActiveRun) -> ScheduledJobStatus:
    """STATUS less what recording RUN's start changes (``reservations.record_used``; the next time follows the
    cursor, and the Ready message names it): equal to the stored status when nothing else changed."""
    counters = status.counters.model_copy(update={"runs": status.counters.runs - 1})
    ready = stored.condition(ConditionType.READY)
    if ready is None or ready.reason != ConditionReason.SCHEDULED:
        conditions = status.conditions
    else:
        conditions = tuple(
            ready if c.type == ConditionType.READY and c.reason == ConditionReason.SCHEDULED else c
            for c in status.conditions
        )
    return status.model_copy(
        update={
            "active": tuple(r for r in status.active if r is not run),
            "counters": counters,
            "conditions": conditions,
            "last_schedule_time": stored.last_schedule_time,
            "schedule_cursor": stored.schedule_cursor,
            "next_schedule_time": stored.next_schedule_time,
        }
    )


def _by_name(jobs: Sequence[ObservedJob]) -> dict[str, ObservedJob]:
    """Jobs by name; a live Job wins over a tombstone of the same name."""
    result: dict[str, ObservedJob] = {}
    for job in jobs:
        if job.name not in result or result[job.name].phase is JobPhase.DELETED:
            result[job.name] = job
    return result


def _invalid(obj: ScheduledJob, context: Context) -> Plan:
    error = obj.spec_error
    message = str(error) if error is not None and str(error) else "spec: invalid"
    first = error.first_field if error is not None else "spec"
    reason = ConditionReason.INVALID_SCHEDULE if first.startswith(_SCHEDULE_FIELDS) else ConditionReason.INVALID_SPEC
    if isinstance(error, ObjectTooLargeError):
        reason = ConditionReason.OBJECT_TOO_LARGE
    elif isinstance(error, ObjectQuarantinedError):
        reason = ConditionReason.QUARANTINED
    found = list(obj.status.conditions)
    generation = obj.metadata.generation
    changed = conditions.put(
        found,
        kind=ConditionType.READY,
        status=ConditionStatus.FALSE,
        reason=reason,
        message=message,
        now=context.now,
        generation=generation,
    )
    actions: tuple[Action, ...] = ()
    if changed:
        actions = (EmitEvent(type=EventType.WARNING, reason=CONDITION_EVENTS[reason], message=message),)
    status = obj.status.model_copy(
        update={"conditions": tuple(found), "observed_generation": generation, "next_schedule_time": None}
    )
    return Plan(status=status, write_status=_material(status) != _material(obj.status), actions=actions, wake_at=None)


def _wake_at(draft: Draft, *, paused: bool) -> datetime | None:
    now = draft.now
    candidates: list[datetime] = []
    upcoming = due.next_time(draft, paused=paused, excluded=True) if draft.exclusion else draft.next_schedule_time
    if upcoming is not None and not paused:
        candidates.append(due.fire_at(draft, upcoming))
    age = draft.spec.retry.max_run_age
    for retry in draft.pending:
        if retry.not_before > now:
            candidates.append(retry.not_before)
        elif age is not None and retry.trigger not in attempts.AGELESS:
            candidates.append(max(now, retry.scheduled_time + age) + due.TICK)
    if _comes_back_at_once(draft):
        candidates.append(now)
    reissue = draft.context.reissue_after
    candidates += [run.claimed_at + reissue for run in draft.active if not run.job_seen]
    candidates += outcomes.overdue_deadlines(draft)
    ttl = draft.spec.ttl_seconds_after_finished
    if draft.finished_at is not None and ttl is not None:
        deadline = draft.finished_at + timedelta(seconds=ttl)
        if deadline > now:
            candidates.append(deadline)
    return min(candidates, default=None)


def _late_by_one(to_run: Sequence[tuple[datetime, Trigger]]) -> datetime | None:
    """The catch-up run due just before the scheduled run of the pass (see ``Draft.late_by_one``)."""
    if len(to_run) > 1 and to_run[-1][1] is Trigger.SCHEDULE:
        return to_run[-2][0]
    return None


def _waits_for_budget(draft: Draft) -> bool:
    """Catch-up or backfill runs are left that only the namespace's budget holds back (``Context.backlog_creates``)."""
    if draft.budget_held:
        return True
    if draft.backlog_left() > 0:
        return False
    kept = buffers.deferred(draft) and any(b.trigger in BACKLOG for b in draft.buffered)
    return kept or backfills.in_progress(draft)


def _comes_back_at_once(draft: Draft) -> bool:
    """Runs wait for the next pass only (the pass's creates ran out), not for the namespace's budget."""
    if not (backfills.in_progress(draft) or buffers.deferred(draft)):
        return False
    if not _waits_for_budget(draft):
        return True
    return buffers.deferred(draft) and any(b.trigger not in BACKLOG for b in draft.buffered)


def _material(status: ScheduledJobStatus) -> ScheduledJobStatus:
    """The status without what alone does not justify a write: ``jobSeen`` flags; ``fencingToken`` (the
    runtime stamps the writer's token on every write; the planned status never has one, so comparing it made
    every pass after the first write write again: each Job watch event cost a status PATCH); and the
    reservation (a reservation on its own is written in the lane, :func:`_decide`)."""
    active = tuple(run.model_copy(update={"job_seen": False}) for run in status.active)
    return status.model_copy(update={"active": active, "fencing_token": None, "reservation": None})
