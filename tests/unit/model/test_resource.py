"""ScheduledJob.from_dict: reads any object the API could return and never raises for a broken spec."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.model import ScheduledJob, ScheduledJobStatus, names

SAMPLES = Path(__file__).parents[3] / "config" / "samples"


def body(spec: Any, status: Any = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "nightly",
            "namespace": "team-a",
            "uid": "0f1e2d3c",
            "generation": 2,
            "resourceVersion": "42",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            **meta,
        },
        "spec": spec,
        **({"status": status} if status is not None else {}),
    }


GOOD_SPEC = {
    "schedule": "*/5 * * * *",
    "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}},
}


def test_a_valid_object_has_a_spec_and_metadata() -> None:
    job = ScheduledJob.from_dict(body(GOOD_SPEC, annotations={names.TRIGGER_ANNOTATION: "t1"}))

    assert job.spec is not None
    assert job.spec_error is None
    assert job.metadata.name == "nightly"
    assert job.metadata.namespace == "team-a"
    assert job.metadata.uid == "0f1e2d3c"
    assert job.metadata.generation == 2
    assert job.metadata.resource_version == "42"
    assert job.metadata.creation_timestamp == datetime(2026, 1, 1, tzinfo=UTC)
    assert job.metadata.annotations == {names.TRIGGER_ANNOTATION: "t1"}
    assert job.status == ScheduledJobStatus()


BROKEN_SPECS = [
    pytest.param(None, "spec.jobTemplate", id="no-spec"),
    pytest.param({}, "spec.jobTemplate", id="empty-spec"),
    pytest.param("every day", "spec", id="spec-is-a-string"),
    pytest.param(["a"], "spec", id="spec-is-a-list"),
    pytest.param({**GOOD_SPEC, "schedule": "every day"}, "spec.schedule", id="bad-cron"),
    pytest.param({**GOOD_SPEC, "runAt": "2026-01-01T00:00:00Z"}, "spec.runAt", id="schedule-and-run-at"),
    pytest.param({**GOOD_SPEC, "timeZone": "Local"}, "spec.timeZone", id="local-zone"),
    pytest.param({**GOOD_SPEC, "retry": {"maxAttempts": 0}}, "spec.retry.maxAttempts", id="zero-attempts"),
    pytest.param({**GOOD_SPEC, "catchUp": {"window": "-1h"}}, "spec.catchUp.window", id="negative-window"),
    pytest.param({**GOOD_SPEC, "jobTemplate": {"spec": {}}}, "spec.jobTemplate.spec", id="no-pod-template"),
]


@pytest.mark.parametrize(("spec", "field"), BROKEN_SPECS)
def test_a_broken_spec_is_kept_as_an_error_naming_the_field(spec: Any, field: str) -> None:
    job = ScheduledJob.from_dict(body(spec))

    assert job.spec is None
    assert job.spec_error is not None
    assert job.spec_error.first_field == field


def test_broken_metadata_and_status_do_not_raise() -> None:
    job = ScheduledJob.from_dict(
        body(GOOD_SPEC, status={"active": "lots"}, creationTimestamp="yesterday", generation=None)
    )

    assert job.spec is not None
    assert job.metadata.creation_timestamp is None
    assert job.metadata.generation == 0
    assert job.status == ScheduledJobStatus()


def test_an_object_without_metadata_does_not_raise() -> None:
    job = ScheduledJob.from_dict({"spec": GOOD_SPEC})

    assert job.metadata.name == ""
    assert job.spec is not None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
SPEC_KEYS = st.sampled_from(
    [
        "schedule",
        "timeZone",
        "runAt",
        "startTime",
        "endTime",
        "suspend",
        "daylightSaving",
        "jitter",
        "catchUp",
        "concurrencyPolicy",
        "retry",
        "deadLetter",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "ttlSecondsAfterFinished",
        "jobTemplate",
    ]
)


@settings(max_examples=300, deadline=None)
@given(spec=st.dictionaries(SPEC_KEYS, JSON, max_size=8) | JSON, status=JSON)
def test_from_dict_never_raises_for_any_json_spec_or_status(spec: Any, status: Any) -> None:
    job = ScheduledJob.from_dict(body(spec, status=status if isinstance(status, dict) else None))

    assert (job.spec is None) != (job.spec_error is None)


def test_every_sample_parses_without_problems() -> None:
    paths = sorted(p for p in SAMPLES.glob("*.yaml") if p.name != "kustomization.yaml")
    assert len(paths) >= 5
    for path in paths:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document["kind"] != "ScheduledJob":
                continue
            job = ScheduledJob.from_dict(document)
            assert job.spec_error is None, f"{path.name}: {job.spec_error}"


def test_the_kustomization_lists_every_sample() -> None:
    kustomization = yaml.safe_load((SAMPLES / "kustomization.yaml").read_text(encoding="utf-8"))
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in SAMPLES.glob("*.yaml") if p.name != "kustomization.yaml"}

    assert listed == on_disk
