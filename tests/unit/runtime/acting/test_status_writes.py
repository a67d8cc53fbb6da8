"""Status writes per run (issue 22: ≤ 2 per recurring run, ≤ 3 per first run, each run's Job POST first: prepared
runs), counted through the real
planner and reconciler over an API server that behaves like one for these calls: a status write is a
compare-and-set merge patch that bumps ``resourceVersion`` only when it changes something, and every change
reaches the store as the informer would deliver it (the echo of each write, and each Job status update the
Job controller makes: started, pod ready, complete), each followed by a pass."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sundial.kube import results
from sundial.model import names, resource
from sundial.planner.planning import plan
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.watch.store import Store

from .test_reconciler import Elector, one_shard

KEY = ("team-a", "nightly")
CREATED = datetime(2026, 3, 1, 2, 29, 30, 250000, tzinfo=UTC)
RUNS = 5  # beyond successfulJobsHistoryLimit (3): the history deletes are in the window too


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    def __init__(self) -> None:
        self.now = CREATED

    def __call__(self) -> datetime:
        return self.now


class ApiServer:
    """One ScheduledJob and its Jobs; ``log`` has every write in order (``status``, ``create``, ``delete``)."""

    def __init__(self, clock: Clock, schedule: str = "* * * * *") -> None:
        self.clock = clock
        self.version = 1
        self.obj: dict[str, Any] = {
            "apiVersion": names.API_VERSION,
            "kind": "ScheduledJob",
            "metadata": {"name": KEY[1], "namespace": KEY[0], "uid": "sj-uid", "resourceVersion": "1",
                         "generation": 1, "creationTimestamp": stamp(CREATED)},
            "spec": {"schedule": schedule, "timeZone": "Etc/UTC", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}}},
            "status": {},
        }  # fmt: skip
        self.jobs: dict[str, dict[str, Any]] = {}
        self.log: list[str] = []
        self.statuses: list[dict[str, Any]] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        """Watch events not delivered yet: ("sj" | "job" | "job-deleted", body)."""

    def _bump(self, meta: dict[str, Any]) -> None:
        self.version += 1
        meta["resourceVersion"] = str(self.version)

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.obj)

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult:
        self.log.append("status")
        if resource_version != self.obj["metadata"]["resourceVersion"]:
            return results.Conflict()
        new = dict(self.obj["status"])
        for field, value in resource.status_patch(status).items():
            if value is None:
                new.pop(field, None)
            else:
                new[field] = {**new.get(field, {}), **value} if field == "counters" else value
        if new != self.obj["status"]:  # a no-op patch changes nothing, not even the resourceVersion
            self.obj["status"] = new
            self._bump(self.obj["metadata"])
            self.events.append(("sj", copy.deepcopy(self.obj)))
        self.statuses.append(copy.deepcopy(new))
        return results.Written(body=copy.deepcopy(self.obj))

    async def delete_scheduled_job(
        self, *, namespace: str, name: str, uid: str, resource_version: str = ""
    ) -> results.DeleteResult:
        raise AssertionError("a recurring object is never deleted")

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        self.log.append("create")
        job = copy.deepcopy(dict(manifest))
        name = job["metadata"]["name"]
        owner = {"apiVersion": names.API_VERSION, "kind": "ScheduledJob", "name": KEY[1], "uid": owner_uid,
                 "controller": True}  # fmt: skip
        job["metadata"] |= {"namespace": namespace, "uid": f"uid-{name}", "creationTimestamp": stamp(self.clock()),
                            "ownerReferences": [owner]}  # fmt: skip
        job["status"] = {}
        self._bump(job["metadata"])
        self.jobs[name] = job
        self.events.append(("job", copy.deepcopy(job)))
        return results.Created(body=copy.deepcopy(job))

    async def delete_job(self, *, namespace: str, name: str, uid: str, **_: str) -> results.DeleteResult:
        self.log.append("delete")
        job = self.jobs.pop(name, None)
        if job is None:  # deleted by an earlier pass whose watch event has not been delivered yet
            return results.Done(existed=False)
        self.events.append(("job-deleted", job))
        return results.Done()

    def job_controller(self, name: str, status: dict[str, Any]) -> None:
        """The Job controller updates a Job's status."""
        job = self.jobs[name]
        job["status"] = status
        self._bump(job["metadata"])
        self.events.append(("job", copy.deepcopy(job)))


class Events:
    def record(self, *_: Any, **__: Any) -> None:
        return None


