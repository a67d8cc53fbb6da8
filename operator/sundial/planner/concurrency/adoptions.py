"""The running Jobs of a CronJob this ScheduledJob took over from (``kubectl sundial import --hand-over``,
DESIGN §12.4, :mod:`sundial.model.handovers`).

The hand-over labels the CronJob's running Jobs ``sundial.dev/scheduledjob: <this object>``, so they come to the
planner with its own; they stay the CronJob's (their controller is the CronJob's UID). Those that are still
running are :attr:`Draft.adopted`: ``Forbid`` skips and the buffer policies wait while one runs, ``Replace``
deletes them (UID precondition) as it deletes its own active Jobs. They are never recorded as runs of this
object and never pruned by its history limits; Jobs of any other owner stay ignored as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from sundial.model import handovers
from sundial.planner.actions import DeleteJob, DeleteReason, EventReason
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.status.drafts import Draft


def running(draft: Draft, jobs: Iterable[ObservedJob]) -> list[ObservedJob]:
    """The running Jobs of the CronJob ``draft``'s object took over from (none without a hand-over)."""
    handover = handovers.handed_over(draft.obj.metadata.annotations)
    if handover is None:
        return []
    return [job for job in jobs if job.phase is JobPhase.ACTIVE and job.uid and job.owner_uid == handover.cron_job_uid]


def replace(draft: Draft) -> None:
    """``Replace``: delete the CronJob's running Jobs (each with a UID precondition); they no longer count."""
    for job in draft.adopted:
        draft.actions.append(DeleteJob(name=job.name, uid=job.uid, reason=DeleteReason.REPLACED))
    if draft.adopted:
        names = ", ".join(job.name for job in draft.adopted)
        draft.emit(EventReason.RUN_REPLACED, f"Replaced the running Job(s) of the CronJob handed over: {names}")
    draft.adopted = []
