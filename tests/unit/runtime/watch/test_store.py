"""The store keeps only what the operator reads: compact ScheduledJobs, Jobs as ObservedJob, UIDs until ready."""

from __future__ import annotations

import copy
import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

from sundial import model
from sundial.model import names
from sundial.planner import planning
from sundial.planner.plans import Context
from sundial.runtime.watch import jobs
from sundial.runtime.watch.store import Store, slim_scheduled_job

NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
KEY = ("team-a", "nightly")


def scheduled_job(*, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """Shaped like a LIST item after ``kubectl apply --server-side`` and a status write by Sundial."""
    body: dict[str, Any] = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {
            "name": "nightly",
            "namespace": "team-a",
            "uid": "0b5d1a10-0000-4000-8000-000000000001",
            "generation": 2,
            "resourceVersion": "4711",
            "creationTimestamp": "2026-11-29T09:00:00Z",
            "labels": {"app.kubernetes.io/name": "nightly", "team": "analytics"},
            "annotations": {
                names.TRIGGER_ANNOTATION: "t-1",
                names.REDRIVE_ANNOTATION: "r-1",
                "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"sundial.dev/v1alpha1"}',
                "owner.example.com/contact": "oncall@example.com",
            },
            "finalizers": ["example.com/keep"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm-uid"}],
            "managedFields": [
                {
                    "apiVersion": "sundial.dev/v1alpha1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:schedule": {}, "f:jobTemplate": {"f:spec": {}}}},
                    "manager": "argocd-controller",
                    "operation": "Apply",
                    "time": "2026-11-29T09:00:00Z",
                },
                {
                    "apiVersion": "sundial.dev/v1alpha1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}}},
                    "manager": "sundial",
                    "operation": "Update",
                    "subresource": "status",
                    "time": "2026-11-29T09:00:02Z",
                },
            ],
        },
        "spec": {
            "schedule": "0 3 * * *",
            "timeZone": "Europe/Berlin",
            "concurrencyPolicy": "Forbid",
            "retry": {"maxAttempts": 3},
            "jobTemplate": {
                "metadata": {"labels": {"team": "analytics"}},
                "spec": {
                    "backoffLimit": 0,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "example.com/report:1", "args": ["--all"]}],
                        }
                    },
                },
            },
        },
    }
    if status is not None:
        body["status"] = status
    return body


def test_managed_fields_labels_and_foreign_annotations_are_not_kept() -> None:
    store = Store()
    store.put_scheduled_job(scheduled_job())
    kept = store.scheduled_job(KEY)
    assert kept is not None
    meta = kept["metadata"]
    assert set(kept) == {"metadata", "spec"}
    assert "managedFields" not in meta and "labels" not in meta
    assert "finalizers" not in meta and "ownerReferences" not in meta
    assert meta["annotations"] == {names.TRIGGER_ANNOTATION: "t-1", names.REDRIVE_ANNOTATION: "r-1"}
    assert {k: meta[k] for k in ("name", "namespace", "uid", "generation", "resourceVersion")} == {
        "name": "nightly",
        "namespace": "team-a",
        "uid": "0b5d1a10-0000-4000-8000-000000000001",
        "generation": 2,
        "resourceVersion": "4711",
    }


def test_spec_and_status_are_kept_whole() -> None:
    status = {"observedGeneration": 2, "scheduleCursor": "2026-11-29T09:00:00Z", "counters": {"runs": 4}}
    body = scheduled_job(status=status)
    store = Store()
    store.put_scheduled_job(body)
    kept = store.scheduled_job(KEY)
    assert kept is not None
    assert kept["spec"] == body["spec"] and kept["status"] == status


def test_the_model_and_the_planner_see_the_same_object() -> None:
    status = {"observedGeneration": 2, "scheduleCursor": "2026-11-29T02:00:00Z", "lastHandledTrigger": "t-0"}
    body = scheduled_job(status=status)
    store = Store()
    store.put_scheduled_job(body)
    kept = store.scheduled_job(KEY)
    assert kept is not None
    full, slim = model.ScheduledJob.from_dict(body), model.ScheduledJob.from_dict(kept)
    ours = {k: v for k, v in full.metadata.annotations.items() if k.startswith("sundial.dev/")}
    assert slim == dataclasses.replace(full, metadata=dataclasses.replace(full.metadata, annotations=ours))
    context = Context(now=NOW, fencing_token="0-1")
    assert planning.plan(slim, [], context) == planning.plan(full, [], context)


