"""Job bodies → ObservedJob, and the store's grouping and tombstones."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sundial.model import names
from sundial.planner.observed import FailureReason, JobPhase
from sundial.runtime.watch import jobs
from sundial.runtime.watch.store import Store


def job(
    name: str = "nightly-1-1",
    *,
    owner: str = "nightly",
    conditions: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    controller_uid: str | None = "sj-uid",
) -> dict[str, Any]:
    refs = (
        [{"kind": "ScheduledJob", "name": owner, "uid": controller_uid, "controller": True}] if controller_uid else []
    )
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "labels": {names.SCHEDULED_JOB_LABEL: owner},
            "annotations": annotations
            if annotations is not None
            else {names.SCHEDULED_TIME_ANNOTATION: "2026-03-01T02:30:00Z", names.ATTEMPT_ANNOTATION: "2"},
            "creationTimestamp": "2026-03-01T02:30:01Z",
            "ownerReferences": [*refs, {"kind": "Other", "uid": "x"}],
        },
        "status": {"conditions": conditions or []},
    }


def test_a_job_without_terminal_conditions_is_active_and_carries_its_run() -> None:
    observed = jobs.observe(job())
    assert observed.phase is JobPhase.ACTIVE
    assert observed.scheduled_time == datetime(2026, 3, 1, 2, 30, tzinfo=UTC)
    assert observed.attempt == 2
    assert observed.owner_uid == "sj-uid"
    assert observed.created_at == datetime(2026, 3, 1, 2, 30, 1, tzinfo=UTC)


def test_complete_means_succeeded() -> None:
    body = job(conditions=[{"type": "Complete", "status": "True", "lastTransitionTime": "2026-03-01T02:31:00Z"}])
    observed = jobs.observe(body)
    assert observed.phase is JobPhase.SUCCEEDED
    assert observed.finished_at == datetime(2026, 3, 1, 2, 31, tzinfo=UTC)


def test_failed_carries_the_condition_reason_and_message() -> None:
    body = job(conditions=[
        {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "message": "too slow",
         "lastTransitionTime": "2026-03-01T02:40:00Z"},
    ])  # fmt: skip
    observed = jobs.observe(body)
    assert observed.phase is JobPhase.FAILED
    assert (observed.failure_reason, observed.failure_message) == ("DeadlineExceeded", "too slow")


def test_a_false_condition_is_not_terminal() -> None:
    assert jobs.observe(job(conditions=[{"type": "Failed", "status": "False"}])).phase is JobPhase.ACTIVE


def test_unparsable_annotations_and_no_controller_become_none() -> None:
    body = job(annotations={names.SCHEDULED_TIME_ANNOTATION: "yesterday", names.ATTEMPT_ANNOTATION: "two"},
               controller_uid=None)  # fmt: skip
    observed = jobs.observe(body)
    assert (observed.scheduled_time, observed.attempt, observed.owner_uid) == (None, None, None)


def test_an_unfinished_job_deleted_is_lost() -> None:
    observed = jobs.observe(job(), deleted=True)
    assert observed.phase is JobPhase.DELETED
    assert observed.failure_reason == FailureReason.JOB_LOST


def test_store_groups_jobs_by_owner_label_even_before_the_owner_is_seen() -> None:
    store = Store()
    assert store.put_job(job("nightly-1-1")) == ("team-a", "nightly")
    store.put_scheduled_job({"metadata": {"name": "nightly", "namespace": "team-a", "uid": "sj-uid"}})
    assert [j.name for j in store.observed_jobs(("team-a", "nightly"))] == ["nightly-1-1"]
    assert store.observed_jobs(("team-b", "nightly")) == []


def owned() -> Store:
    """A store that holds the Jobs' owner (a tombstone is kept only while its owner is)."""
    store = Store()
    store.put_scheduled_job(
        {"metadata": {"name": "nightly", "namespace": "team-a", "uid": "u", "resourceVersion": "1"}}
    )
    return store


def test_tombstones_outlive_deletion_until_pruned() -> None:
    store = owned()
    key = ("team-a", "nightly")
    store.put_job(job("nightly-1-1"))
    store.drop_job(job("nightly-1-1"))
    [tomb] = store.observed_jobs(key)
    assert tomb.phase is JobPhase.DELETED
    store.prune_tombstones(key, still_needed={"nightly-1-1"})
    assert store.tombstones(key) == ["nightly-1-1"]
    store.prune_tombstones(key, still_needed=set())
    assert store.observed_jobs(key) == []


def test_a_finished_job_deleted_keeps_its_outcome() -> None:
    store = owned()
    done = job(conditions=[{"type": "Complete", "status": "True"}])
    store.drop_job(done)
    [tomb] = store.observed_jobs(("team-a", "nightly"))
    assert tomb.phase is JobPhase.SUCCEEDED


def test_a_recreated_job_replaces_its_tombstone() -> None:
    store = owned()
    store.drop_job(job("nightly-1-1"))
    store.put_job(job("nightly-1-1"))
    [live] = store.observed_jobs(("team-a", "nightly"))
    assert live.phase is JobPhase.ACTIVE
