"""What the informers hand on: into the store and the dispatcher; the echo of our own status write wakes nothing;
an object that cannot be read is quarantined as a stub, and nothing else is affected (DESIGN §12.1)."""

from __future__ import annotations

import copy
from typing import Any

from tests.unit.runtime.watch.feeds import Feed

from sundial.model import ScheduledJob, names
from sundial.model.errors import ObjectQuarantinedError
from sundial.planner.observed import FailureReason, JobPhase
from sundial.runtime.watch.intake import JOB, SCHEDULED_JOB
from sundial.runtime.watch.quarantine import Reason

KEY = ("team-a", "nightly")


def body(version: str, *, name: str = "nightly", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team-a", "uid": f"u-{name}", "resourceVersion": version},
        "spec": {"schedule": "* * * * *"},
        "status": dict(status),
    }


def job(name: str, *, owner: str = "nightly", **annotations: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "resourceVersion": "9",
            "labels": {names.SCHEDULED_JOB_LABEL: names.scheduled_job_label_value(owner)},
            "annotations": {names.SCHEDULED_TIME_ANNOTATION: "2026-11-29T10:30:00Z", names.ATTEMPT_ANNOTATION: "1"}
            | annotations,
        },
        "status": {},
    }


def nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(levels):
        value = {"x": value}
    return value


def test_a_new_version_is_kept_and_wakes_its_key() -> None:
    feed = Feed()
    feed.scheduled_job("ADDED", body("1"))
    feed.scheduled_job("MODIFIED", body("2", runs=1))
    assert feed.dispatcher.calls == [("touch", KEY), ("touch", KEY)]
    assert (feed.store.scheduled_job(KEY) or {})["status"] == {"runs": 1}


def test_the_echo_of_the_kept_version_wakes_nothing() -> None:
    feed = Feed()
    written = body("7", runs=3)
    feed.store.put_scheduled_job(written)  # what the reconciler keeps after its status write
    feed.scheduled_job("MODIFIED", copy.deepcopy(written))  # ... and the watch's echo of it
    feed.scheduled_job(None, copy.deepcopy(written))  # a relist
    assert feed.dispatcher.calls == []
    feed.scheduled_job("MODIFIED", body("8", runs=3))  # someone else's write: plan again
    assert feed.dispatcher.calls == [("touch", KEY)]


def test_deleted_forgets_the_key_everywhere() -> None:
    feed = Feed()
    feed.scheduled_job("ADDED", body("1"))
    feed.scheduled_job("DELETED", body("2"))
    assert feed.store.scheduled_job(KEY) is None
    assert feed.dispatcher.calls == [("touch", KEY), ("forget", KEY)]
    assert feed.reconciler.calls == [("forget", KEY)]


def test_jobs_wake_their_owner_softly() -> None:
    """A Job event leaves an owner whose status write waits in the dispatcher's lane there (DESIGN §7.5)."""
    feed = Feed()
    feed.scheduled_job("ADDED", body("1"))
    feed.dispatcher.calls.clear()
    feed.job("ADDED", job("nightly-a"))
    feed.job("DELETED", job("nightly-a"))
    assert feed.dispatcher.calls == [("touch (a Job)", KEY), ("touch (a Job)", KEY)]


def test_a_job_stamped_before_year_one_in_utc_is_read_without_its_time() -> None:
    """The Job of the issue: 0001-01-01T00:00:00+01:00 is before year 1 in UTC (it used to raise OverflowError)."""
    feed = Feed()
    feed.scheduled_job("ADDED", body("1"))
    feed.job("ADDED", job("nightly-x", **{names.SCHEDULED_TIME_ANNOTATION: "0001-01-01T00:00:00+01:00"}))
    (seen,) = feed.store.observed_jobs(KEY)
    assert seen.name == "nightly-x" and seen.scheduled_time is None
    assert feed.counted == []


def test_a_scheduled_job_nested_too_deeply_is_kept_as_a_stub_the_planner_reports() -> None:
    feed = Feed()
    feed.scheduled_job("ADDED", body("1", name="healthy"))
    deep = body("5", runs=4)
    deep["spec"]["jobTemplate"] = {"metadata": nested(300), "spec": {}}
    feed.scheduled_job("ADDED", deep)
    assert feed.counted == [(SCHEDULED_JOB, Reason.TOO_DEEP)]
    kept = feed.store.scheduled_job(KEY)
    assert kept is not None and kept["metadata"]["resourceVersion"] == "5"
    assert kept["status"] == {"runs": 4}, "the operator's own status is kept when it can be"
    obj = ScheduledJob.from_dict(kept)
    assert obj.spec is None and isinstance(obj.spec_error, ObjectQuarantinedError)
    assert "nested too deeply" in str(obj.spec_error)
    assert ("touch", KEY) in feed.dispatcher.calls, "planned, so Ready=False Quarantined is written"
    assert feed.store.scheduled_job(("team-a", "healthy")) is not None, "the other object is untouched"
    assert feed.quarantine.names(SCHEDULED_JOB, "team-a") == {KEY}
    # The echo of the status write about it is the same object again: nothing new to plan.
    feed.dispatcher.calls.clear()
    feed.scheduled_job("MODIFIED", copy.deepcopy(deep))
    assert feed.dispatcher.calls == []
    # A fixed version leaves quarantine and is kept whole.
    feed.scheduled_job("MODIFIED", body("6"))
    assert feed.quarantine.count(SCHEDULED_JOB) == 0
    fixed = ScheduledJob.from_dict(feed.store.scheduled_job(KEY) or {})
    assert not isinstance(fixed.spec_error, ObjectQuarantinedError) and fixed.raw_spec == {"schedule": "* * * * *"}


