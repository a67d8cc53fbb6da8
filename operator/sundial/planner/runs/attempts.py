"""Claiming attempts of runs (DESIGN §4): a new run's first attempt, or a retry's next one, is claimed in
``status.active`` under its deterministic Job name and its Job created (:class:`~sundial.planner.actions.CreateJob`,
re-issued under the same name when never observed); a finished run is recorded in ``recentRuns``.

Also the words every room's Event messages use for runs and times (:func:`when`, :func:`describe`).
"""

from __future__ import annotations

from datetime import datetime

from sundial import schedule
from sundial.model.enums import CompleteReason, RunResult, Trigger
from sundial.model.status import ActiveRun, DeadLetter, PendingRetry, RunRecord, StatusCounter
from sundial.planner import manifests
from sundial.planner.actions import CreateJob, EventReason
from sundial.planner.status.drafts import Draft

AGELESS = frozenset({Trigger.REDRIVE, Trigger.BACKFILL})
"""Runs whose nominal time does not count against ``retry.maxRunAge`` (asked for explicitly, however old);
their retries keep the trigger, so the next attempts are exempt too."""


def when(time: datetime) -> str:
    return schedule.format_rfc3339(time)


def describe(run: ActiveRun | PendingRetry | DeadLetter) -> str:
    prefix = "manual run" if run.manual else "run"
    return f"{prefix} {when(run.scheduled_time)}"


def start_run(draft: Draft, *, scheduled_time: datetime, trigger: Trigger, manual: bool) -> None:
    """Start a new run (its first attempt): counted in ``runs``, ``lastScheduleTime`` moves forward."""
    draft.count(StatusCounter.RUNS)
    draft.last_schedule_time = max(filter(None, (draft.last_schedule_time, scheduled_time)))
    start_attempt(draft, scheduled_time=scheduled_time, attempt=1, trigger=trigger, manual=manual)


def start_attempt(
    draft: Draft,
    *,
    scheduled_time: datetime,
    attempt: int,
    trigger: Trigger,
    manual: bool,
    attempt_limit: int | None = None,
) -> None:
    """Claim an attempt (``status.active``) and create its Job."""
    name = manifests.job_name(
        scheduled_job=draft.obj.metadata.name, scheduled_time=scheduled_time, attempt=attempt, manual=manual
    )
    run = ActiveRun(
        scheduled_time=scheduled_time,
        attempt=attempt,
        job=name,
        trigger=trigger,
        claimed_at=draft.now,
        attempt_limit=attempt_limit,
        manual=manual,
    )
    draft.active.append(run)
    draft.actions.append(create_job(draft, run, reissue=False))
    draft.emit(
        EventReason.SUCCESSFUL_CREATE,
        f"Created Job {name} for {describe(run)} (attempt {attempt}, trigger {trigger})",
    )


def create_job(draft: Draft, run: ActiveRun, *, reissue: bool) -> CreateJob:
    manifest = manifests.build_job(
        obj=draft.obj,
        scheduled_time=run.scheduled_time,
        attempt=run.attempt,
        trigger=run.trigger,
        fencing_token=draft.context.fencing_token,
        manual=run.manual,
        name=run.job,
    )
    return CreateJob(manifest=manifest, scheduled_time=run.scheduled_time, attempt=run.attempt, reissue=reissue)


def run_record(run: ActiveRun, result: RunResult, finished: datetime) -> RunRecord:
    return RunRecord(
        scheduled_time=run.scheduled_time,
        attempts=run.attempt,
        result=result,
        job=run.job,
        trigger=run.trigger,
        started_at=run.claimed_at,
        finished_at=finished,
        manual=run.manual,
    )


def note_one_off(draft: Draft, run: ActiveRun | PendingRetry | DeadLetter, outcome: CompleteReason) -> None:
    if draft.when.finite and not run.manual:
        draft.one_off_outcome = outcome
