"""Builders and named time fixtures for the planner's table tests (CronJob-controller style)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sundial.model import (
    ActiveRun,
    Condition,
    DeadLetter,
    DeadLetterReason,
    PendingRetry,
    Reservation,
    ScheduledJobStatus,
    SpecError,
    Trigger,
)
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType
from sundial.model.resource import ObjectMeta, ScheduledJob, parse_spec
from sundial.planner.actions import CreateJob, DeleteJob, DeleteScheduledJob, EmitEvent
from sundial.planner.manifests import job_name
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.plans import Context, Plan
from sundial.schedule import format_rfc3339

UID = "0f9d6c1e-uid"
NAME = "nightly-report"
NAMESPACE = "team-a"
TOKEN = "0-7"

# Named instants. The object is created at created(); the hourly schedule "0 * * * *" is due at
# top_of_the_hour().


def created() -> datetime:
    return datetime(2026, 5, 11, 8, 30, tzinfo=UTC)


def top_of_the_hour() -> datetime:
    return datetime(2026, 5, 11, 10, 0, tzinfo=UTC)


def just_before_the_hour() -> datetime:
    return top_of_the_hour() - timedelta(seconds=1)


def just_after_the_hour() -> datetime:
    return top_of_the_hour() + timedelta(seconds=5)


def hours_after(hours: float, base: datetime | None = None) -> datetime:
    return (base or top_of_the_hour()) + timedelta(hours=hours)


def seconds_after(seconds: float, base: datetime | None = None) -> datetime:
    return (base or top_of_the_hour()) + timedelta(seconds=seconds)


def top_of_the_hour_in_zone(zone: str) -> datetime:
    """10:00 local time on the test day in ``zone``, as UTC."""
    return datetime(2026, 5, 11, 10, 0, tzinfo=ZoneInfo(zone)).astimezone(UTC)


def just_after_the_hour_in_zone(zone: str) -> datetime:
    return top_of_the_hour_in_zone(zone) + timedelta(seconds=5)


def template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "report"}, "annotations": {"team": "a"}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "report"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "env": [{"name": "X", "value": "1"}]}],
                },
            },
        },
    }


def raw_spec(**fields: Any) -> dict[str, Any]:
    """A spec: ``schedule="0 * * * *"`` unless given (``schedule=None`` for one-offs); camelCase keys."""
    spec: dict[str, Any] = {"schedule": "0 * * * *", "jobTemplate": template()}
    spec.update(fields)
    return {key: value for key, value in spec.items() if value is not None}


def make_obj(
    spec: Mapping[str, Any] | None = None,
    *,
    status: ScheduledJobStatus | None = None,
    annotations: Mapping[str, str] | None = None,
    generation: int = 1,
    creation: datetime | None = None,
    deleting: bool = False,
    name: str = NAME,
) -> ScheduledJob:
    raw = dict(spec if spec is not None else raw_spec())
    parsed = None
    error = None
    try:
        parsed = parse_spec(raw)
    except SpecError as problem:
        error = problem
    return ScheduledJob(
        metadata=ObjectMeta(
            name=name,
            namespace=NAMESPACE,
            uid=UID,
            generation=generation,
            resource_version="1",
            creation_timestamp=creation or created(),
            annotations=dict(annotations or {}),
            deletion_timestamp=created() if deleting else None,
        ),
        spec=parsed,
        spec_error=error,
        status=status or ScheduledJobStatus(),
        raw_spec=raw,
    )


def reserved(nominal: datetime, *, token: str = TOKEN, generation: int = 1) -> Reservation:
    """The reservation of the scheduled run at NOMINAL (DESIGN §7.5), as a pass under TOKEN writes it."""
    name = job_name(scheduled_job=NAME, scheduled_time=nominal, attempt=1)
    return Reservation(scheduled_time=nominal, job=name, fencing_token=token, generation=generation)


def with_status(obj: ScheduledJob, status: ScheduledJobStatus) -> ScheduledJob:
    return ScheduledJob(
        metadata=obj.metadata, spec=obj.spec, spec_error=obj.spec_error, status=status, raw_spec=obj.raw_spec
    )


def context(now: datetime, **fields: Any) -> Context:
    return Context(now=now, fencing_token=TOKEN, **fields)


def job(
    name: str,
    phase: JobPhase = JobPhase.ACTIVE,
    *,
    owner: str | None = UID,
    finished: datetime | None = None,
    created_at: datetime | None = None,
    reason: str = "",
    uid: str | None = None,
) -> ObservedJob:
    return ObservedJob(
        name=name,
        uid=uid or f"uid-of-{name}",
        owner_uid=owner,
        phase=phase,
        scheduled_time=None,
        attempt=None,
        created_at=created_at,
        finished_at=finished,
        failure_reason=reason,
    )


def events(plan: Plan) -> list[str]:
    """``"Warning Retrying"``-style summaries of the plan's Events, in order."""
    return [f"{a.type} {a.reason}" for a in plan.actions if isinstance(a, EmitEvent)]


