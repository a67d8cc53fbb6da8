"""A hostile namespace's catch-up flood next to a victim's on-time runs (DESIGN §11.1, issue 21 item 3), with
the real fair queue and due index, the real reconciler and planner and the real namespace budgets.

Only the API is faked (it keeps the objects and the Jobs, stamped with the virtual clock), and the
dispatcher's loop is driven by hand with one pass at a time, each costing :data:`PASS_COST` of virtual
time, so nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sundial import model
from sundial.kube import results
from sundial.model import Trigger, names
from sundial.model.status import ScheduledJobStatus
from sundial.planner.planning import plan
from sundial.runtime.acting.budgets import Budgets, NamespaceBudgets
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.dispatch.dueindex import DueIndex
from sundial.runtime.dispatch.fairness import FairQueue
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.watch.store import Key, Store
from sundial.schedule import format_rfc3339

from .acting.test_reconciler import Elector, one_shard

START = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)
T0 = START + timedelta(milliseconds=500)
"""The first pass: 10:00 is due, and the hostile objects' catch-up since 09:30."""
PASS_COST = timedelta(milliseconds=5)
RATE, BURST = 5.0, 20
HOSTILE, QUIET = "hostile", "quiet"
OBJECTS = 20
BEHIND = 30
"""Minutes the hostile objects' cursors are behind: 29 catch-up runs each, and the 10:00 run. Of the catch-up
runs 09:59 is late by one period only and does not draw from the budget; 09:31 to 09:58 do."""
TEMPLATE = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}}}}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Created:
    namespace: str
    owner: str
    scheduled_time: datetime
    trigger: str
    at: datetime


@dataclass
class FakeApi:
    """Keeps the ScheduledJobs (status writes as compare-and-set) and records every Job create."""

    clock: Clock
    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    created: list[Created] = field(default_factory=list)

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get((namespace, name)))

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult:
        body = self.objects[(namespace, name)]
        if body["metadata"]["resourceVersion"] != resource_version:
            return results.Conflict()
        body["metadata"]["resourceVersion"] = str(int(resource_version) + 1)
        body["status"] = dict(status)
        return results.Written(body=copy.deepcopy(body))

    async def delete_scheduled_job(self, **_: Any) -> results.DeleteResult:
        raise AssertionError("nothing is deleted here")

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        meta = manifest["metadata"]
        stamped = meta["annotations"]
        self.created.append(
            Created(
                namespace=namespace,
                owner=meta["labels"][names.SCHEDULED_JOB_LABEL],
                scheduled_time=datetime.fromisoformat(stamped[names.SCHEDULED_TIME_ANNOTATION]),
                trigger=stamped[names.TRIGGER_ANNOTATION],
                at=self.clock.now,
            )
        )
        uid = f"job-{len(self.created)}"
        body = {"metadata": {**meta, "uid": uid, "creationTimestamp": format_rfc3339(self.clock.now)}, "status": {}}
        return results.Created(body=body)

    async def delete_job(self, **_: Any) -> results.DeleteResult:
        return results.Done()


class NoEvents:
    def record(self, involved: model.ObjectMeta, type_: str, reason: str, message: str, **_: Any) -> None:
        return None


def scheduled_job(namespace: str, name: str, *, schedule: str, cursor: datetime) -> dict[str, Any]:
    status = model.resource.dump_status(ScheduledJobStatus(schedule_cursor=cursor))
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}", "generation": 1,
                     "resourceVersion": "1", "creationTimestamp": "2026-06-01T09:00:00Z"},
        "spec": {"schedule": schedule, "catchUp": {"policy": "All", "maxRuns": 50}, "jobTemplate": TEMPLATE},
        "status": status,
    }  # fmt: skip


@dataclass
class World:
    clock: Clock
    api: FakeApi
    reconciler: Reconciler
    index: DueIndex[Key]
    queue: FairQueue
    store: Store
    passes: Counter[str] = field(default_factory=Counter)

    async def run_until(self, end: datetime) -> None:
        """The dispatcher's loop with one pass at a time: due keys join the fair queue before every pass."""
        while True:
            for due in self.index.pop_due(self.clock.now):
                self.queue.push(due, priority=self.store.priority(due))
            key = self.queue.pop()
            if key is None:
                upcoming = self.index.next_due()
                if upcoming is None or upcoming > end:
                    return
                self.clock.now = max(self.clock.now, upcoming)
                continue
            self.passes[key[0]] += 1
            wake = await self.reconciler.reconcile(key)
            self.clock.now += PASS_COST
            if wake is None:
                self.index.discard(key)
            else:
                self.index.set(key, wake)