def test_a_deletion_timestamp_is_kept() -> None:
    body = scheduled_job()
    body["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00Z"
    kept = slim_scheduled_job(body)
    assert kept["metadata"]["deletionTimestamp"] == "2026-11-29T10:00:00Z"
    assert model.ScheduledJob.from_dict(kept).metadata.deletion_timestamp == datetime(2026, 11, 29, 10, tzinfo=UTC)


def test_every_read_is_a_fresh_copy_and_the_caller_body_is_not_touched() -> None:
    body = scheduled_job()
    before = copy.deepcopy(body)
    store = Store()
    store.put_scheduled_job(body)
    assert body == before
    first = store.scheduled_job(KEY)
    assert first is not None
    first["spec"]["schedule"] = "changed"
    second = store.scheduled_job(KEY)
    assert second is not None and second["spec"]["schedule"] == "0 3 * * *"


def test_a_newer_body_replaces_the_kept_one_and_a_drop_forgets_it() -> None:
    store = Store()
    store.put_scheduled_job(scheduled_job())
    newer = scheduled_job(status={"observedGeneration": 2})
    newer["metadata"]["resourceVersion"] = "4712"
    store.put_scheduled_job(newer)
    kept = store.scheduled_job(KEY)
    assert kept is not None and kept["metadata"]["resourceVersion"] == "4712" and "status" in kept
    assert list(store.scheduled_job_keys()) == [KEY] and len(store) == 1
    store.drop_scheduled_job(newer)
    assert store.scheduled_job(KEY) is None and len(store) == 0


def test_keys_share_one_namespace_string() -> None:
    store = Store()
    first = scheduled_job()
    second = scheduled_job()
    second["metadata"]["name"] = "other"
    second["metadata"]["namespace"] = "".join(["team", "-a"])  # an equal but distinct string
    a, b = store.put_scheduled_job(first), store.put_scheduled_job(second)
    assert a[0] is b[0]


def _job(name: str, *, conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "labels": {names.SCHEDULED_JOB_LABEL: "nightly"},
            "annotations": {names.SCHEDULED_TIME_ANNOTATION: "2026-11-29T02:00:00Z", names.ATTEMPT_ANNOTATION: "1"},
            "creationTimestamp": "2026-11-29T02:00:01Z",
            "ownerReferences": [{"kind": "ScheduledJob", "uid": "sj-uid", "controller": True}],
            "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
        "status": {"conditions": conditions or []},
    }


def test_jobs_are_kept_as_what_the_planner_is_given() -> None:
    store = Store()
    done = [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-29T02:01:00Z"}]
    store.put_job(_job("nightly-a"))
    store.put_job(_job("nightly-b", conditions=done))
    assert store.observed_jobs(KEY) == [
        jobs.observe(_job("nightly-a")),
        jobs.observe(_job("nightly-b", conditions=done)),
    ]


def test_tombstones_are_unaffected() -> None:
    store = Store()
    store.put_scheduled_job(scheduled_job())  # a tombstone is kept only while its owner is
    store.put_job(_job("nightly-a"))
    store.drop_job(_job("nightly-a"))
    [tomb] = store.observed_jobs(KEY)
    assert tomb == jobs.observe(_job("nightly-a"), deleted=True)
    assert store.tombstones(KEY) == ["nightly-a"]
    store.put_job(_job("nightly-a"))  # seen again (a re-list): live, no tombstone
    assert store.tombstones(KEY) == [] and store.observed_jobs(KEY) == [jobs.observe(_job("nightly-a"))]
    store.drop_job(_job("nightly-a"))
    store.prune_tombstones(KEY, still_needed=set())
    assert store.observed_jobs(KEY) == []


def test_kept_bodies_are_compressed_and_decode_exactly() -> None:
    store = Store()
    first = scheduled_job(status={"observedGeneration": 2, "counters": {"runs": 1}})
    store.put_scheduled_job(first)
    alike = scheduled_job(status={"observedGeneration": 2, "counters": {"runs": 2}})
    alike["metadata"].update(name="alike", uid="0b5d1a10-0000-4000-8000-000000000002")
    store.put_scheduled_job(alike)
    different = scheduled_job()
    different["metadata"]["name"] = "different"
    container = {"name": "x", "image": "example.com/other:2", "env": [{"name": "A", "value": "b" * 3000}]}
    different["spec"] = {"runAt": "2027-01-01T00:00:00Z", "jobTemplate": {"spec": {"template": {"spec": {
        "containers": [container]}}}}}  # fmt: skip
    store.put_scheduled_job(different)
    for body in (first, alike, different):
        key = (body["metadata"]["namespace"], body["metadata"]["name"])
        assert store.scheduled_job(key) == slim_scheduled_job(body)
    # An object like the first one costs a small fraction of its JSON.
    assert len(store._scheduled_jobs[("team-a", "alike")]) < len(json.dumps(slim_scheduled_job(alike))) / 4


def test_a_huge_first_object_does_not_become_the_dictionary() -> None:
    store = Store()
    huge = scheduled_job()
    huge["metadata"]["annotations"][names.TRIGGER_ANNOTATION] = "t" * 40_000
    store.put_scheduled_job(huge)
    store.put_scheduled_job(
        scheduled_job(status={"observedGeneration": 1}) | {"metadata": {"name": "small", "namespace": "team-a"}}
    )
    assert len(store._codec._zdict or b"") < 16 * 1024  # the typical object only
    assert store.scheduled_job(KEY) == slim_scheduled_job(huge)
    assert store.scheduled_job(("team-a", "small")) == {
        "metadata": {"name": "small", "namespace": "team-a"},
        "spec": scheduled_job()["spec"],
        "status": {"observedGeneration": 1},
    }


def test_the_uid_is_read_without_decoding_the_body() -> None:
    store = Store()
    store.put_scheduled_job(scheduled_job())
    assert store.uid(KEY) == "0b5d1a10-0000-4000-8000-000000000001"
    assert store.uid(("team-a", "absent")) is None
    odd = scheduled_job()
    odd["metadata"].update(name="odd", uid="ü-" + "x" * 300)  # never so in Kubernetes: still kept whole
    store.put_scheduled_job(odd)
    assert store.uid(("team-a", "odd")) == "ü-" + "x" * 300
    assert store.scheduled_job(("team-a", "odd")) == slim_scheduled_job(odd)


def test_holds_compares_the_resource_version_without_decoding() -> None:
    store = Store()
    body = scheduled_job()
    assert not store.holds(body)  # nothing kept yet
    store.put_scheduled_job(body)
    assert store.holds(copy.deepcopy(body))  # the echo of what we kept
    newer = copy.deepcopy(body)
    newer["metadata"]["resourceVersion"] = "4712"
    assert not store.holds(newer)
    unversioned = copy.deepcopy(body)
    del unversioned["metadata"]["resourceVersion"]
    assert not store.holds(unversioned)  # no version: never assume it is the same object
    store.put_scheduled_job(unversioned)
    assert not store.holds(unversioned)
    assert store.uid(KEY) == "0b5d1a10-0000-4000-8000-000000000001"
    assert store.scheduled_job(KEY) == slim_scheduled_job(unversioned)


def _at(version: str, **status: Any) -> dict[str, Any]:
    body = scheduled_job(status=dict(status))
    body["metadata"]["resourceVersion"] = version
    return body


def test_keep_newer_keeps_a_write_planned_from_the_kept_version() -> None:
    store = Store()
    store.put_scheduled_job(_at("7"))
    store.keep_newer(_at("8", runs=1), read_version="7")
    assert (store.scheduled_job(KEY) or {})["status"] == {"runs": 1}
    assert store.holds(_at("8"))


def test_keep_newer_never_goes_back_behind_the_watch() -> None:
    store = Store()
    store.put_scheduled_job(_at("7"))
    store.put_scheduled_job(_at("9", suspended="by-user"))  # the watch brought a newer edit first
    store.keep_newer(_at("8", runs=1), read_version="7")  # ... then our write's response (older) is kept
    assert (store.scheduled_job(KEY) or {})["status"] == {"suspended": "by-user"}
    assert store.holds(_at("9"))


def test_keep_newer_does_not_bring_back_a_deleted_object() -> None:
    store = Store()
    store.put_scheduled_job(_at("7"))
    store.drop_scheduled_job(_at("7"))
    store.keep_newer(_at("8", runs=1), read_version="7")
    assert store.scheduled_job(KEY) is None


def test_a_long_named_object_finds_its_jobs_under_the_new_and_the_old_label_value() -> None:
    """The label value of a name over 63 characters now ends in 64 bits of hash; Jobs an earlier build labelled
    with the 20-bit value are still this object's (an upgrade must not lose its history or active runs)."""
    store = Store()
    long_name = "a-scheduled-job-whose-name-is-much-longer-than-the-sixty-three-characters-of-a-label"
    body = scheduled_job()
    body["metadata"]["name"] = long_name
    store.put_scheduled_job(body)
    key = ("team-a", long_name)
    new, old = names.scheduled_job_label_values(long_name)
    for job_name, value in (("new-job", new), ("old-job", old)):
        job = {
            "metadata": {
                "name": job_name,
                "namespace": "team-a",
                "uid": job_name,
                "labels": {names.SCHEDULED_JOB_LABEL: value},
            }
        }
        assert store.put_job(job) == key
    assert {job.name for job in store.observed_jobs(key)} == {"new-job", "old-job"}
    other = "a-scheduled-job-whose-name-is-much-longer-than-the-sixty-three-characters-of-a-label-2"
    assert set(names.scheduled_job_label_values(other)).isdisjoint({new, old})