def reasons(plan: Plan) -> list[str]:
    return [str(a.reason) for a in plan.actions if isinstance(a, EmitEvent)]


def creates(plan: Plan) -> list[str]:
    return [a.manifest["metadata"]["name"] for a in plan.actions if isinstance(a, CreateJob)]


def deletes(plan: Plan) -> list[str]:
    return [a.name for a in plan.actions if isinstance(a, DeleteJob)]


def deletes_object(plan: Plan) -> bool:
    return any(isinstance(a, DeleteScheduledJob) for a in plan.actions)


def condition(plan: Plan, kind: str) -> tuple[str, str] | None:
    found = plan.status.condition(kind)
    return None if found is None else (found.status, found.reason)


def name_at(when: datetime, attempt: int = 1, *, manual: bool = False) -> str:
    return job_name(scheduled_job=NAME, scheduled_time=when, attempt=attempt, manual=manual)


def unix(when: datetime) -> int:
    return int(when.timestamp())


def first(values: Sequence[Any]) -> Any:
    return values[0]


def active_run(
    when: datetime,
    attempt: int = 1,
    *,
    trigger: Trigger = Trigger.SCHEDULE,
    claimed: datetime | None = None,
    seen: bool = True,
    manual: bool = False,
    limit: int | None = None,
) -> ActiveRun:
    return ActiveRun(
        scheduled_time=when,
        attempt=attempt,
        job=name_at(when, attempt, manual=manual),
        trigger=trigger,
        claimed_at=claimed or when,
        job_seen=seen,
        manual=manual,
        attempt_limit=limit,
    )


def pending_retry(
    when: datetime,
    attempt: int = 2,
    *,
    not_before: datetime,
    trigger: Trigger = Trigger.SCHEDULE,
    manual: bool = False,
    limit: int | None = None,
) -> PendingRetry:
    return PendingRetry(
        scheduled_time=when,
        attempt=attempt,
        not_before=not_before,
        trigger=trigger,
        last_job=name_at(when, attempt - 1, manual=manual),
        last_failure="BackoffLimitExceeded",
        manual=manual,
        attempt_limit=limit,
    )


def dead_letter(when: datetime, attempts: int = 1, *, reason: DeadLetterReason | None = None) -> DeadLetter:
    return DeadLetter(
        scheduled_time=when,
        attempts=attempts,
        last_job=name_at(when, attempts),
        reason=reason or DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,
        message="attempt failed",
        trigger=Trigger.SCHEDULE,
        dead_lettered_at=when,
    )


def steady_conditions(next_time: datetime | None = None) -> tuple[Condition, ...]:
    """The conditions of a settled hourly object whose next run is ``next_time``."""
    upcoming = next_time or top_of_the_hour() + timedelta(hours=1)
    since = created()

    def make(kind: str, state: str, reason: str, message: str = "") -> Condition:
        return Condition(
            type=kind,
            status=state,
            reason=reason,
            message=message,
            last_transition_time=since,
            observed_generation=1,
        )

    return (
        make(ConditionType.SUSPENDED, ConditionStatus.FALSE, ConditionReason.NOT_SUSPENDED),
        make(ConditionType.DEAD_LETTERED, ConditionStatus.FALSE, ConditionReason.NO_DEAD_LETTERS),
        make(
            ConditionType.READY,
            ConditionStatus.TRUE,
            ConditionReason.SCHEDULED,
            f"next run at {format_rfc3339(upcoming)}",
        ),
    )


def status(**fields: Any) -> ScheduledJobStatus:
    """A settled status of the hourly object that handled everything up to top_of_the_hour()."""
    fields.setdefault("schedule_cursor", top_of_the_hour())
    fields.setdefault("next_schedule_time", top_of_the_hour() + timedelta(hours=1))
    fields.setdefault("observed_generation", 1)
    fields.setdefault("conditions", steady_conditions())
    return ScheduledJobStatus(**fields)


def counters(plan: Plan) -> dict[str, int]:
    return {key: value for key, value in plan.status.counters.model_dump().items() if value}