def world(budgets: Budgets | None) -> World:
    clock = Clock()
    api = FakeApi(clock=clock)
    store = Store()
    behind = START - timedelta(minutes=BEHIND)
    bodies = [scheduled_job(HOSTILE, f"flood-{i:02d}", schedule="* * * * *", cursor=behind) for i in range(OBJECTS)]
    bodies.append(scheduled_job(QUIET, "on-time", schedule="*/5 * * * * *", cursor=START))
    index: DueIndex[Key] = DueIndex()
    for body in bodies:
        key = store.put_scheduled_job(body)
        api.objects[key] = copy.deepcopy(body)
        index.set(key, T0)
    reconciler = Reconciler(
        store=store, api=api, leadership=one_shard(Elector()), planner=plan, events=NoEvents(), metrics=Metrics(),
        clock=clock, budgets=budgets,
    )  # fmt: skip
    return World(clock=clock, api=api, reconciler=reconciler, index=index, queue=FairQueue(clock=clock), store=store)


def catch_up(api: FakeApi) -> list[Created]:
    return [c for c in api.created if c.namespace == HOSTILE and c.trigger == Trigger.CATCH_UP]


def backlog(api: FakeApi) -> list[Created]:
    """The hostile catch-up runs that draw from the budget (all but those late by one period)."""
    return [c for c in catch_up(api) if c.scheduled_time < START - timedelta(minutes=1)]


async def test_the_victims_runs_come_in_their_turn_while_the_hostile_catch_up_keeps_to_its_budget() -> None:
    sim = world(NamespaceBudgets(rate=RATE, burst=BURST))
    end = T0 + timedelta(seconds=180)
    await sim.run_until(end)

    # The hostile namespace's catch-up runs never outran burst + rate x elapsed, and took their time.
    flood = backlog(sim.api)
    for count, created in enumerate(flood, start=1):
        assert count <= BURST + RATE * (created.at - T0).total_seconds() + 1e-9, created
    assert flood[-1].at - T0 >= timedelta(seconds=(len(flood) - BURST) / RATE)

    # The victim's every run was created in its turn: at most a few passes after it came due.
    victim = [c for c in sim.api.created if c.namespace == QUIET]
    due = [START + timedelta(seconds=5 * i) for i in range(1, 37)]
    assert [c.scheduled_time for c in victim] == due
    assert all(c.at - c.scheduled_time <= 3 * PASS_COST for c in victim), max(c.at - c.scheduled_time for c in victim)
    # So were the hostile objects' own on-time runs: the budget never holds them back.
    on_time = [c for c in sim.api.created if c.namespace == HOSTILE and c.trigger == Trigger.SCHEDULE]
    assert len(on_time) == OBJECTS * 4  # 10:00 .. 10:03
    late = [c for c in on_time if c.scheduled_time > T0]
    assert late and all(c.at - c.scheduled_time <= (OBJECTS + 2) * PASS_COST for c in late)

    # Nothing lost, nothing twice, and no busy loop while the hostile objects waited for their tokens.
    hostile = Counter((c.owner, c.scheduled_time) for c in sim.api.created if c.namespace == HOSTILE)
    assert set(hostile.values()) == {1}
    start = START - timedelta(minutes=BEHIND - 1)
    minutes = [start + timedelta(minutes=m) for m in range(BEHIND + 3)]  # 09:31 .. 10:03
    assert set(hostile) == {(f"flood-{i:02d}", t) for i in range(OBJECTS) for t in minutes}
    assert len(flood) == OBJECTS * (BEHIND - 2) and len(catch_up(sim.api)) == OBJECTS * (BEHIND - 1)
    assert sim.passes[HOSTILE] <= 2 * len(hostile) + 4 * OBJECTS
    for key, body in sim.api.objects.items():
        assert not body["status"].get("buffered"), key


async def test_without_the_budget_the_same_flood_outruns_it_at_once() -> None:
    sim = world(None)
    await sim.run_until(T0 + timedelta(seconds=10))
    flood = backlog(sim.api)
    assert len(flood) == OBJECTS * (BEHIND - 2)  # all of them within seconds: the budget is what spreads them
    assert flood[-1].at - T0 < timedelta(seconds=(len(flood) - BURST) / RATE)
