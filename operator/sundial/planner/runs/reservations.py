"""Prepared runs (DESIGN §7.5): the next run is reserved ahead of its instant, so that at the instant only its
Job create remains; the status write that records the start comes after, in the low-priority lane.

* :func:`reserve` - the reservation a pass leaves in status: the next nominal time's first attempt (its Job
  name), under the pass's fencing token and the object's ``generation``. Written with any status write the
  object gets anyway (the one that records run N reserves run N+1; an object's first status reserves its
  first run); on its own only through the lane, for a run due within ``Context.reserve_ahead``.
* :func:`instant` - the pass may create the reserved run's Job *without* writing status first: the stored
  reservation carries this pass's token and the object's generation, and the pass's only actions are that
  Job's create (first attempt, trigger ``schedule``) and its ``SuccessfulCreate`` Event. Anything else
  (suspend, a manual action, Forbid/Replace/Buffer decisions, a retry, a spec edit, a failover) writes the
  claim first, as without a reservation.
* :func:`record_used` - the reservation is the claim: while the stored reservation's run is not recorded and
  a Job of its name is observed (created at the instant, or by a replica that crashed before its status
  write), that run's first attempt is active - counted in ``runs``, ``lastScheduleTime`` - exactly as its
  claim would have recorded it, for every decision of the pass (Forbid, Replace, Buffer, JobLost, history).
  The first status write of any pass then records it (merged with whatever else the object needs written,
  often the completion).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from sundial.model.enums import Trigger
from sundial.model.status import ActiveRun, Reservation, StatusCounter
from sundial.planner import manifests
from sundial.planner.actions import CreateJob, EmitEvent, EventReason
from sundial.planner.observed import ObservedJob
from sundial.planner.status.drafts import Draft


def reserve(draft: Draft, nominal: datetime | None) -> Reservation | None:
    """The reservation of the run at NOMINAL (the next one; None: nothing to reserve)."""
    if nominal is None:
        return None
    name = manifests.job_name(scheduled_job=draft.obj.metadata.name, scheduled_time=nominal, attempt=1)
    return Reservation(
        scheduled_time=nominal, job=name, fencing_token=draft.context.fencing_token, generation=draft.generation
    )


def record_used(draft: Draft, jobs: Mapping[str, ObservedJob]) -> datetime | None:
    """Record the stored reservation's run as started when its Job is observed and the run is not recorded
    (see the module docstring); returns its nominal time (None: nothing recorded)."""
    reservation = draft.obj.status.reservation
    if reservation is None:
        return None
    job = jobs.get(reservation.job)
    nominal = reservation.scheduled_time
    if job is None or job.scheduled_time not in (None, nominal) or job.attempt not in (None, 1) or draft.now < nominal:
        return None
    if (draft.cursor is not None and nominal <= draft.cursor) or _known(draft, nominal):
        return None
    draft.count(StatusCounter.RUNS)
    draft.last_schedule_time = max(filter(None, (draft.last_schedule_time, nominal)))
    # The instant's pass handled every time up to this one (a create for it alone was its only action: no
    # other time ran, was missed or excluded), so the cursor moves to it as that pass's claim would have.
    draft.cursor = max(filter(None, (draft.cursor, nominal)))
    created = min(job.created_at, draft.now) if job.created_at is not None else draft.now
    draft.active.append(
        ActiveRun(scheduled_time=nominal, attempt=1, job=reservation.job, trigger=Trigger.SCHEDULE, claimed_at=created)
    )
    return nominal


def _known(draft: Draft, nominal: datetime) -> bool:
    """The scheduled run at NOMINAL is already in status (active, waiting, finished or dead-lettered)."""
    key = (nominal, False)
    return (
        key in draft.keys_in_flight()
        or any((r.scheduled_time, r.manual) == key for r in draft.recent)
        or any((d.scheduled_time, d.manual) == key for d in draft.dead_letters)
    )


def instant(draft: Draft, stored: Reservation | None) -> bool:
    """True when this pass's only work is the reserved run's Job (and its Event), under the reservation's
    token and generation: the Job is created first, the status written after (see the module docstring)."""
    if stored is None or not draft.context.prepared_runs:
        return False
    if stored.fencing_token != draft.context.fencing_token or stored.generation != draft.generation:
        return False
    match draft.actions:
        case [CreateJob(attempt=1, reissue=False) as create, EmitEvent(reason=EventReason.SUCCESSFUL_CREATE)]:
            pass
        case _:
            return False
    name = (create.manifest.get("metadata") or {}).get("name")
    if create.scheduled_time != stored.scheduled_time or name != stored.job:
        return False
    run = next((r for r in draft.active if r.job == stored.job), None)
    return (
        run is not None
        and run.attempt == 1
        and run.trigger is Trigger.SCHEDULE
        and not run.manual
        and run.claimed_at == draft.now
    )
