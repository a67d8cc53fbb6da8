"""``concurrencyPolicy: Replace``: the runs a new run replaces (DESIGN §4, §7.3).

Of several new runs in one pass only the newest starts: the older ones end as ``RunRecord(Replaced)`` with 0
attempts. Every active attempt and pending retry ends as ``RunRecord(Replaced)``; only Jobs that were observed
are deleted, each with a UID precondition (never by name alone).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sundial.model.enums import CompleteReason, RunResult
from sundial.model.status import RunRecord, StatusCounter
from sundial.planner.actions import DeleteJob, DeleteReason, EventReason
from sundial.planner.concurrency import adoptions
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.runs.attempts import note_one_off, run_record
from sundial.planner.status.drafts import Draft, NewRun


def replace(draft: Draft, new_runs: Sequence[NewRun], jobs: Mapping[str, ObservedJob]) -> NewRun:
    """The newest of ``new_runs`` replaces the older ones (never started) and every earlier run; returns it."""
    *older, newest = new_runs
    for nominal, trigger, manual in older:
        draft.record(
            RunRecord(
                scheduled_time=nominal,
                attempts=0,
                result=RunResult.REPLACED,
                trigger=trigger,
                finished_at=draft.now,
                manual=manual,
            )
        )
    draft.count(StatusCounter.SKIPPED, len(older))
    if older:
        draft.emit(EventReason.RUN_REPLACED, f"{len(older)} due run(s) replaced by a newer one before starting")
    replace_all(draft, jobs)
    return newest


def replace_all(draft: Draft, jobs: Mapping[str, ObservedJob]) -> None:
    """``concurrencyPolicy: Replace``: delete every active Job and cancel every pending retry.

    Their runs end as ``RunRecord(Replaced)`` and are not retried. Only observed Jobs are deleted, each with
    a UID precondition: a Job never observed (its create may still be in flight) is not deleted by name, and
    Jobs owned by another object are not touched - but the running Jobs of a CronJob this object took over
    from are deleted too (:mod:`.adoptions`).
    """
    adoptions.replace(draft)
    replaced = 0
    for run in list(draft.active):
        job = jobs.get(run.job)
        if job is not None and job.uid and job.phase is not JobPhase.DELETED and job.owner_uid in (None, draft.uid):
            draft.actions.append(DeleteJob(name=run.job, uid=job.uid, reason=DeleteReason.REPLACED))
        draft.active.remove(run)
        draft.record(run_record(run, RunResult.REPLACED, draft.now))
        note_one_off(draft, run, CompleteReason.MISSED)
        replaced += 1
    for retry in list(draft.pending):
        draft.pending.remove(retry)
        draft.record(
            RunRecord(
                scheduled_time=retry.scheduled_time,
                attempts=retry.attempt - 1,
                result=RunResult.REPLACED,
                job=retry.last_job or None,
                trigger=retry.trigger,
                finished_at=draft.now,
                manual=retry.manual,
            )
        )
        note_one_off(draft, retry, CompleteReason.MISSED)
        replaced += 1
    if replaced:
        draft.emit(EventReason.RUN_REPLACED, f"Replaced {replaced} earlier run(s) (concurrencyPolicy Replace)")
