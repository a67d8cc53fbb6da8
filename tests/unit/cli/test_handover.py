"""The hand-over's steps against a fake cluster (the live proof with the real CronJob controller is
tests/e2e/test_handover.py): the suspension's precondition, the last run, the running Jobs labelled, the
ScheduledJob's annotation, and a hand-over stopped at each step completed by running it again."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial.cli.kubectl import cronjobs, handover
from sundial.cli.kubectl.runner import PluginError
from sundial.model import handovers, names

from .conftest import FakeCronJobCluster, Run

NOW = datetime(2026, 12, 5, 9, 0, 30, tzinfo=UTC)
UID = "cj-uid-1"


def cronjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "hello",
            "namespace": "team-a",
            "uid": UID,
            "resourceVersion": "7",
            "creationTimestamp": "2026-12-01T00:00:00Z",
        },
        "spec": {
            "schedule": "* * * * *",
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
            **spec,
        },
        "status": {"lastScheduleTime": "2026-12-05T08:59:00Z"},
    }


def job(name: str, scheduled: str, *, done: bool, owner: str = UID) -> dict[str, Any]:
    conditions = [{"type": "Complete", "status": "True"}] if done else []
    return {
        "metadata": {
            "name": name,
            "annotations": {handover.CRONJOB_SCHEDULED_TIMESTAMP: scheduled},
            "ownerReferences": [{"kind": "CronJob", "uid": owner, "controller": True}],
        },
        "status": {"conditions": conditions},
    }


@pytest.fixture
def fake() -> FakeCronJobCluster:
    cluster = FakeCronJobCluster()
    cluster.cronjobs["hello"] = cronjob()
    cluster.jobs = {
        "hello-29421178": job("hello-29421178", "2026-12-05T08:58:00Z", done=True),
        "hello-29421179": job("hello-29421179", "2026-12-05T08:59:00Z", done=True),
        "hello-29421180": job("hello-29421180", "2026-12-05T09:00:00Z", done=False),  # status not updated yet
        "other": job("other", "2026-12-05T09:00:00Z", done=False, owner="someone-else"),
    }
    return cluster


class Clock:
    """The injected clock; ``sleep`` moves it (the hand-over waits for the settle time)."""

    def __init__(self) -> None:
        self.now = NOW
        self.slept: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += timedelta(seconds=seconds)


def hand_over(fake: FakeCronJobCluster, clock: Clock) -> handover.HandOverResult:
    body = fake.cronjobs["hello"]
    return handover.hand_over(fake, copy.deepcopy(body), cronjobs.convert(body), now=clock, sleep=clock.sleep)  # type: ignore[arg-type]


def test_the_hand_over_suspends_waits_labels_and_creates(fake: FakeCronJobCluster) -> None:
    clock = Clock()
    result = hand_over(fake, clock)
    suspended = fake.cronjobs["hello"]
    assert suspended["spec"]["suspend"] is True
    assert json.loads(suspended["metadata"]["annotations"][handover.HANDED_OVER_TO]) == {
        "scheduledJob": "hello",
        "wasSuspended": False,
        "suspendedAt": "2026-12-05T09:00:30Z",
    }
    assert clock.slept == [handover.SETTLE.total_seconds()]
    assert result.last_run == datetime(2026, 12, 5, 9, 0, tzinfo=UTC)  # the newest Job beats lastScheduleTime
    assert result.adopted == ["hello-29421180"]
    assert fake.jobs["hello-29421180"]["metadata"]["labels"] == {names.SCHEDULED_JOB_LABEL: "hello"}
    assert "labels" not in fake.jobs["other"]["metadata"]
    created = fake.scheduled_jobs["hello"]
    record = handovers.handed_over(created["metadata"]["annotations"])
    assert record == handovers.HandOver(cron_job_uid=UID, after=datetime(2026, 12, 5, 9, 0, tzinfo=UTC))
    assert "suspend" not in created["spec"] and created["spec"]["concurrencyPolicy"] == "Forbid"
    verbs = [call[0] for call in fake.calls]
    assert verbs.index("patch") < verbs.index("label") < verbs.index("create")  # never both live


def test_a_conflict_reads_the_cronjob_again_and_suspends_the_new_version(fake: FakeCronJobCluster) -> None:
    writes = []

    def controller_writes_status(cluster: FakeCronJobCluster) -> None:
        if not writes:
            writes.append(1)
            cluster.bump(cluster.cronjobs["hello"])

    fake.interfere = controller_writes_status
    hand_over(fake, Clock())
    patches = [json.loads(c[c.index("-p") + 1]) for c in fake.calls if c[0] == "patch"]
    assert [p["metadata"]["resourceVersion"] for p in patches] == ["7", "101"]
    assert fake.cronjobs["hello"]["spec"]["suspend"] is True


def test_a_cronjob_that_keeps_changing_stops_the_hand_over_with_nothing_created(fake: FakeCronJobCluster) -> None:
    fake.interfere = lambda cluster: cluster.bump(cluster.cronjobs["hello"])
    with pytest.raises(PluginError, match="changed 5 times while it was being suspended"):
        hand_over(fake, Clock())
    assert fake.scheduled_jobs == {}


@pytest.mark.parametrize("stopped_at", ["label", "create"])
def test_a_hand_over_stopped_half_way_is_completed_by_running_it_again(
    fake: FakeCronJobCluster, stopped_at: str
) -> None:
    fake.fail_on = stopped_at
    with pytest.raises(PluginError):
        hand_over(fake, Clock())
    assert fake.cronjobs["hello"]["spec"]["suspend"] is True and fake.scheduled_jobs == {}  # never both live
    fake.fail_on = None
    fake.calls.clear()
    soon = Clock()
    soon.now = NOW + timedelta(seconds=2)  # re-run 2 s after the suspension: the rest of the settle time first
    result = hand_over(fake, soon)
    assert result.suspended == "already suspended by an earlier hand-over"
    assert soon.slept == [3.0]
    assert not [c for c in fake.calls if c[0] == "patch"]
    assert result.created and "hello" in fake.scheduled_jobs
    later = Clock()
    later.now = NOW + timedelta(minutes=1)
    again = hand_over(fake, later)
    assert later.slept == []
    assert not again.created and "already handed over" in again.describe()


def test_a_cronjob_resumed_after_an_earlier_hand_over_is_suspended_again(fake: FakeCronJobCluster) -> None:
    hand_over(fake, Clock())
    fake.cronjobs["hello"]["spec"]["suspend"] = False  # someone resumed it
    result = hand_over(fake, Clock())
    assert fake.cronjobs["hello"]["spec"]["suspend"] is True and result.suspended == "suspended"
    assert "suspend" not in fake.scheduled_jobs["hello"]["spec"]  # its own setting: it was not suspended before


def test_a_cronjob_suspended_by_its_owner_becomes_a_suspended_scheduled_job(fake: FakeCronJobCluster) -> None:
    fake.cronjobs["hello"]["spec"]["suspend"] = True
    hand_over(fake, Clock())
    assert fake.scheduled_jobs["hello"]["spec"]["suspend"] is True
    mark = json.loads(fake.cronjobs["hello"]["metadata"]["annotations"][handover.HANDED_OVER_TO])
    assert mark["wasSuspended"] is True


def test_a_scheduled_job_of_that_name_from_elsewhere_stops_the_hand_over_before_any_write(
    fake: FakeCronJobCluster,
) -> None:
    fake.scheduled_jobs["hello"] = {"metadata": {"name": "hello", "annotations": {}}, "spec": {}}
    with pytest.raises(PluginError, match="already exists and was not handed over from this CronJob"):
        hand_over(fake, Clock())
    assert "suspend" not in fake.cronjobs["hello"]["spec"]


def test_a_cronjob_that_never_ran_starts_at_its_creation() -> None:
    body = cronjob()
    body["status"] = {}
    assert handover.last_run(body, []) == datetime(2026, 12, 1, tzinfo=UTC)


def test_import_hand_over_prints_what_it_did(
    run: Run, fake: FakeCronJobCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(handover.time, "sleep", lambda seconds: None)
    code, out, err = run(fake, "import", "cronjob/hello", "--hand-over")
    assert code == 0, err
    assert "cronjob.batch/hello suspended (namespace team-a); its last run: 2026-12-05T09:00:00Z" in out
    assert "counted as active: hello-29421180" in out
    assert "scheduledjob.sundial.dev/hello created" in out


@pytest.mark.parametrize(
    ("labels", "annotations", "tool"),
    [
        ({}, {"argocd.argoproj.io/tracking-id": "app:batch/CronJob:team-a/hello"}, "Argo CD"),
        ({"argocd.argoproj.io/instance": "app"}, {}, "Argo CD"),
        ({"kustomize.toolkit.fluxcd.io/name": "apps"}, {}, "Flux"),
        ({"app.kubernetes.io/managed-by": "Helm"}, {"meta.helm.sh/release-name": "r"}, "Helm"),
        ({"app.kubernetes.io/managed-by": "kustomize"}, {}, ""),
    ],
)
def test_a_cronjob_a_gitops_tool_tracks_is_named_in_a_warning(
    run: Run,
    fake: FakeCronJobCluster,
    monkeypatch: pytest.MonkeyPatch,
    labels: dict[str, str],
    annotations: dict[str, str],
    tool: str,
) -> None:
    # Its next sync could write suspend: false back (Argo CD's self-heal): the user must change the source too.
    fake.cronjobs["hello"]["metadata"].update(labels=labels, annotations=annotations)
    monkeypatch.setattr(handover.time, "sleep", lambda seconds: None)
    code, out, err = run(fake, "import", "cronjob/hello", "--hand-over")
    assert code == 0, err
    assert "scheduledjob.sundial.dev/hello created" in out
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    if tool:
        assert warned == [
            f"warning: {tool} manages cronjob.batch/hello (namespace team-a): set suspend: true in its source too, "
            "or its next sync can write suspend: false back, and then both run"
        ]
    else:
        assert warned == []
