"""Watch events into the store and the dispatcher; the echo of our own status write wakes nothing."""

from __future__ import annotations

import copy
from typing import Any

from sundial.model import names
from sundial.runtime.watch.intake import Intake
from sundial.runtime.watch.store import Key, Store

KEY = ("team-a", "nightly")


def body(version: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "nightly", "namespace": "team-a", "uid": "u-1", "resourceVersion": version},
        "spec": {"schedule": "* * * * *"},
        "status": dict(status),
    }


def job(name: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "resourceVersion": "9",
            "labels": {names.SCHEDULED_JOB_LABEL: "nightly"},
            "annotations": {names.SCHEDULED_TIME_ANNOTATION: "2026-11-29T10:30:00Z", names.ATTEMPT_ANNOTATION: "1"},
        },
        "status": {},
    }


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Key | None]] = []

    def touch(self, key: Key, *, soft: bool = False) -> None:
        self.calls.append(("touch (a Job)" if soft else "touch", key))

    def forget(self, key: Key) -> None:
        self.calls.append(("forget", key))

    def check(self) -> None:
        self.calls.append(("check", None))


def intake() -> tuple[Intake, Store, Recorder, Recorder]:
    store, dispatcher, other = Store(), Recorder(), Recorder()
    return Intake(store=store, dispatcher=dispatcher, reconciler=other, listing=other), store, dispatcher, other


def test_a_new_version_is_kept_and_wakes_its_key() -> None:
    take, store, dispatcher, listing = intake()
    take.scheduled_job("ADDED", body("1"))
    take.scheduled_job("MODIFIED", body("2", runs=1))
    assert dispatcher.calls == [("touch", KEY), ("touch", KEY)]
    assert (store.scheduled_job(KEY) or {})["status"] == {"runs": 1}
    assert listing.calls == [("check", None), ("check", None)]


def test_the_echo_of_the_kept_version_wakes_nothing_but_still_counts_for_readiness() -> None:
    take, store, dispatcher, listing = intake()
    written = body("7", runs=3)
    store.put_scheduled_job(written)  # what the reconciler keeps after its status write
    take.scheduled_job("MODIFIED", copy.deepcopy(written))  # ... and the watch's echo of it
    take.scheduled_job(None, copy.deepcopy(written))  # a re-list after a watch restart
    assert dispatcher.calls == []
    assert listing.calls == [("check", None), ("check", None)]
    take.scheduled_job("MODIFIED", body("8", runs=3))  # someone else's write: plan again
    assert dispatcher.calls == [("touch", KEY)]


def test_deleted_forgets_the_key_everywhere() -> None:
    take, store, dispatcher, other = intake()
    take.scheduled_job("ADDED", body("1"))
    take.scheduled_job("DELETED", body("2"))
    assert store.scheduled_job(KEY) is None
    assert dispatcher.calls == [("touch", KEY), ("forget", KEY)]
    assert ("forget", KEY) in other.calls


def test_jobs_wake_their_owner_softly() -> None:
    """A Job event leaves an owner whose status write waits in the dispatcher's lane there (DESIGN §7.5)."""
    take, _store, dispatcher, _ = intake()
    take.job("ADDED", job("nightly-a"))
    take.job("DELETED", job("nightly-a"))
    assert dispatcher.calls == [("touch (a Job)", KEY), ("touch (a Job)", KEY)]