class Operator:
    """The reconciler and the informer's deliveries: every watch event is put in the store and then planned."""

    def __init__(self, schedule: str = "* * * * *") -> None:
        self.clock = Clock()
        self.api = ApiServer(self.clock, schedule)
        self.store = Store()
        self.store.put_scheduled_job(copy.deepcopy(self.api.obj))
        self.reconciler = Reconciler(
            store=self.store, api=self.api, leadership=one_shard(Elector()), planner=plan, events=Events(),
            metrics=Metrics(), clock=self.clock,
        )  # fmt: skip
        self.wake: datetime | None = None

    async def settle(self) -> None:
        """A pass, then one per watch event until none is left (bounded: a write loop fails the test)."""
        self.wake = await self.reconciler.reconcile(KEY)
        for _ in range(50):
            if not self.api.events:
                return
            kind, body = self.api.events.pop(0)
            if kind == "sj":
                self.store.put_scheduled_job(body)
            elif kind == "job":
                self.store.put_job(body)
            else:
                self.store.drop_job(body)
            self.wake = await self.reconciler.reconcile(KEY)
        raise AssertionError(f"still writing after 50 passes: {self.api.log[-10:]}")

    async def run_once(self) -> str:
        """Sleep until the next wake-up, run the due pass, and take the Job through to success."""
        assert self.wake is not None
        self.clock.now = max(self.clock.now, self.wake)
        await self.settle()
        [name] = [name for name, job in self.api.jobs.items() if not job["status"]]
        steps: list[dict[str, Any]] = [
            {"active": 1, "startTime": stamp(self.clock.now)},
            {"active": 1, "ready": 1, "startTime": stamp(self.clock.now)},
        ]
        done = self.clock.now + timedelta(seconds=2)
        complete = [{"type": kind, "status": "True", "lastTransitionTime": stamp(done)}
                    for kind in ("SuccessCriteriaMet", "Complete")]  # fmt: skip
        steps.append({"succeeded": 1, "startTime": stamp(self.clock.now), "completionTime": stamp(done),
                      "conditions": complete})  # fmt: skip
        for status in steps:
            self.clock.now += timedelta(milliseconds=700)
            self.api.job_controller(name, status)
            await self.settle()
        return name


async def test_a_recurring_run_writes_the_status_twice_and_a_first_run_three_times() -> None:
    operator = Operator()
    api = operator.api
    await operator.settle()  # the new object's first status (Ready, nextScheduleTime)
    per_run: list[list[str]] = []
    for _ in range(RUNS):
        before, written = len(api.log), len(api.statuses)
        job = await operator.run_once()
        per_run.append(api.log[before:])
        start, *_, completion = api.statuses[written:]
        assert [run["job"] for run in start["active"]] == [job]  # the deferred write records the start
        assert completion["active"] == []  # and the completion is recorded
        assert completion["recentRuns"][-1]["job"] == job
        assert completion["reservation"]["scheduledTime"] > completion["recentRuns"][-1]["scheduledTime"]
    writes = [calls.count("status") for calls in per_run]
    assert api.log[0] == "status" and writes[0] + 1 <= 3, per_run[0]  # the object's first status + its first run
    assert max(writes[1:]) <= 2, per_run
    # Prepared runs (DESIGN §7.5): each run was reserved by the write before it, so its instant is the Job POST
    # alone; this harness plans at every Job event, so the start and the completion are two writes here (the
    # dispatcher's lane coalesces them when the Job ends within its delay: tests/unit/runtime/dispatch).
    assert all(calls[0] == "create" for calls in per_run), per_run
    assert api.obj["status"]["counters"]["succeeded"] == RUNS
    assert "delete" in api.log  # the history limit was reached: its deletes wrote no status


async def test_a_pass_with_nothing_new_writes_nothing_even_under_another_token() -> None:
    """After a failover the new holder's token differs from the one in the status: that alone is no write."""
    operator = Operator()
    await operator.settle()
    await operator.run_once()
    writes = operator.api.log.count("status")
    operator.reconciler._lead = one_shard(Elector(transitions=4))
    operator.clock.now += timedelta(seconds=5)
    await operator.settle()
    assert operator.api.log.count("status") == writes


async def test_a_run_whose_job_ends_within_the_hold_writes_its_start_with_its_completion() -> None:
    """Hourly: a run's start is held while its Job runs (DESIGN §7.5) and written with its completion, so a first
    run costs 3 API writes in all (the object's first status, the Job POST, one status write) and a recurring
    run 2 (the Job POST, one status write) - issue 31, criterion 5 (Events apart: sent in series)."""
    operator = Operator(schedule="0 * * * *")
    api = operator.api
    await operator.settle()  # the new object's first status (Ready, nextScheduleTime, the first run's reservation)
    per_run: list[list[str]] = []
    for _ in range(RUNS):
        before, written = len(api.log), len(api.statuses)
        job = await operator.run_once()
        per_run.append(api.log[before:])
        [write] = api.statuses[written:]
        assert write["active"] == [] and write["recentRuns"][-1]["job"] == job, "start and completion in one write"
        assert write["reservation"]["scheduledTime"] > write["recentRuns"][-1]["scheduledTime"]
    assert api.log[0] == "status" and per_run[0] == ["create", "status"], per_run[0]
    assert len(api.log[:1] + per_run[0]) == 3, "a first run: 3 API writes in all"
    for calls in per_run[1:]:  # recurring: the Job POST, one status write (and the history's deletes)
        assert [call for call in calls if call != "delete"] == ["create", "status"], per_run
    assert api.obj["status"]["counters"]["succeeded"] == RUNS == api.obj["status"]["counters"]["runs"]
