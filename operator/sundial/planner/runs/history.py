"""Finished-Job history limits (``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit``).

Finished Jobs (Succeeded or Failed) owned by this ScheduledJob's UID and not referenced by
``status.active`` are sorted newest first by (finishedAt, creationTimestamp, name); the newest
``successfulJobsHistoryLimit`` succeeded and ``failedJobsHistoryLimit`` failed ones are kept and the
rest get a ``DeleteJob`` (reason ``HistoryLimit``, uid precondition). Jobs of other owners (or of none)
are never deleted, and neither are attempts that never had a Job (no UID: rejected as invalid, or a squatter's
name).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sundial.planner.actions import DeleteJob, DeleteReason
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.status.drafts import Draft

_EPOCH = datetime.min.replace(tzinfo=UTC)


def _age_key(job: ObservedJob) -> tuple[datetime, datetime, str]:
    return (job.finished_at or _EPOCH, job.created_at or _EPOCH, job.name)


def prune(draft: Draft, jobs: Sequence[ObservedJob]) -> None:
    """Append ``DeleteJob`` for finished Jobs beyond the history limits."""
    claimed = {run.job for run in draft.active}
    limits = {
        JobPhase.SUCCEEDED: draft.spec.successful_jobs_history_limit,
        JobPhase.FAILED: draft.spec.failed_jobs_history_limit,
    }
    for phase, limit in limits.items():
        finished = [
            job
            for job in jobs
            if job.phase is phase and job.owner_uid == draft.uid and job.uid and job.name not in claimed
        ]
        finished.sort(key=_age_key, reverse=True)
        for job in finished[limit:]:
            draft.actions.append(DeleteJob(name=job.name, uid=job.uid, reason=DeleteReason.HISTORY_LIMIT))
