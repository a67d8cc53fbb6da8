"""Status: dump then parse gives the same value; instants are written as RFC 3339 UTC ending in Z."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from sundial.model import (
    ActiveRun,
    BackfillProgress,
    BufferedRun,
    Condition,
    Counters,
    DeadLetter,
    DeadLetterReason,
    PendingRetry,
    RunRecord,
    RunResult,
    ScheduledJobStatus,
    Trigger,
    parse_status,
)
from sundial.model.resource import dump_status
from sundial.model.types import MAX_MESSAGE_LENGTH

NOON = datetime(2026, 3, 29, 12, 0, tzinfo=UTC)
RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def full_status() -> ScheduledJobStatus:
    berlin = timezone(timedelta(hours=2))
    return ScheduledJobStatus(
        observed_generation=4,
        conditions=(
            Condition(type="Ready", status="True", reason="Scheduled", message="ok", last_transition_time=NOON),
            Condition(
                type="DeadLettered",
                status="True",
                reason="MaxAttemptsExceeded",
                last_transition_time=NOON,
                observed_generation=4,
            ),
        ),
        next_schedule_time=NOON + timedelta(minutes=5),
        last_schedule_time=datetime(2026, 3, 29, 13, 55, tzinfo=berlin),
        schedule_cursor=NOON,
        last_successful_time=NOON - timedelta(hours=1, microseconds=250),
        last_failure_time=NOON - timedelta(minutes=30),
        active=(
            ActiveRun(
                scheduled_time=NOON,
                attempt=1,
                job="report-abc-1",
                trigger=Trigger.SCHEDULE,
                claimed_at=NOON,
                job_seen=True,
            ),
            ActiveRun(
                scheduled_time=NOON,
                attempt=1,
                job="report-m-1",
                trigger=Trigger.MANUAL,
                claimed_at=NOON,
                manual=True,
                attempt_limit=5,
            ),
        ),
        pending_retries=(
            PendingRetry(
                scheduled_time=NOON - timedelta(minutes=10),
                attempt=2,
                not_before=NOON + timedelta(seconds=30),
                trigger=Trigger.CATCH_UP,
                last_job="report-abd-1",
                last_failure="BackoffLimitExceeded",
            ),
        ),
        recent_runs=(
            RunRecord(
                scheduled_time=NOON - timedelta(hours=1),
                attempts=1,
                result=RunResult.SUCCEEDED,
                job="report-aaa-1",
                trigger=Trigger.SCHEDULE,
                started_at=NOON - timedelta(hours=1),
                finished_at=NOON - timedelta(minutes=59),
            ),
        ),
        dead_letters=(
            DeadLetter(
                scheduled_time=NOON - timedelta(hours=2),
                attempts=3,
                last_job="report-aab-3",
                reason=DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,
                message="pod failed",
                trigger=Trigger.RETRY,
                dead_lettered_at=NOON - timedelta(hours=1, minutes=30),
            ),
        ),
        buffered=(BufferedRun(scheduled_time=NOON + timedelta(hours=2), trigger=Trigger.SCHEDULE, buffered_at=NOON),),
        backfills=(
            BackfillProgress(
                token="b1",
                from_=NOON - timedelta(days=2),
                to=NOON - timedelta(days=1),
                max_runs=50,
                next_time=NOON - timedelta(days=1, hours=12),
                started=12,
                already_run=3,
            ),
        ),
        counters=Counters(runs=10, succeeded=7, failed=5, retried=3, missed=1, skipped=2, dead_lettered=1, buffered=1),
        consecutive_dead_letters=1,
        circuit_generation=3,
        last_handled_trigger="2026-03-29T11:00:00Z",
        last_handled_redrive="r1",
        last_handled_backfill="b1",
        finished_at=None,
    )


def _strings_under(value: Any, key: str) -> list[str]:
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k == key and isinstance(v, str)]
        for child in value.values():
            found.extend(_strings_under(child, key))
        return found
    if isinstance(value, list):
        return [s for child in value for s in _strings_under(child, key)]
    return []


TIME_KEYS = (
    "lastTransitionTime",
    "nextScheduleTime",
    "lastScheduleTime",
    "scheduleCursor",
    "lastSuccessfulTime",
    "lastFailureTime",
    "scheduledTime",
    "claimedAt",
    "notBefore",
    "startedAt",
    "finishedAt",
    "deadLetteredAt",
    "bufferedAt",
    "from",
    "to",
    "nextTime",
)


def test_a_full_status_survives_dump_and_parse() -> None:
    status = full_status()

    dumped = dump_status(status)

    assert parse_status(dumped) == status
    assert parse_status(json.loads(json.dumps(dumped))) == status


def test_every_instant_is_written_as_rfc3339_utc_ending_in_z() -> None:
    dumped = dump_status(full_status())

    times = [t for key in TIME_KEYS for t in _strings_under(dumped, key)]
    assert len(times) >= 15
    assert all(RFC3339_UTC.match(t) for t in times), times
    assert dumped["lastScheduleTime"] == "2026-03-29T11:55:00Z"
    assert dumped["lastSuccessfulTime"] == "2026-03-29T10:59:59.999750Z"


def test_the_dump_uses_camel_case_and_omits_unset_fields() -> None:
    dumped = dump_status(full_status())

    assert dumped["observedGeneration"] == 4
    assert dumped["counters"]["deadLettered"] == 1
    assert dumped["active"][0]["jobSeen"] is True
    assert dumped["pendingRetries"][0]["lastFailure"] == "BackoffLimitExceeded"
    assert dumped["recentRuns"][0]["result"] == "Succeeded"
    assert dumped["deadLetters"][0]["reason"] == "MaxAttemptsExceeded"
    assert "finishedAt" not in dumped
    assert "observedGeneration" not in dumped["conditions"][0]
    assert "attemptLimit" not in dumped["active"][0]


def test_an_empty_status_has_defaults_and_round_trips() -> None:
    status = parse_status({})

    assert status == ScheduledJobStatus()
    assert status.counters == Counters()
    assert status.active == ()
    assert status.condition("Ready") is None
    assert parse_status(dump_status(status)) == status


def test_an_unreadable_status_starts_afresh_instead_of_raising() -> None:
    assert parse_status({"active": [{"attempt": "many"}]}) == ScheduledJobStatus()
    assert parse_status({"lastScheduleTime": "noon"}) == ScheduledJobStatus()


def test_fields_from_a_newer_operator_are_read_past_and_kept_inside_entries() -> None:
    """Top level: ignored (the write is a merge patch of the owned fields, the server keeps the rest).
    Inside every status entry and ``counters``: kept, and written back with the entry."""
    dumped = dump_status(full_status())
    dumped["futureField"] = {"x": 1}
    dumped["counters"]["futureCounter"] = 3
    lists = ("conditions", "active", "pendingRetries", "recentRuns", "deadLetters", "buffered", "backfills")
    for field in lists:
        assert dumped[field], f"full_status() has no {field} entry"
        dumped[field][0]["futureKey"] = [field]

    parsed = parse_status(dumped)
    again = dump_status(parsed)

    assert "futureField" not in again
    assert again["counters"]["futureCounter"] == 3
    for field in lists:
        assert again[field][0]["futureKey"] == [field], field
    assert parse_status(again) == parsed


def test_long_messages_are_truncated_to_the_crd_max_length() -> None:
    long = "x" * (MAX_MESSAGE_LENGTH * 3)

    condition = Condition(type="Ready", status="False", reason="Failing", message=long, last_transition_time=NOON)

    assert len(condition.message) == MAX_MESSAGE_LENGTH
    assert condition.message.endswith("...")


def test_a_message_at_the_limit_is_kept_whole() -> None:
    text = "y" * MAX_MESSAGE_LENGTH

    letter = DeadLetter(
        scheduled_time=NOON,
        attempts=1,
        reason=DeadLetterReason.INVALID_JOB_TEMPLATE,
        message=text,
        trigger=Trigger.SCHEDULE,
        dead_lettered_at=NOON,
    )

    assert letter.message == text


def test_condition_looks_up_by_type() -> None:
    status = full_status()

    ready = status.condition("Ready")

    assert ready is not None
    assert ready.reason == "Scheduled"
    assert status.condition("Complete") is None


def test_a_backfill_is_written_with_the_wire_names_from_and_to() -> None:
    dumped = dump_status(full_status())
    (entry,) = dumped["backfills"]
    assert set(entry) >= {"token", "from", "to", "maxRuns", "nextTime", "started", "alreadyRun", "done"}
    assert dumped["buffered"][0]["bufferedAt"].endswith("Z") and dumped["lastHandledBackfill"] == "b1"
