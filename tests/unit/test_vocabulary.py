"""The wire vocabulary, pinned as literals: renaming a constant must not silently change what users see.

Every other test imports the constants; this one spells the values out once, as the Kubernetes API, the
kubectl plugin, Argo CD and users' own automation see them (DESIGN §1, §4-§8).
"""

from __future__ import annotations

from enum import StrEnum

import pytest

from sundial.model import calendars, enums, names, resource, status
from sundial.planner import actions, observed
from sundial.runtime.serving import metrics

KEYS = {
    names.SCHEDULED_JOB_LABEL: "sundial.dev/scheduledjob",
    names.SCHEDULED_TIME_ANNOTATION: "sundial.dev/scheduled-time",
    names.ATTEMPT_ANNOTATION: "sundial.dev/attempt",
    names.IDEMPOTENCY_KEY_ANNOTATION: "sundial.dev/idempotency-key",
    names.FENCING_TOKEN_ANNOTATION: "sundial.dev/fencing-token",
    names.SHARD_LABEL: "sundial.dev/shard",
    names.SHARD_LEASE_LABEL: "sundial.dev/shard-lease",
    names.TRIGGER_ANNOTATION: "sundial.dev/trigger",
    names.REDRIVE_ANNOTATION: "sundial.dev/redrive",
    names.BACKFILL_ANNOTATION: "sundial.dev/backfill",
    names.SCHEDULED_TIME_ENV: "SUNDIAL_SCHEDULED_TIME",
    names.ATTEMPT_ENV: "SUNDIAL_ATTEMPT",
    names.IDEMPOTENCY_KEY_ENV: "SUNDIAL_IDEMPOTENCY_KEY",
    names.FENCING_TOKEN_ENV: "SUNDIAL_FENCING_TOKEN",
    names.API_VERSION: "sundial.dev/v1alpha1",
    names.PREFIX: "sundial.dev/",
}

ENUMS: dict[type[StrEnum], set[str]] = {
    enums.Trigger: {"schedule", "catch-up", "retry", "manual", "redrive", "backfill"},
    enums.ConcurrencyPolicy: {"Allow", "Forbid", "Replace", "BufferOne", "BufferAll"},
    enums.RunResult: {"Succeeded", "DeadLettered", "Replaced", "Excluded"},
    enums.DeadLetterReason: {"MaxAttemptsExceeded", "MaxRunAgeExceeded", "InvalidJobTemplate"},
    enums.ConditionType: {"Ready", "Suspended", "DeadLettered", "Complete"},
    enums.ConditionStatus: {"True", "False", "Unknown"},
    enums.ConditionReason: {
        "Scheduled",
        "Suspended",
        "CircuitOpen",
        "ConsecutiveDeadLetters",
        "NotSuspended",
        "NoDeadLetters",
        "Complete",
        "Pending",
        "InvalidSchedule",
        "InvalidSpec",
        "CalendarNotFound",
        "InvalidCalendar",
        "ObjectTooLarge",
        "Quarantined",
    },
    enums.CompleteReason: {"Succeeded", "DeadLettered", "Missed"},
    status.StatusCounter: {
        *("runs", "succeeded", "failed", "retried", "missed", "skipped", "dead_lettered"),
        *("excluded", "buffered"),
    },
    observed.FailureReason: {"Failed", "JobLost", "UnexpectedJob", "InvalidJobTemplate"},
    actions.DeleteReason: {"HistoryLimit", "Replaced", "MaxRunAgeExceeded"},
    actions.EventType: {"Normal", "Warning"},
    actions.EventReason: {
        "SuccessfulCreate",
        "SawCompletedJob",
        "SuccessfulDelete",
        "MissedSchedule",
        "RunSkipped",
        "RunReplaced",
        "UnexpectedJob",
        "InvalidSchedule",
        "InvalidSpec",
        "DeadLettered",
        "Retrying",
        "JobLost",
        "CircuitOpen",
        "Triggered",
        "Redriven",
        "Completed",
        "RunExcluded",
        "CalendarNotFound",
        "InvalidCalendar",
        "RunBuffered",
        "BackfillStarted",
        "BackfillCompleted",
        "BackfillRefused",
        "InvalidBackfill",
        "InvalidToken",
        "ObjectTooLarge",
        "Quarantined",
    },
    metrics.EventResult: {"created", "patched", "aggregated", "dropped", "failed"},
    metrics.FencedKind: {"job_create", "job_delete", "status", "event"},
}


