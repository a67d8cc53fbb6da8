"""The Job manifest builder: names, keys, labels, annotations, env, owner and namespace."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from sundial.model import Trigger, names
from sundial.planner import manifests

from .builders import NAME, NAMESPACE, UID, make_obj, raw_spec, template, top_of_the_hour

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
T = datetime(2026, 12, 24, 17, 0, tzinfo=UTC)


def test_the_idempotency_key_is_the_first_32_hex_digits_of_sha256_of_uid_and_time() -> None:
    expected = hashlib.sha256(f"{UID}/2026-12-24T17:00:00Z".encode()).hexdigest()[:32]
    assert manifests.idempotency_key(uid=UID, scheduled_time=T) == expected


def test_the_idempotency_key_does_not_depend_on_the_zone_the_time_is_written_in() -> None:
    berlin = T.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))
    assert manifests.idempotency_key(uid=UID, scheduled_time=berlin) == manifests.idempotency_key(
        uid=UID, scheduled_time=T
    )


@pytest.mark.parametrize(
    ("scheduled_job", "attempt", "manual", "expected"),
    [
        pytest.param("nightly", 1, False, "nightly-1798131600-1", id="a short name keeps its name"),
        pytest.param("nightly", 3, True, "nightly-m1798131600-3", id="a manual run gets the m prefix"),
        pytest.param(
            "a" * 63,
            1,
            False,
            "a" * 33 + "-" + hashlib.sha256(b"a" * 63).hexdigest()[:16] + "-1798131600-1",
            id="a long name is cut and hashed (64 bits) before the suffix",
        ),
        pytest.param(
            "report.v2",
            1,
            False,
            "report-v2-" + hashlib.sha256(b"report.v2").hexdigest()[:16] + "-1798131600-1",
            id="dots are not valid in a label so the name is hashed",
        ),
    ],
)
def test_job_names(scheduled_job: str, attempt: int, manual: bool, expected: str) -> None:
    name = manifests.job_name(scheduled_job=scheduled_job, scheduled_time=T, attempt=attempt, manual=manual)
    assert name == expected
    assert len(name) <= 63
    assert DNS_LABEL.match(name)


@pytest.mark.parametrize("length", [1, 40, 50, 51, 52, 53, 62, 63, 100, 253])
@pytest.mark.parametrize("attempt", [1, 99])
@pytest.mark.parametrize("manual", [False, True])
def test_every_job_name_is_a_dns_label_of_at_most_63_characters(length: int, attempt: int, manual: bool) -> None:
    scheduled_job = ("x" * (length - 1) + "-")[:length] if length > 1 else "x"
    name = manifests.job_name(scheduled_job=scheduled_job, scheduled_time=T, attempt=attempt, manual=manual)
    assert len(name) <= 63
    assert DNS_LABEL.match(name), name
    assert not name.endswith("-")


def test_names_that_differ_only_after_the_cut_get_different_job_names() -> None:
    one = manifests.job_name(scheduled_job="b" * 60 + "1", scheduled_time=T, attempt=1)
    two = manifests.job_name(scheduled_job="b" * 60 + "2", scheduled_time=T, attempt=1)
    assert one != two


def test_the_label_value_of_a_long_name_is_at_most_63_characters() -> None:
    assert names.scheduled_job_label_value("short") == "short"
    assert len(names.scheduled_job_label_value("n" * 200)) <= 63


def build(**overrides: Any) -> dict[str, Any]:
    obj = make_obj(raw_spec(**overrides))
    return manifests.build_job(
        obj=obj, scheduled_time=top_of_the_hour(), attempt=2, trigger=Trigger.RETRY, fencing_token="3-9"
    )


def test_the_job_is_a_batch_v1_job_in_the_scheduled_jobs_namespace_even_if_the_template_names_another() -> None:
    tpl = template()
    tpl["metadata"]["namespace"] = "elsewhere"
    tpl["metadata"]["name"] = "ignored"
    job = build(jobTemplate=tpl)
    assert job["apiVersion"] == "batch/v1"
    assert job["kind"] == "Job"
    meta = job["metadata"]
    assert meta["namespace"] == NAMESPACE
    assert meta["name"] == f"{NAME}-{int(top_of_the_hour().timestamp())}-2"


def test_labels_are_the_templates_plus_the_scheduledjob_label_on_job_and_pod() -> None:
    job = build()
    # The Job (not its pods) also carries its fencing token's shard, for the server-side fencing policy.
    assert job["metadata"]["labels"] == {"app": "report", names.SCHEDULED_JOB_LABEL: NAME, names.SHARD_LABEL: "3"}
    pod = job["spec"]["template"]["metadata"]
    assert pod["labels"] == {"app": "report", names.SCHEDULED_JOB_LABEL: NAME}


def expected_stamps() -> dict[str, str]:
    return {
        names.SCHEDULED_TIME_ANNOTATION: "2026-05-11T10:00:00Z",
        names.ATTEMPT_ANNOTATION: "2",
        names.IDEMPOTENCY_KEY_ANNOTATION: manifests.idempotency_key(uid=UID, scheduled_time=top_of_the_hour()),
        names.FENCING_TOKEN_ANNOTATION: "3-9",
        names.TRIGGER_ANNOTATION: "retry",
    }


def test_the_run_is_stamped_on_the_job_and_the_pod_template_keeps_only_its_own_annotations() -> None:
    tpl = template()
    tpl["spec"]["template"]["metadata"]["annotations"] = {"prometheus.io/scrape": "false"}
    job = build(jobTemplate=tpl)
    assert job["metadata"]["annotations"] == {"team": "a", **expected_stamps()}
    assert job["spec"]["template"]["metadata"]["annotations"] == {"prometheus.io/scrape": "false"}


def test_a_pod_template_without_annotations_gets_none() -> None:
    pod = build()["spec"]["template"]["metadata"]
    assert "annotations" not in pod
    assert pod["labels"] == {"app": "report", names.SCHEDULED_JOB_LABEL: NAME}


def test_each_stamp_is_written_once_on_the_job_and_once_per_container_env() -> None:
    text = json.dumps(build(), separators=(",", ":"))
    key = expected_stamps()[names.IDEMPOTENCY_KEY_ANNOTATION]
    # Job annotation + the one container's env: twice in all (the pod-template copy made it three times).
    assert text.count(key) == 2
    assert text.count('"2026-05-11T10:00:00Z"') == 2


def test_pod_template_stamps_opt_in_copies_the_annotations_onto_the_pod_template() -> None:
    tpl = template()
    tpl["spec"]["template"]["metadata"]["annotations"] = {"prometheus.io/scrape": "false"}
    job = build(jobTemplate=tpl, podTemplateStamps=True)
    assert job["metadata"]["annotations"] == {"team": "a", **expected_stamps()}
    assert job["spec"]["template"]["metadata"]["annotations"] == {"prometheus.io/scrape": "false", **expected_stamps()}


def test_env_goes_first_into_every_container_and_init_container_replacing_same_names() -> None:
    tpl = template()
    pod = tpl["spec"]["template"]["spec"]
    pod["initContainers"] = [{"name": "init", "image": "x", "env": [{"name": "SUNDIAL_ATTEMPT", "value": "old"}]}]
    pod["containers"].append({"name": "sidecar", "image": "y"})
    job = build(jobTemplate=tpl)
    spec = job["spec"]["template"]["spec"]
    for container in spec["initContainers"] + spec["containers"]:
        env = {entry["name"]: entry["value"] for entry in container["env"]}
        assert env["SUNDIAL_ATTEMPT"] == "2"
        assert env["SUNDIAL_FENCING_TOKEN"] == "3-9"
        assert env["SUNDIAL_SCHEDULED_TIME"] == "2026-05-11T10:00:00Z"
        assert env["SUNDIAL_IDEMPOTENCY_KEY"] == manifests.idempotency_key(uid=UID, scheduled_time=top_of_the_hour())
        assert [e["name"] for e in container["env"]][:4] == [
            "SUNDIAL_SCHEDULED_TIME",
            "SUNDIAL_ATTEMPT",
            "SUNDIAL_IDEMPOTENCY_KEY",
            "SUNDIAL_FENCING_TOKEN",
        ]
        assert [e["name"] for e in container["env"]].count("SUNDIAL_ATTEMPT") == 1
    assert {"name": "X", "value": "1"} in spec["containers"][0]["env"]


def test_the_job_has_a_controller_owner_reference_to_the_scheduledjob() -> None:
    job = build()
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "name": NAME,
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_building_never_mutates_the_scheduledjob() -> None:
    obj = make_obj(raw_spec())
    assert obj.spec is not None
    before = copy.deepcopy(obj.spec.job_template.model_dump())
    manifests.build_job(obj=obj, scheduled_time=T, attempt=1, trigger=Trigger.SCHEDULE, fencing_token="t")
    assert obj.spec.job_template.model_dump() == before


def test_a_manual_trigger_gets_the_manual_name_and_retries_of_manual_runs_can_keep_it() -> None:
    obj = make_obj(raw_spec())
    manual = manifests.build_job(obj=obj, scheduled_time=T, attempt=1, trigger=Trigger.MANUAL, fencing_token="t")
    retry = manifests.build_job(
        obj=obj, scheduled_time=T, attempt=2, trigger=Trigger.RETRY, fencing_token="t", manual=True
    )
    assert manual["metadata"]["name"] == f"{NAME}-m1798131600-1"
    assert retry["metadata"]["name"] == f"{NAME}-m1798131600-2"


def test_a_pod_template_without_metadata_gets_one() -> None:
    tpl = template()
    del tpl["spec"]["template"]["metadata"]
    job = build(jobTemplate=tpl)
    assert job["spec"]["template"]["metadata"]["labels"] == {names.SCHEDULED_JOB_LABEL: NAME}


def test_an_invalid_object_cannot_be_built() -> None:
    obj = make_obj({"schedule": "nope"})
    with pytest.raises(ValueError, match="no valid spec"):
        manifests.build_job(obj=obj, scheduled_time=T, attempt=1, trigger=Trigger.SCHEDULE, fencing_token="t")


def test_manual_and_scheduled_runs_of_the_same_second_have_different_idempotency_keys() -> None:
    instant = datetime(2027, 1, 1, tzinfo=UTC)
    scheduled = manifests.idempotency_key(uid="u", scheduled_time=instant)
    manual = manifests.idempotency_key(uid="u", scheduled_time=instant, manual=True)
    assert scheduled != manual
    assert manual == manifests.idempotency_key(uid="u", scheduled_time=instant, manual=True)
