"""Properties of the models (issue 5 item 5): random spec dicts make ``parse_spec`` raise only
:class:`SpecError` (naming ``spec…`` fields), never another exception; random status dicts never make
``parse_status`` raise, and whatever it returns survives a dump/parse round trip and a planning pass."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sundial import model
from sundial.model import ScheduledJob, ScheduledJobSpec, ScheduledJobStatus, SpecError, parse_spec, parse_status
from sundial.model.resource import dump_status
from sundial.planner.planning import plan
from sundial.planner.plans import Context

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOW = datetime(2026, 3, 29, 0, 59, 30, tzinfo=UTC)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


def sometimes(plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly plausible values (so validation gets deep), sometimes anything at all."""
    return st.one_of(plausible, plausible, json_values)


durations = st.sampled_from(["0s", "30s", "1h", "90m", "-1s", "1d", "abc", "", "1h30m", "9999999h", "1.5s", "30"])
times = st.sampled_from(
    [
        "2026-12-24T18:00:00+01:00",
        "2026-03-29T01:30:00Z",
        "2026-02-30T00:00:00Z",
        "yesterday",
        "",
        "2026-12-24T18:00:00",
    ]
)
crons = st.sampled_from(
    ["*/5 * * * *", "0 0 30 2 *", "H H * * *", "@daily", "@fortnightly", "*/10 * * * * *", "61 * * * *", "* * *"]
) | st.text(max_size=30)
zones = st.sampled_from(["UTC", "Europe/Berlin", "Local", "Mars/Olympus", "", "America/New_York", "../etc/passwd"])
template = st.sampled_from(
    [
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
        {"spec": {}},
        {},
        {"metadata": {"labels": {"a": "b"}}, "spec": {"template": {}}},
    ]
)
optional_spec_keys: dict[str, st.SearchStrategy[Any]] = {
    "schedule": sometimes(crons),
    "timeZone": sometimes(zones),
    "runAt": sometimes(times),
    "startTime": sometimes(times),
    "endTime": sometimes(times),
    "suspend": sometimes(st.booleans()),
    "daylightSaving": sometimes(
        st.fixed_dictionaries(
            {},
            optional={
                "skippedTime": st.sampled_from(["Auto", "Skip", "RunAfterChange", "auto", "x"]),
                "repeatedTime": st.sampled_from(["Auto", "Once", "Twice", "Thrice"]),
            },
        )
    ),
    "jitter": sometimes(durations),
    "catchUp": sometimes(
        st.fixed_dictionaries(
            {},
            optional={
                "window": sometimes(durations),
                "policy": st.sampled_from(["Latest", "All", "None"]),
                "maxRuns": sometimes(st.integers(-2, 2000)),
            },
        )
    ),
    "concurrencyPolicy": sometimes(st.sampled_from(["Allow", "Forbid", "Replace", "allow"])),
    "retry": sometimes(
        st.fixed_dictionaries(
            {},
            optional={
                "maxAttempts": sometimes(st.integers(-1, 200)),
                "backoff": sometimes(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "initial": sometimes(durations),
                            "factor": sometimes(st.floats(-1, 200) | st.integers(0, 5)),
                            "max": sometimes(durations),
                        },
                    )
                ),
                "maxRunAge": sometimes(durations),
            },
        )
    ),
    "deadLetter": sometimes(
        st.fixed_dictionaries(
            {},
            optional={"keep": sometimes(st.integers(-1, 200)), "suspendAfter": sometimes(st.integers(-1, 2000))},
        )
    ),
    "successfulJobsHistoryLimit": sometimes(st.integers(-1, 200)),
    "failedJobsHistoryLimit": sometimes(st.integers(-1, 200)),
    "ttlSecondsAfterFinished": sometimes(st.integers(-5, 10**6)),
    "startingDeadlineSeconds": st.integers(0, 100),
}
spec_dicts = st.fixed_dictionaries({"jobTemplate": sometimes(template)}, optional=optional_spec_keys) | st.dictionaries(
    st.text(max_size=20), json_values, max_size=5
)


@SETTINGS
@given(raw=spec_dicts)
def test_parse_spec_raises_only_spec_error_naming_spec_fields(raw: dict[str, Any]) -> None:
    try:
        parsed = parse_spec(raw)
    except SpecError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.path == "spec" or problem.path.startswith("spec."), problem
            assert problem.message
        return
    assert isinstance(parsed, ScheduledJobSpec)


@SETTINGS
@given(raw=json_values)
def test_parse_spec_of_anything_raises_only_spec_error(raw: Any) -> None:
    with contextlib.suppress(SpecError):
        parse_spec(raw)


