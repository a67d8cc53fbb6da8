"""What the planner is told about a Job: :class:`ObservedJob` from a Job body as the API returns it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sundial import schedule
from sundial.kube import ownership
from sundial.model import names
from sundial.planner.observed import FailureReason, JobPhase, ObservedJob


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return schedule.parse_rfc3339(value, field="job")
    except schedule.ScheduleError:
        return None


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == kind and condition.get("status") == "True":
            found: Mapping[str, Any] = condition
            return found
    return None


def observe(body: Mapping[str, Any], *, deleted: bool = False) -> ObservedJob:
    """Phase from the Complete/Failed conditions (a deleted unfinished Job is ``DELETED``/JobLost)."""
    meta = body.get("metadata") or {}
    status = body.get("status") or {}
    annotations = meta.get("annotations") or {}
    complete = _condition(status, "Complete")
    failed = _condition(status, "Failed")
    reason = message = ""
    finished: datetime | None = None
    if complete is not None:
        phase = JobPhase.SUCCEEDED
        finished = _time(status.get("completionTime")) or _time(complete.get("lastTransitionTime"))
    elif failed is not None:
        phase = JobPhase.FAILED
        reason = str(failed.get("reason") or FailureReason.FAILED)
        message = str(failed.get("message") or "")
        finished = _time(failed.get("lastTransitionTime"))
    elif deleted:
        phase = JobPhase.DELETED
        reason, message = FailureReason.JOB_LOST, "the Job was deleted before it finished"
    else:
        phase = JobPhase.ACTIVE
    return ObservedJob(
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid", "")),
        owner_uid=ownership.controller_uid(body),
        phase=phase,
        scheduled_time=_time(annotations.get(names.SCHEDULED_TIME_ANNOTATION)),
        attempt=_int(annotations.get(names.ATTEMPT_ANNOTATION)),
        created_at=_time(meta.get("creationTimestamp")),
        finished_at=finished,
        failure_reason=reason,
        failure_message=message,
        shard=str((meta.get("labels") or {}).get(names.SHARD_LABEL) or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
    )


def invalid(
    manifest: Mapping[str, Any], *, message: str, scheduled_time: datetime, attempt: int, owner_uid: str, now: datetime
) -> ObservedJob:
    """A synthetic FAILED attempt for a Job the API server rejected as invalid (never created)."""
    return failed_attempt(
        manifest,
        reason=FailureReason.INVALID_JOB_TEMPLATE,
        message=message,
        scheduled_time=scheduled_time,
        attempt=attempt,
        owner_uid=owner_uid,
        now=now,
    )


def failed_attempt(
    manifest: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    scheduled_time: datetime,
    attempt: int,
    owner_uid: str,
    now: datetime,
) -> ObservedJob:
    """A synthetic FAILED attempt whose Job this object never had (no UID: never deleted by history)."""
    meta = manifest.get("metadata") or {}
    return ObservedJob(
        name=str(meta.get("name", "")),
        uid="",
        owner_uid=owner_uid,
        phase=JobPhase.FAILED,
        scheduled_time=scheduled_time,
        attempt=attempt,
        created_at=now,
        finished_at=now,
        failure_reason=reason,
        failure_message=message,
    )
