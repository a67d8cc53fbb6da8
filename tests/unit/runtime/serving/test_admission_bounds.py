"""The webhook's bound on ``spec.jobTemplate`` (``--max-job-template-bytes``): refused over the limit, naming
the field and the limit; unchanged specs of stored objects still admitted."""

from __future__ import annotations

import copy
from typing import Any

import kopf
import pytest

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


async def test_a_template_over_the_limit_is_refused_naming_the_field_and_the_limit() -> None:
    handler = admission.validator(max_job_template_bytes=LIMIT)
    with pytest.raises(kopf.AdmissionError) as caught:
        await handler(body=_sized(LIMIT + 1), operation="CREATE")
    message = str(caught.value)
    assert caught.value.code == 422
    assert 'ScheduledJob.sundial.dev "big" is invalid: spec.jobTemplate: is 4097 bytes of JSON' in message
    assert "over the limit of 4096 bytes (4 KiB, --max-job-template-bytes)" in message


async def test_a_template_at_the_limit_is_admitted() -> None:
    await admission.validator(max_job_template_bytes=LIMIT)(body=_sized(LIMIT), operation="CREATE")


async def test_zero_means_no_limit() -> None:
    await admission.validator(max_job_template_bytes=0)(body=_sized(LIMIT * 10), operation="CREATE")


async def test_the_size_and_the_other_problems_are_named_together() -> None:
    body = _sized(LIMIT + 100)
    body["spec"]["schedule"] = "0 0 30 2 *"
    found = admission.problems(body, max_job_template_bytes=LIMIT)
    assert [problem.path for problem in found] == ["spec.jobTemplate", "spec.schedule"]


async def test_an_update_growing_the_template_over_the_limit_is_refused() -> None:
    old = _sized(1000)
    with pytest.raises(kopf.AdmissionError, match=r"spec\.jobTemplate"):
        await admission.validator(max_job_template_bytes=LIMIT)(body=_sized(LIMIT + 1), old=old, operation="UPDATE")


async def test_an_update_keeping_a_stored_oversized_spec_is_admitted() -> None:
    # Stored before the limit (or under a larger one): labels and finalizer removals must still work.
    old = _sized(LIMIT * 2)
    new = copy.deepcopy(old)
    new["metadata"]["labels"] = {"team": "x"}
    await admission.validator(max_job_template_bytes=LIMIT)(body=new, old=old, operation="UPDATE")


async def test_growing_the_template_of_an_object_being_deleted_is_refused() -> None:
    # A tenant owning a finalizer could otherwise delete its object, then patch a 1.4 MiB template into it.
    old = _sized(1000)
    old["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    grown = _sized(LIMIT + 1)
    grown["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    with pytest.raises(kopf.AdmissionError) as caught:
        await admission.validator(max_job_template_bytes=LIMIT)(body=grown, old=old, operation="UPDATE")
    assert "spec.jobTemplate: is 4097 bytes of JSON, over the limit of 4096 bytes" in str(caught.value)


async def test_an_object_being_deleted_still_loses_finalizers_and_takes_small_spec_changes() -> None:
    stored = _sized(LIMIT * 2)  # stored before the limit, now being deleted
    stored["metadata"] |= {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["team.example/hold"]}
    released = copy.deepcopy(stored)
    released["metadata"]["finalizers"] = []
    await admission.validator(max_job_template_bytes=LIMIT)(body=released, old=stored, operation="UPDATE")
    shrunk = _sized(1000)
    shrunk["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    shrunk["spec"]["schedule"] = "not cron"  # a deleting object's spec is not validated, only bounded
    await admission.validator(max_job_template_bytes=LIMIT)(body=shrunk, old=stored, operation="UPDATE")


def test_non_ascii_is_counted_in_utf8_bytes() -> None:
    assert admission.serialized_size({"a": "é"}) == len('{"a":"é"}'.encode())


def test_a_limit_that_is_not_whole_kib_is_shown_in_bytes() -> None:
    problem = admission.size_problem(_sized(1500)["spec"], limit=1000)
    assert problem is not None
    assert "over the limit of 1000 bytes (1000 bytes, --max-job-template-bytes)" in problem.message


def test_configure_passes_the_limit_to_the_handler() -> None:
    registry = kopf.OperatorRegistry()
    admission.register(registry, max_job_template_bytes=LIMIT)
    [handler] = [h for h in registry._webhooks.get_all_handlers() if h.id == admission.WEBHOOK_ID]
    assert handler.id == admission.WEBHOOK_ID
