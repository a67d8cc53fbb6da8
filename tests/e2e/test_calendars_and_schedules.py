"""Exclusion calendars and schedules lists end to end (DESIGN §3.1, §3.2, issue 16): one operator, a namespace per test.

Per-second schedules keep the test short; every wait polls with a deadline.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

LABEL = names.SCHEDULED_JOB_LABEL
SHARING = ("alpha", "bravo", "charlie")


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces) -> Operator:
    return start_module_operator("--event-series-interval", "1", namespaces=module_namespaces.all)


@pytest.fixture
def ns(operator: Operator, module_namespace: str) -> str:
    return module_namespace


def _scheduled_job(cluster: Cluster, name: str, **spec: Any) -> dict[str, Any]:
    template = cluster.job_manifest("x", duration_seconds=1)
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {"successfulJobsHistoryLimit": 100, **spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _calendar(name: str, *exclude: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduleCalendar",
        "metadata": {"name": name},
        "spec": {"exclude": list(exclude)},
    }


def _status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = (cluster.get_json("scheduledjob", name, "-n", ns) or {}).get("status") or {}
    return found


def _ready(cluster: Cluster, ns: str, name: str) -> tuple[str, str]:
    for condition in _status(cluster, ns, name).get("conditions") or []:
        if condition.get("type") == "Ready":
            return str(condition.get("status")), str(condition.get("reason"))
    return "", ""


def _scheduled_times(cluster: Cluster, ns: str, owner: str) -> list[dt.datetime]:
    items = (cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}).get("items") or []
    return sorted(_parse(job["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION]) for job in items)


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _counter(cluster: Cluster, ns: str, name: str, counter: str) -> int:
    return int((_status(cluster, ns, name).get("counters") or {}).get(counter) or 0)


def test_a_calendar_shared_by_three_scheduled_jobs(cluster: Cluster, ns: str, operator: Operator) -> None:
    # Every 10 s; the calendar excludes the times at seconds 0, 20 and 40: they are counted, never run.
    cluster.apply(_calendar("holidays", {"schedule": "*/20 * * * * *"}), ns)
    for name in SHARING:
        cluster.apply(_scheduled_job(cluster, name, schedule="*/10 * * * * *", calendarRefs=["holidays"]), ns)

    def all_ran_and_excluded() -> bool:
        return all(
            _counter(cluster, ns, name, "excluded") >= 2 and _counter(cluster, ns, name, "succeeded") >= 2
            for name in SHARING
        )

    cluster.wait_for(all_ran_and_excluded, timeout=60, message="runs and excluded times on all three")
    for name in SHARING:
        assert {t.second % 20 for t in _scheduled_times(cluster, ns, name)} == {10}, name
        recent = _status(cluster, ns, name).get("recentRuns") or []
        excluded = [r for r in recent if r.get("result") == "Excluded"]
        assert excluded and all(_parse(r["scheduledTime"]).second % 20 == 0 for r in excluded)
        assert all(r.get("attempts") == 0 for r in excluded)
        assert _counter(cluster, ns, name, "missed") == 0
    assert "sundial_runs_excluded_total" in operator.metrics()

    # Editing the calendar re-plans all three: now every time is excluded, and no Job starts after the edit.
    edited = dt.datetime.now(dt.UTC)
    cluster.apply(_calendar("holidays", {"schedule": "* * * * * *"}), ns)
    counts = {name: _counter(cluster, ns, name, "excluded") for name in SHARING}
    cluster.wait_for(
        lambda: all(_counter(cluster, ns, name, "excluded") >= counts[name] + 3 for name in SHARING),
        timeout=60,
        message="times excluded by the edited calendar on all three",
    )
    slack = dt.timedelta(seconds=3)  # a run claimed just before the edit reached the operator
    for name in SHARING:
        assert [t for t in _scheduled_times(cluster, ns, name) if t > edited + slack] == [], name

    # Deleting it stops all three at once (Ready=False CalendarNotFound); creating it again resumes them.
    cluster.kubectl("delete", "schedulecalendar", "holidays", "-n", ns)
    cluster.wait_for(
        lambda: all(_ready(cluster, ns, name) == ("False", "CalendarNotFound") for name in SHARING),
        timeout=30,
        message="CalendarNotFound on all three",
    )
    cluster.apply(_calendar("holidays", {"dates": ["2000-01-01"]}), ns)
    resumed = dt.datetime.now(dt.UTC)
    cluster.wait_for(
        lambda: all(
            _ready(cluster, ns, name) == ("True", "Scheduled")
            and any(t > resumed for t in _scheduled_times(cluster, ns, name))
            for name in SHARING
        ),
        timeout=60,
        message="all three ready and running again",
    )


def test_a_missing_calendar_holds_a_new_object_until_it_exists(cluster: Cluster, ns: str) -> None:
    cluster.apply(_scheduled_job(cluster, "waiting", schedule="*/5 * * * * *", calendarRefs=["later"]), ns)
    cluster.wait_for(
        lambda: _ready(cluster, ns, "waiting") == ("False", "CalendarNotFound"), timeout=30, message="not ready"
    )
    assert _scheduled_times(cluster, ns, "waiting") == []
    cluster.apply(_calendar("later", {"dates": ["2000-01-01"]}), ns)
    cluster.wait_for(lambda: _scheduled_times(cluster, ns, "waiting"), timeout=30, message="a run once it exists")


def test_a_schedules_list_fires_the_union_once_per_time(cluster: Cluster, ns: str) -> None:
    # Seconds 0, 20, 40 (twice: two entries produce them) and 5, 25, 45.
    spec = {"schedules": ["*/20 * * * * *", "0,20,40 * * * * *", "5/20 * * * * *"]}
    cluster.apply(_scheduled_job(cluster, "listed", **spec), ns)

    def both_entries_fired() -> list[dt.datetime] | None:
        times = _scheduled_times(cluster, ns, "listed")
        seconds = {t.second for t in times}
        return times if seconds & {0, 20, 40} and seconds & {5, 25, 45} and len(times) >= 4 else None

    times = cluster.wait_for(both_entries_fired, timeout=60, message="runs of both entries")
    assert {t.second for t in times} <= {0, 5, 20, 25, 40, 45}
    assert len(times) == len(set(times))  # one Job per nominal time
    status = _status(cluster, ns, "listed")
    assert _counter(cluster, ns, "listed", "runs") >= len(times)
    assert status.get("nextScheduleTime")
