"""Spec defaults and validation: every invalid input is reported with its full camelCase path."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial import schedule
from sundial.model import ConcurrencyPolicy, ScheduledJobSpec, SpecError, parse_spec


def minimal(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main"}]}}}}
    }
    spec.update(fields)
    return spec


def test_a_minimal_spec_gets_the_documented_defaults() -> None:
    spec = parse_spec(minimal())

    assert spec.schedule is None
    assert spec.run_at is None
    assert spec.is_one_off
    assert spec.time_zone == "UTC"
    assert spec.start_time is None
    assert spec.end_time is None
    assert spec.suspend is False
    assert spec.daylight_saving.skipped_time is schedule.SkippedTime.AUTO
    assert spec.daylight_saving.repeated_time is schedule.RepeatedTime.AUTO
    assert spec.jitter == timedelta(0)
    assert spec.catch_up.window is None
    assert spec.catch_up.policy is schedule.CatchUpPolicy.LATEST
    assert spec.catch_up.max_runs == 10
    assert spec.concurrency_policy is ConcurrencyPolicy.ALLOW
    assert spec.retry.max_attempts == 1
    assert spec.retry.backoff.initial == timedelta(seconds=30)
    assert spec.retry.backoff.factor == 2.0
    assert spec.retry.backoff.max == timedelta(hours=1)
    assert spec.retry.max_run_age is None
    assert spec.dead_letter.keep == 10
    assert spec.dead_letter.suspend_after == 0
    assert spec.successful_jobs_history_limit == 3
    assert spec.failed_jobs_history_limit == 1
    assert spec.ttl_seconds_after_finished is None
    assert spec.job_template.metadata == {}


def test_the_design_example_parses_with_every_field_set() -> None:
    spec = parse_spec(
        minimal(
            schedule="30 2 * * *",
            timeZone="Europe/Berlin",
            startTime="2026-01-01T00:00:00Z",
            endTime="2027-01-01T00:00:00+01:00",
            suspend=False,
            daylightSaving={"skippedTime": "Skip", "repeatedTime": "Twice"},
            jitter="30s",
            catchUp={"window": "1h", "policy": "All", "maxRuns": 10},
            concurrencyPolicy="Forbid",
            retry={"maxAttempts": 3, "backoff": {"initial": "30s", "factor": 2, "max": "1h"}, "maxRunAge": "24h"},
            deadLetter={"keep": 10, "suspendAfter": 2},
            successfulJobsHistoryLimit=3,
            failedJobsHistoryLimit=1,
        )
    )

    assert spec.schedule == "30 2 * * *"
    assert spec.time_zone == "Europe/Berlin"
    assert spec.end_time == datetime(2026, 12, 31, 23, 0, tzinfo=UTC)
    assert spec.daylight_saving.skipped_time is schedule.SkippedTime.SKIP
    assert spec.catch_up.window == timedelta(hours=1)
    assert spec.catch_up.policy is schedule.CatchUpPolicy.ALL
    assert spec.concurrency_policy is ConcurrencyPolicy.FORBID
    assert spec.retry.max_run_age == timedelta(hours=24)
    assert spec.dead_letter.suspend_after == 2
    assert not spec.is_one_off


def test_a_run_at_one_off_with_a_ttl_is_valid() -> None:
    spec = parse_spec(minimal(runAt="2026-12-24T18:00:00+01:00", ttlSecondsAfterFinished=60))

    assert spec.run_at == datetime(2026, 12, 24, 17, 0, tzinfo=UTC)
    assert spec.ttl_seconds_after_finished == 60
    assert spec.is_one_off


def test_a_six_field_cron_with_seconds_is_valid() -> None:
    assert parse_spec(minimal(schedule="*/10 * * * * *")).schedule == "*/10 * * * * *"


def test_backoff_max_equal_to_initial_is_valid() -> None:
    spec = parse_spec(minimal(retry={"backoff": {"initial": "5m", "max": "5m"}}))

    assert spec.retry.backoff.max == spec.retry.backoff.initial


def test_the_spec_dumps_back_to_camel_case_that_parses_to_the_same_spec() -> None:
    spec = parse_spec(minimal(schedule="H * * * *", jitter="1m30s", catchUp={"window": "2h"}))
    dumped = spec.model_dump(mode="json", by_alias=True, exclude_none=True)

    assert dumped["jitter"] == "1m30s"
    assert dumped["catchUp"]["window"] == "2h0m0s"
    assert parse_spec(dumped) == spec


def _set(path: str, value: Any) -> Any:
    """A mutation that sets (or, with ``DELETE``, removes) a dotted camelCase path below spec."""

    def mutate(spec: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        node = spec
        for part in parents:
            node = node.setdefault(part, {})
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = value

    return mutate


DELETE = object()
CONTAINERS = "jobTemplate.spec.template.spec.containers"

INVALID: list[Any] = [
    # WHEN
    pytest.param(
        [_set("schedule", "*/5 * * * *"), _set("runAt", "2026-12-24T18:00:00Z")], "spec.runAt", id="schedule-and-run-at"
    ),
    pytest.param([_set("schedule", "")], "spec.schedule", id="empty-schedule"),
    pytest.param([_set("schedule", "61 * * * *")], "spec.schedule", id="minute-out-of-range"),
    pytest.param([_set("schedule", "0 0 30 2 *")], "spec.schedule", id="impossible-schedule"),
    pytest.param([_set("schedule", "* * * * * * *")], "spec.schedule", id="seven-fields"),
    pytest.param([_set("schedule", 5)], "spec.schedule", id="schedule-not-a-string"),
    pytest.param([_set("schedule", "x" * 300)], "spec.schedule", id="schedule-too-long"),
    pytest.param([_set("timeZone", "Local")], "spec.timeZone", id="local-zone"),
    pytest.param([_set("timeZone", "Mars/Olympus_Mons")], "spec.timeZone", id="unknown-zone"),
    pytest.param([_set("timeZone", "")], "spec.timeZone", id="empty-zone"),
    pytest.param([_set("runAt", "tomorrow")], "spec.runAt", id="run-at-not-a-timestamp"),
    pytest.param([_set("runAt", "2026-12-24T18:00:00")], "spec.runAt", id="run-at-without-offset"),
    pytest.param(
        [_set("startTime", "2026-02-01T00:00:00Z"), _set("endTime", "2026-01-01T00:00:00Z")],
        "spec.endTime",
        id="end-before-start",
    ),
    pytest.param(
        [_set("startTime", "2026-01-01T00:00:00Z"), _set("endTime", "2026-01-01T01:00:00+01:00")],
        "spec.endTime",
        id="end-equal-to-start",
    ),
    pytest.param([_set("suspend", "maybe")], "spec.suspend", id="suspend-not-a-bool"),
    pytest.param(
        [_set("daylightSaving.skippedTime", "Never")], "spec.daylightSaving.skippedTime", id="unknown-skipped-time"
    ),
    pytest.param(
        [_set("daylightSaving.repeatedTime", "Thrice")], "spec.daylightSaving.repeatedTime", id="unknown-repeated-time"
    ),
    pytest.param([_set("jitter", "-5s")], "spec.jitter", id="negative-jitter"),
    pytest.param([_set("jitter", "5d")], "spec.jitter", id="jitter-in-days"),
    pytest.param([_set("jitter", 30)], "spec.jitter", id="jitter-as-a-number"),
    # catch-up
    pytest.param([_set("catchUp.window", "forever")], "spec.catchUp.window", id="window-not-a-duration"),
    pytest.param([_set("catchUp.window", "-1h")], "spec.catchUp.window", id="negative-window"),
    pytest.param([_set("catchUp.policy", "Some")], "spec.catchUp.policy", id="unknown-catch-up-policy"),
    pytest.param([_set("catchUp.maxRuns", 0)], "spec.catchUp.maxRuns", id="zero-max-runs"),
    pytest.param([_set("catchUp.maxRuns", 1001)], "spec.catchUp.maxRuns", id="too-many-max-runs"),
    pytest.param([_set("catchUp", "1h")], "spec.catchUp", id="catch-up-not-an-object"),
    pytest.param([_set("concurrencyPolicy", "forbid")], "spec.concurrencyPolicy", id="lower-case-policy"),
    # retry
    pytest.param([_set("retry.maxAttempts", 0)], "spec.retry.maxAttempts", id="zero-attempts"),
    pytest.param([_set("retry.maxAttempts", 101)], "spec.retry.maxAttempts", id="too-many-attempts"),
    pytest.param([_set("retry.maxAttempts", "three")], "spec.retry.maxAttempts", id="attempts-not-a-number"),
    pytest.param([_set("retry.maxAtempts", 3)], "spec.retry.maxAtempts", id="misspelt-retry-field"),
    pytest.param([_set("retry.backoff.factor", 0.5)], "spec.retry.backoff.factor", id="shrinking-backoff"),
    pytest.param([_set("retry.backoff.factor", 101)], "spec.retry.backoff.factor", id="huge-factor"),
    pytest.param([_set("retry.backoff.initial", "1x")], "spec.retry.backoff.initial", id="bad-initial"),
    pytest.param([_set("retry.backoff.initial", "2h")], "spec.retry.backoff.max", id="max-below-default-initial"),
    pytest.param(
        [_set("retry.backoff.initial", "90s"), _set("retry.backoff.max", "1m")],
        "spec.retry.backoff.max",
        id="max-below-initial",
    ),
    pytest.param([_set("retry.maxRunAge", "-24h")], "spec.retry.maxRunAge", id="negative-max-run-age"),
    # dead letters and history
    pytest.param([_set("deadLetter.keep", -1)], "spec.deadLetter.keep", id="negative-keep"),
    pytest.param([_set("deadLetter.keep", 101)], "spec.deadLetter.keep", id="keep-too-many"),
    pytest.param([_set("deadLetter.suspendAfter", -1)], "spec.deadLetter.suspendAfter", id="negative-suspend-after"),
    pytest.param(
        [_set("successfulJobsHistoryLimit", 101)], "spec.successfulJobsHistoryLimit", id="successful-history-too-long"
    ),
    pytest.param([_set("failedJobsHistoryLimit", -1)], "spec.failedJobsHistoryLimit", id="negative-failed-history"),
    pytest.param(
        [_set("schedule", "@daily"), _set("ttlSecondsAfterFinished", 60)],
        "spec.ttlSecondsAfterFinished",
        id="ttl-on-a-cron-schedule",
    ),
    pytest.param([_set("ttlSecondsAfterFinished", -1)], "spec.ttlSecondsAfterFinished", id="negative-ttl"),
    # job template
    pytest.param([_set("jobTemplate", DELETE)], "spec.jobTemplate", id="no-job-template"),
    pytest.param([_set("jobTemplate.spec", DELETE)], "spec.jobTemplate.spec", id="no-job-spec"),
    pytest.param([_set("jobTemplate.spec.template", DELETE)], "spec.jobTemplate.spec", id="no-pod-template"),
    pytest.param([_set(CONTAINERS, [])], "spec.jobTemplate.spec", id="no-containers"),
    pytest.param([_set(CONTAINERS, "main")], "spec.jobTemplate.spec", id="containers-not-a-list"),
    pytest.param([_set("jobTemplate.spec", [])], "spec.jobTemplate.spec", id="job-spec-not-an-object"),
    pytest.param([_set("scedule", "@hourly")], "spec.scedule", id="misspelt-top-level-field"),
]


@pytest.mark.parametrize(("mutations", "field"), INVALID)
def test_an_invalid_spec_names_the_field_with_its_camel_case_path(mutations: list[Any], field: str) -> None:
    raw = minimal()
    for mutate in mutations:
        mutate(raw)

    with pytest.raises(SpecError) as caught:
        parse_spec(raw)

    assert [problem.path for problem in caught.value.problems] == [field]
    assert caught.value.first_field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert caught.value.problems[0].message


def test_there_are_at_least_25_invalid_cases() -> None:
    assert len(INVALID) >= 25


def test_every_invalid_field_is_reported_at_once() -> None:
    raw = minimal(jitter="-1s", retry={"maxAttempts": 0}, catchUp={"policy": "Some"})

    with pytest.raises(SpecError) as caught:
        parse_spec(raw)

    assert sorted(p.path for p in caught.value.problems) == [
        "spec.catchUp.policy",
        "spec.jitter",
        "spec.retry.maxAttempts",
    ]


def test_a_spec_that_is_not_an_object_is_reported_on_spec() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(["not", "a", "mapping"])  # type: ignore[arg-type]

    assert caught.value.first_field == "spec"


def test_a_parsed_spec_is_frozen() -> None:
    spec = parse_spec(minimal())

    with pytest.raises(ValueError, match="frozen"):
        spec.suspend = True  # type: ignore[misc]


def test_python_names_are_accepted_as_well_as_camel_case() -> None:
    raw = copy.deepcopy(minimal())
    raw["time_zone"] = "Europe/Berlin"

    assert ScheduledJobSpec.model_validate(raw).time_zone == "Europe/Berlin"


@pytest.mark.parametrize("policy", ["BufferOne", "BufferAll"])
def test_the_buffer_policies_parse(policy: str) -> None:
    assert parse_spec(minimal(concurrencyPolicy=policy)).concurrency_policy == ConcurrencyPolicy(policy)


def test_priority_defaults_to_zero_and_takes_its_bounds() -> None:
    assert parse_spec(minimal()).priority == 0
    assert parse_spec(minimal(priority=-100)).priority == -100
    assert parse_spec(minimal(priority=100)).priority == 100


@pytest.mark.parametrize("value", [101, -101, "5", 1.5, True])
def test_a_bad_priority_names_the_field(value: Any) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(minimal(priority=value))
    assert caught.value.first_field == "spec.priority"
