"""Catch-up after the operator was stopped (DESIGN §4): Latest, All with maxRuns, and the window.

One operator watching this test's namespace is stopped gracefully while three ScheduledJobs (every
3 seconds) keep coming due, then started again. Let ``outage`` be the nominal times after the last one
handled before the stop and before the restart began: all of them are due at the first pass of the
new operator, so what it does with them is deterministic.
"""

from __future__ import annotations

import datetime as dt
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]

T = TypeVar("T")
LABEL = names.SCHEDULED_JOB_LABEL
PERIOD = 3
OUTAGE_RUNS = 5
#: MissedSchedule Events are one series per object whose count grows: written at most once a second here.
EVENT_FLAGS = ("--event-series-interval", "1")


def _when(condition: bool, value: T) -> T | None:
    """VALUE when CONDITION holds, else None (a typed predicate result for ``Cluster.wait_for``)."""
    return value if condition else None


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _jobs(cluster: Cluster, ns: str, owner: str) -> dict[dt.datetime, dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}
    return {_parse(job["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION]): job for job in listing["items"]}


def _status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = (cluster.get_json("scheduledjob", name, "-n", ns) or {}).get("status") or {}
    return status


def _missed(cluster: Cluster, ns: str, name: str) -> int:
    return int((_status(cluster, ns, name).get("counters") or {}).get("missed", 0))


def _missed_events(cluster: Cluster, ns: str, name: str) -> int:
    selector = f"involvedObject.kind=ScheduledJob,involvedObject.name={name},reason=MissedSchedule"
    listing = cluster.get_json("events", "-n", ns, "--field-selector", selector) or {}
    return sum(int(event.get("count") or 1) for event in listing.get("items") or [])


def _wait_missed_events(cluster: Cluster, ns: str, name: str, at_least: int) -> None:
    """Events are sent in the background and aggregated (one Event, its count): poll with a deadline."""
    cluster.wait_for(
        lambda: _missed_events(cluster, ns, name) >= at_least,
        timeout=20,
        message=f"{name}: MissedSchedule Events counting {at_least} or more",
    )


def _nominal_times(after: dt.datetime, before: dt.datetime) -> list[dt.datetime]:
    """Multiples of PERIOD seconds (within the minute, as ``*/3`` means) in (after, before)."""
    times = []
    moment = after.replace(microsecond=0) + dt.timedelta(seconds=1)
    while moment < before:
        if moment.second % PERIOD == 0:
            times.append(moment)
        moment += dt.timedelta(seconds=1)
    return times


def test_catch_up_after_the_operator_was_stopped(
    cluster: Cluster, namespace: str, start_operator: OperatorLauncher
) -> None:
    ns = namespace
    operator = start_operator(*EVENT_FLAGS, namespaces=[ns])
    template = cluster.job_manifest("x")["spec"]
    objects = {
        "latest": {"policy": "Latest"},
        "all-two": {"policy": "All", "maxRuns": 2},
        "windowed": {"policy": "All", "maxRuns": 100, "window": "4s"},
    }
    for name, catch_up in objects.items():
        cluster.apply(
            {
                "apiVersion": "sundial.dev/v1alpha1",
                "kind": "ScheduledJob",
                "metadata": {"name": name},
                "spec": {"schedule": f"*/{PERIOD} * * * * *", "catchUp": catch_up, "jobTemplate": {"spec": template}},
            },
            ns,
        )
    for name in objects:
        cluster.wait_for(partial(_jobs, cluster, ns, name), timeout=30, message=f"a first run of {name}")

    assert operator.stop() == 0, operator.log_tail()
    last = {name: max(_jobs(cluster, ns, name)) for name in objects}
    missed_before = {name: _missed(cluster, ns, name) for name in objects}
    # Let OUTAGE_RUNS nominal times pass with nothing running (poll the clock, then check).
    until = max(last.values()) + dt.timedelta(seconds=PERIOD * OUTAGE_RUNS + 1)
    cluster.wait_for(lambda: _now() >= until, timeout=PERIOD * OUTAGE_RUNS + 30, message="the outage")
    assert {name: max(_jobs(cluster, ns, name)) for name in objects} == last, "nothing ran during the outage"

    restart = _now()
    start_operator(*EVENT_FLAGS, namespaces=[ns], lease_prefix=operator.lease_prefix)
    outage = {name: _nominal_times(last[name], restart) for name in objects}
    assert all(len(times) >= OUTAGE_RUNS for times in outage.values()), outage

    # Latest: of the outage, at most the newest due one runs (it may be newer than the outage list when
    # a nominal time passed during the restart); all the others are missed, one MissedSchedule each.
    cluster.wait_for(
        lambda: _missed(cluster, ns, "latest") >= missed_before["latest"] + len(outage["latest"]) - 1,
        timeout=30,
        message="Latest: the older outage runs counted missed",
    )
    jobs = _jobs(cluster, ns, "latest")
    ran = [t for t in outage["latest"] if t in jobs]
    assert ran in ([], outage["latest"][-1:]), ran
    cluster.wait_for(
        lambda: max(_jobs(cluster, ns, "latest")) >= outage["latest"][-1], timeout=20, message="Latest: a run"
    )
    _wait_missed_events(cluster, ns, "latest", len(outage["latest"]) - 1)

    # All, maxRuns 2: the two oldest outage runs run as catch-up, the rest of the outage is missed.
    oldest = outage["all-two"][:2]
    jobs = cluster.wait_for(
        lambda: _when(bool(found := _jobs(cluster, ns, "all-two")) and all(t in found for t in oldest), found),
        timeout=30,
        message="All/maxRuns 2: the two oldest outage runs",
    )
    assert [jobs[t]["metadata"]["annotations"][names.TRIGGER_ANNOTATION] for t in oldest] == ["catch-up", "catch-up"]
    assert [t for t in outage["all-two"][2:] if t in jobs] == []
    cluster.wait_for(
        lambda: _missed(cluster, ns, "all-two") >= missed_before["all-two"] + len(outage["all-two"]) - 2,
        timeout=20,
        message="All/maxRuns 2: the rest counted missed",
    )
    _wait_missed_events(cluster, ns, "all-two", len(outage["all-two"]) - 2)

    # Window 4s: everything older than the window at the first pass (which is after ``restart``) is
    # missed and never run.
    stale = [t for t in outage["windowed"] if restart - t > dt.timedelta(seconds=4)]
    assert stale
    cluster.wait_for(
        lambda: _missed(cluster, ns, "windowed") >= missed_before["windowed"] + len(stale),
        timeout=30,
        message="window: the stale outage runs counted missed",
    )
    jobs = _jobs(cluster, ns, "windowed")
    assert [t for t in stale if t in jobs] == []
    _wait_missed_events(cluster, ns, "windowed", len(stale))
    for name in objects:
        cluster.kubectl("delete", "scheduledjob", name, "-n", ns, "--wait=false")