@pytest.mark.parametrize("constant", list(KEYS), ids=list(KEYS.values()))
def test_keys_and_environment_variables_keep_their_wire_values(constant: str) -> None:
    assert constant == KEYS[constant]


@pytest.mark.parametrize("kind", list(ENUMS), ids=[kind.__name__ for kind in ENUMS])
def test_enums_keep_their_wire_values(kind: type[StrEnum]) -> None:
    assert {member.value for member in kind} == ENUMS[kind]


def test_every_label_and_annotation_key_is_in_sundials_prefix() -> None:
    for key in (names.SCHEDULED_JOB_LABEL, *names.JOB_ANNOTATIONS, *names.TOKEN_ANNOTATIONS):
        assert key.startswith(names.PREFIX) and key.startswith(f"{resource.GROUP}/")


def test_status_counters_are_exactly_the_counters_fields() -> None:
    assert {counter.value for counter in status.StatusCounter} == set(status.Counters.model_fields)


def test_the_metrics_table_counts_every_status_counter_but_runs() -> None:
    # ``runs`` has its own metric (sundial_runs_started), counted when the first Job is created.
    table = metrics.Metrics().runs.by_status_counter
    assert set(table) == set(status.StatusCounter) - {status.StatusCounter.RUNS}


def test_condition_reasons_that_are_also_event_reasons_share_the_value() -> None:
    # An invalid spec emits a Warning Event named after the Ready=False condition's reason.
    for reason in (enums.ConditionReason.INVALID_SCHEDULE, enums.ConditionReason.INVALID_SPEC):
        assert actions.CONDITION_EVENTS[reason] == reason


def test_the_event_reasons_of_design_section_8_exist() -> None:
    named = {"SuccessfulCreate", "SawCompletedJob", "MissedSchedule", "RunSkipped", "UnexpectedJob"}
    assert named | {"InvalidSchedule", "DeadLettered", "Retrying"} <= {r.value for r in actions.EventReason}


def test_a_long_name_gets_a_short_hashed_label_value_and_the_selector_uses_it() -> None:
    name = "a" * 70
    value = names.scheduled_job_label_value(name)
    assert len(value) <= names.MAX_LABEL_LENGTH and value != name
    assert len(value.rsplit("-", 1)[1]) == 16  # 64 bits: finding two names of one Job group takes ~2^32 hashes
    legacy = names.dns_label_prefix(name, room=names.MAX_LABEL_LENGTH, hash_length=5)
    assert names.scheduled_job_label_values(name) == (value, legacy)  # Jobs of earlier builds are still found
    assert names.job_selector(name) == f"sundial.dev/scheduledjob in ({value},{legacy})"
    assert names.job_selector("nightly") == "sundial.dev/scheduledjob=nightly"


def test_the_calendar_kind_and_plural_keep_their_wire_values() -> None:
    assert (calendars.CALENDAR_KIND, calendars.CALENDAR_PLURAL) == ("ScheduleCalendar", "schedulecalendars")


def test_calendar_condition_reasons_are_also_event_reasons() -> None:
    # A missing or invalid calendar emits a Warning Event named after the Ready=False condition's reason.
    for reason in (enums.ConditionReason.CALENDAR_NOT_FOUND, enums.ConditionReason.INVALID_CALENDAR):
        assert actions.CONDITION_EVENTS[reason] == reason


def test_excluded_runs_have_their_metric() -> None:
    registry = metrics.Metrics().registry
    assert registry.get_sample_value("sundial_runs_excluded_total") == 0.0