@SETTINGS
@given(raw=spec_dicts, uid=st.text(max_size=10))
def test_a_scheduled_job_with_any_spec_parses_and_plans_without_raising(raw: dict[str, Any], uid: str) -> None:
    obj = ScheduledJob.from_dict(
        {"metadata": {"name": "p", "namespace": "n", "uid": uid, "creationTimestamp": "2026-03-29T00:00:00Z"},
         "spec": raw}
    )  # fmt: skip
    assert (obj.spec is None) != (obj.spec_error is None)
    result = plan(obj, [], Context(now=NOW, fencing_token="0-1"))
    if obj.spec is None:
        ready = result.status.condition("Ready")
        assert ready is not None and ready.status == "False"


run_entries = st.fixed_dictionaries(
    {},
    optional={
        "scheduledTime": sometimes(times),
        "attempt": sometimes(st.integers(-1, 5)),
        "attempts": sometimes(st.integers(-1, 5)),
        "job": sometimes(st.text(max_size=20)),
        "trigger": sometimes(st.sampled_from(["schedule", "catch-up", "retry", "manual", "redrive", "x"])),
        "claimedAt": sometimes(times),
        "jobSeen": sometimes(st.booleans()),
        "notBefore": sometimes(times),
        "nextAttempt": sometimes(st.integers(-1, 5)),
        "result": sometimes(st.sampled_from(["Succeeded", "Failed", "Replaced", "DeadLettered", "?"])),
        "finishedAt": sometimes(times),
        "reason": sometimes(st.sampled_from(["MaxAttemptsExceeded", "InvalidJobTemplate", "?"])),
        "deadLetteredAt": sometimes(times),
        "manual": sometimes(st.booleans()),
    },
)
status_dicts = st.fixed_dictionaries(
    {},
    optional={
        "observedGeneration": sometimes(st.integers(-1, 5)),
        "scheduleCursor": sometimes(times),
        "nextScheduleTime": sometimes(times),
        "lastScheduleTime": sometimes(times),
        "active": sometimes(st.lists(run_entries, max_size=3)),
        "pendingRetries": sometimes(st.lists(run_entries, max_size=3)),
        "recentRuns": sometimes(st.lists(run_entries, max_size=3)),
        "deadLetters": sometimes(st.lists(run_entries, max_size=3)),
        "counters": sometimes(st.dictionaries(st.sampled_from(["runs", "missed", "skipped"]), st.integers(-3, 10))),
        "conditions": sometimes(
            st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["Ready", "Suspended", "Complete", "DeadLettered", "Other"])},
                    optional={
                        "status": st.sampled_from(["True", "False", "Unknown", "maybe"]),
                        "reason": st.text(max_size=10),
                        "lastTransitionTime": times,
                    },
                ),
                max_size=3,
            )
        ),
        "consecutiveDeadLetters": sometimes(st.integers(-1, 5)),
        "lastHandledTrigger": sometimes(st.text(max_size=5)),
    },
) | st.dictionaries(st.text(max_size=20), json_values, max_size=5)


@SETTINGS
@given(raw=status_dicts)
def test_parse_status_never_raises_and_round_trips(raw: dict[str, Any]) -> None:
    status = parse_status(raw)
    assert isinstance(status, ScheduledJobStatus)
    assert parse_status(dump_status(status)) == status


@SETTINGS
@given(
    raw=status_dicts,
    spec=st.sampled_from(
        [
            {"schedule": "*/5 * * * *"},
            {"schedule": "30 2 * * *", "timeZone": "Europe/Berlin", "catchUp": {"policy": "All", "maxRuns": 3}},
            {"runAt": "2026-03-29T01:00:00Z"},
            {"schedule": "* * * * * *", "concurrencyPolicy": "Forbid", "retry": {"maxAttempts": 3}},
            {"schedule": "*/5 * * * *", "concurrencyPolicy": "Replace", "deadLetter": {"suspendAfter": 1}},
        ]
    ),
    offset=st.integers(-600, 86_400),
)
def test_planning_over_any_stored_status_never_raises_and_is_idempotent(
    raw: dict[str, Any], spec: dict[str, Any], offset: int
) -> None:
    body = {
        "metadata": {"name": "p", "namespace": "n", "uid": "u-1", "generation": 1,
                     "creationTimestamp": "2026-03-29T00:00:00Z"},
        "spec": {**spec, "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}},
        "status": raw,
    }  # fmt: skip
    obj = ScheduledJob.from_dict(body)
    now = NOW + timedelta(seconds=offset)
    result = plan(obj, [], Context(now=now, fencing_token="0-1"))
    again = plan(
        ScheduledJob.from_dict({**body, "status": dump_status(result.status)}),
        [],
        Context(now=now, fencing_token="0-1"),
    )
    assert again.write_status is False


def test_the_model_package_exports_what_the_properties_use() -> None:
    assert model.parse_spec is parse_spec and model.parse_status is parse_status
