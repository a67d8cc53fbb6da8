"""The webhook's bound on ``spec.jobTemplate`` (``--max-job-template-bytes``): refused over the limit, naming
the field and the limit; unchanged specs of stored objects still admitted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from tests.unit.runtime.serving.admissionreviews import RefusedError, validate

from sundial.runtime.serving import admission
from sundial.runtime.settings import DEFAULT_MAX_JOB_TEMPLATE_BYTES, WebhookSettings

LIMIT = 4 * admission.KIB


def _body(padding: int = 0) -> dict[str, Any]:
    annotations = {"pad": "x" * padding} if padding else {}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "big", "namespace": "ns"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
                },
            },
        },
    }


def _sized(size: int) -> dict[str, Any]:
    """A body whose jobTemplate is exactly SIZE bytes of compact JSON."""
    base = admission.serialized_size(_body(1)["spec"]["jobTemplate"])
    body = _body(1 + size - base)
    assert admission.serialized_size(body["spec"]["jobTemplate"]) == size
    return body


def test_the_default_is_256_kib() -> None:
    assert DEFAULT_MAX_JOB_TEMPLATE_BYTES == 256 * 1024
    assert WebhookSettings().max_job_template_bytes == DEFAULT_MAX_JOB_TEMPLATE_BYTES


def test_a_negative_limit_is_refused_naming_the_flag() -> None:
    with pytest.raises(ValueError, match="--max-job-template-bytes"):
        WebhookSettings(max_job_template_bytes=-1)


def test_a_template_over_the_limit_is_refused_naming_the_field_and_the_limit() -> None:
    with pytest.raises(RefusedError) as caught:
        validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), _sized(LIMIT + 1))
    message = str(caught.value)
    assert caught.value.code == 422
    assert 'ScheduledJob.sundial.dev "big" is invalid: spec.jobTemplate: is 4097 bytes of JSON' in message
    assert "over the limit of 4096 bytes (4 KiB, --max-job-template-bytes)" in message


def test_a_template_at_the_limit_is_admitted() -> None:
    validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), _sized(LIMIT))


def test_zero_means_no_limit() -> None:
    validate(admission.scheduled_jobs(max_job_template_bytes=0), _sized(LIMIT * 10))


def test_the_size_and_the_other_problems_are_named_together() -> None:
    body = _sized(LIMIT + 100)
    body["spec"]["schedule"] = "0 0 30 2 *"
    found = admission.problems(body, max_job_template_bytes=LIMIT)
    assert [problem.path for problem in found] == ["spec.jobTemplate", "spec.schedule"]


def test_an_update_growing_the_template_over_the_limit_is_refused() -> None:
    old = _sized(1000)
    with pytest.raises(RefusedError, match=r"spec\.jobTemplate"):
        validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), _sized(LIMIT + 1), old=old, operation="UPDATE")


def test_an_update_keeping_a_stored_oversized_spec_is_admitted() -> None:
    # Stored before the limit (or under a larger one): labels and finalizer removals must still work.
    old = _sized(LIMIT * 2)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "x"}
    validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), new, old=old, operation="UPDATE")


def test_growing_the_template_of_an_object_being_deleted_is_refused() -> None:
    # A tenant owning a finalizer could otherwise delete its object, then patch a 1.4 MiB template into it.
    old = _sized(1000)
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    grown = _sized(LIMIT + 1)
    grown["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    with pytest.raises(RefusedError) as caught:
        validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), grown, old=old, operation="UPDATE")
    assert "spec.jobTemplate: is 4097 bytes of JSON, over the limit of 4096 bytes" in str(caught.value)


def test_an_object_being_deleted_still_loses_finalizers_and_takes_small_spec_changes() -> None:
    stored = _sized(LIMIT * 2)  # stored before the limit, now being deleted
    stored["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["team.example/hold"]}
    released = copy.deepcopy(stored)
    released["metadata"]["finalizers"] = []
    validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), released, old=stored, operation="UPDATE")
    shrunk = _sized(1000)
    shrunk["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    shrunk["spec"]["schedule"] = "not cron"  # a deleting object's spec is not validated, only bounded
    validate(admission.scheduled_jobs(max_job_template_bytes=LIMIT), shrunk, old=stored, operation="UPDATE")


def test_non_ascii_is_counted_in_utf8_bytes() -> None:
    assert admission.serialized_size({"a": "é"}) == len('{"a":"é"}'.encode())


def test_a_limit_that_is_not_whole_kib_is_shown_in_bytes() -> None:
    problem = admission.size_problem(_sized(1500)["spec"], limit=1000)
    assert problem is not None
    assert "over the limit of 1000 bytes (1000 bytes, --max-job-template-bytes)" in problem.message


def test_the_server_passes_the_limit_to_the_scheduled_job_webhook() -> None:
    settings = WebhookSettings(port=9443, max_job_template_bytes=LIMIT)
    hook = admission.scheduled_jobs(max_job_template_bytes=settings.max_job_template_bytes)
    with pytest.raises(RefusedError, match="over the limit of 4096 bytes"):
        validate(hook, _sized(LIMIT + 1))