def test_a_job_with_fields_of_the_wrong_type_is_quarantined_and_its_last_readable_version_kept() -> None:
    feed = Feed()
    feed.scheduled_job("ADDED", body("1"))
    feed.job("ADDED", job("nightly-a"))
    broken = job("nightly-a")
    broken["status"] = {"conditions": "Complete"}  # a string where a list belongs
    broken["metadata"]["resourceVersion"] = "10"
    feed.job("MODIFIED", broken)
    assert feed.counted == [(JOB, Reason.WRONG_TYPE)]
    assert [j.phase for j in feed.store.observed_jobs(KEY)] == [JobPhase.ACTIVE]
    feed.job("DELETED", broken)
    assert feed.quarantine.count(JOB) == 0
    (tomb,) = feed.store.observed_jobs(KEY)
    assert tomb.phase is JobPhase.DELETED and tomb.failure_reason == FailureReason.JOB_LOST


def test_a_calendar_that_cannot_be_read_is_an_invalid_calendar_for_its_referrers() -> None:
    feed = Feed()
    referrer = body("1")
    referrer["spec"]["calendarRefs"] = ["holidays"]
    feed.scheduled_job("ADDED", referrer)
    feed.dispatcher.calls.clear()
    feed.calendar("ADDED", {"metadata": {"name": "holidays", "namespace": "team-a", "uid": "c", "resourceVersion": "3"},
                            "spec": nested(300)})  # fmt: skip
    assert feed.store.calendars.for_object("team-a", ["holidays"]) == {"holidays": None}
    assert feed.dispatcher.touched == [KEY]


def test_anything_that_is_not_an_object_is_quarantined_without_a_name() -> None:
    feed = Feed()
    feed.scheduled_job("ADDED", {"metadata": ["not", "an", "object"], "spec": {}})
    assert feed.counted == [(SCHEDULED_JOB, Reason.WRONG_TYPE)]
    assert len(feed.store) == 0 and feed.dispatcher.calls == []


def test_a_relist_that_misses_a_job_ends_its_run_as_lost() -> None:
    feed = Feed()
    feed.scheduled_job(None, body("1"))
    feed.job(None, job("nightly-a"))
    assert feed.jobs.held("team-a") == {("team-a", "nightly-a")}
    feed.jobs.vanished(("team-a", "nightly-a"))
    (tomb,) = feed.store.observed_jobs(KEY)
    assert tomb.phase is JobPhase.DELETED and tomb.failure_reason == FailureReason.JOB_LOST
    assert tomb.scheduled_time is not None, "from what was last seen of it"
    assert feed.jobs.held("team-a") == set()


def test_a_relist_that_misses_a_scheduled_job_forgets_it_everywhere() -> None:
    feed = Feed()
    feed.scheduled_job(None, body("1"))
    assert feed.scheduled_jobs.held(None) == {KEY}
    feed.scheduled_jobs.vanished(KEY)
    assert feed.store.scheduled_job(KEY) is None
    assert ("forget", KEY) in feed.dispatcher.calls and feed.reconciler.calls == [("forget", KEY)]


def test_tombstones_are_kept_only_while_their_owner_is() -> None:
    feed = Feed()
    feed.job("ADDED", job("orphan-1", owner="orphan"))
    feed.job("DELETED", job("orphan-1", owner="orphan"))
    assert feed.store.tombstone_count() == 0, "no owner: nobody would ever free it"
    feed.scheduled_job("ADDED", body("1"))
    feed.job("ADDED", job("nightly-a"))
    feed.job("DELETED", job("nightly-a"))
    assert feed.store.tombstone_count() == 1
    feed.scheduled_job("DELETED", body("2"))
    assert feed.store.tombstone_count() == 0


def test_a_job_of_a_long_named_scheduled_job_finds_its_owner_by_index() -> None:
    long_name = "a" * 70
    feed = Feed()
    feed.scheduled_job("ADDED", body("1", name=long_name))
    feed.dispatcher.calls.clear()
    feed.job("ADDED", job("j-1", owner=long_name))
    assert feed.dispatcher.calls == [("touch (a Job)", ("team-a", long_name))]
    assert [j.name for j in feed.store.observed_jobs(("team-a", long_name))] == ["j-1"]
