"""What a first run of a new ScheduledJob costs in API writes (issue 31, criterion 5; DESIGN §7.5), counted through
the reconciler's fake API with the real planner: the object's first status (which reserves the run), the Job POST
at the instant, and ONE status write that records the start with the completion - the start's write is held while
the Job runs (at most ``HOLD_START`` after its instant), so a Job that ends within that costs no write of its own.
A regression (a separate write for the start, a claim before the create) fails these counts."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from sundial import model
from sundial.kube import results
from sundial.planner import manifests
from sundial.planner.planning import plan
from sundial.planner.plans import HOLD_START
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.watch.store import Store

from .test_reconciler import KEY, Elector, FakeApi, FakeEvents, one_shard

NOMINAL = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
CREATED = NOMINAL - timedelta(seconds=25)  # the cost scenario's shape: a new object due ~25 s after its creation
TEMPLATE = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}
JOB = manifests.job_name(scheduled_job=KEY[1], scheduled_time=NOMINAL, attempt=1)


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_object(*, rv: str = "1", generation: int = 1, suspend: bool = False) -> dict[str, Any]:
    meta = {"name": KEY[1], "namespace": KEY[0], "uid": "sj-uid", "resourceVersion": rv, "generation": generation}
    spec = {"schedule": "0 10 5 12 *", "jobTemplate": TEMPLATE, "suspend": suspend}  # the herd's fixed-date shape
    return {"metadata": {**meta, "creationTimestamp": stamp(CREATED)}, "spec": spec, "status": {}}


class EchoApi(FakeApi):
    """The fake API, whose status writes come back as the object with that status (as the API server answers)."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.current = new_object()

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult:
        await super().write_status(namespace=namespace, name=name, resource_version=resource_version, status=status)
        meta = {**self.current["metadata"], "resourceVersion": str(int(resource_version) + 1)}
        self.current = {**self.current, "metadata": meta, "status": dict(status)}
        return results.Written(body=self.current)

    def edit(self, **changes: Any) -> None:
        """A user's edit of the object (a new resourceVersion; generation and spec as given)."""
        rv = str(int(self.current["metadata"]["resourceVersion"]) + 1)
        edited = new_object(rv=rv, **changes)
        self.current = {**edited, "status": self.current["status"]}
        self.store.put_scheduled_job(self.current)

    @property
    def writes(self) -> list[str]:
        """Status writes and Job creates: the API writes of the operator, Events apart."""
        return [call for call in self.calls if not call.startswith("event:")]


def finished_job(at: datetime) -> dict[str, Any]:
    labels = {model.names.SCHEDULED_JOB_LABEL: KEY[1]}
    annotations = {model.names.SCHEDULED_TIME_ANNOTATION: stamp(NOMINAL), model.names.ATTEMPT_ANNOTATION: "1"}
    meta = {"name": JOB, "namespace": KEY[0], "uid": "j", "resourceVersion": "99", "labels": labels,
            "annotations": annotations, "creationTimestamp": stamp(NOMINAL)}  # fmt: skip
    return {"metadata": meta, "status": {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": stamp(at)}]}}  # fmt: skip


def setup() -> tuple[Reconciler, EchoApi, Store, list[datetime]]:
    store = Store()
    api = EchoApi(store)
    store.put_scheduled_job(api.current)
    now = [CREATED + timedelta(seconds=1)]
    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()), planner=plan, events=FakeEvents(api),
                     metrics=Metrics(), clock=lambda: now[0])  # fmt: skip
    return rec, api, store, now


async def first_status_and_instant(rec: Reconciler, api: EchoApi, now: list[datetime]) -> None:
    await rec.reconcile(KEY)  # the object is new: its first status reserves its first run
    assert api.writes == ["write@1"]
    reservation = model.parse_status(api.statuses[-1]).reservation
    assert reservation is not None and reservation.job == JOB, "the first status write is the run's claim"
    now[0] = NOMINAL + timedelta(milliseconds=300)
    await rec.reconcile(KEY)  # the instant: only the Job POST
    assert api.writes == ["write@1", f"create:{JOB}"]
    assert rec.owes_write(KEY)
    assert rec.held_until(KEY) == NOMINAL + HOLD_START, "the start's write waits for the Job's end"


async def test_a_first_run_costs_its_first_status_the_job_post_and_one_write_for_start_and_completion() -> None:
    rec, api, store, now = setup()
    await first_status_and_instant(rec, api, now)

    for seconds in (1, 4, 8):  # the Job's own events while it runs (created, pod started, ready): nothing written
        now[0] = NOMINAL + timedelta(seconds=seconds)
        await rec.reconcile(KEY)
        assert api.writes == ["write@1", f"create:{JOB}"]
        assert rec.held_until(KEY) == NOMINAL + HOLD_START

    store.put_job(finished_job(NOMINAL + timedelta(seconds=9)))  # the Job ends 9 s after the instant
    now[0] = NOMINAL + timedelta(seconds=9, milliseconds=500)
    await rec.reconcile(KEY)
    assert api.writes == ["write@1", f"create:{JOB}", "write@2"], "3 API writes in all for the first run"
    written = model.parse_status(api.statuses[-1])
    assert written.active == () and written.counters.runs == 1 and written.counters.succeeded == 1
    assert [(run.job, run.result) for run in written.recent_runs] == [(JOB, model.enums.RunResult.SUCCEEDED)]
    assert written.last_schedule_time == NOMINAL
    assert not rec.owes_write(KEY)

    await rec.reconcile(KEY)  # nothing left to write
    assert len(api.writes) == 3
    events = [call for call in api.calls if call.startswith("event:")]
    assert events == ["event:SuccessfulCreate", "event:SawCompletedJob"], "Events are sent apart, in series"


async def test_a_job_still_running_at_the_holds_end_gets_its_start_written() -> None:
    rec, api, _, now = setup()
    await first_status_and_instant(rec, api, now)
    now[0] = NOMINAL + HOLD_START + timedelta(seconds=1)
    await rec.reconcile(KEY)
    assert api.writes[-1] == "write@2", "status.active lags a running Job by at most HOLD_START"
    written = model.parse_status(api.statuses[-1])
    assert [(run.job, run.attempt) for run in written.active] == [(JOB, 1)]
    assert written.counters.runs == 1
    assert not rec.owes_write(KEY)


async def test_any_other_change_during_the_hold_is_written_at_once_with_the_start() -> None:
    rec, api, _, now = setup()
    await first_status_and_instant(rec, api, now)
    api.edit(generation=2, suspend=True)
    now[0] = NOMINAL + timedelta(seconds=5)
    await rec.reconcile(KEY)
    assert api.writes[-1].startswith("write@"), "a suspend is recorded at once"
    written = model.parse_status(api.statuses[-1])
    assert [run.job for run in written.active] == [JOB], "with the run's start"
    assert written.counters.runs == 1
    assert not rec.owes_write(KEY)


async def test_without_a_hold_the_start_is_written_in_the_lane_as_before() -> None:
    store = Store()
    api = EchoApi(store)
    store.put_scheduled_job(api.current)
    now = [CREATED + timedelta(seconds=1)]
    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()), planner=lambda o, j, c: plan(
        o, j, type(c)(**{**c.__dict__, "hold_start": timedelta(0)})), events=FakeEvents(api),
        metrics=Metrics(), clock=lambda: now[0])  # fmt: skip
    await rec.reconcile(KEY)
    now[0] = NOMINAL + timedelta(milliseconds=300)
    await rec.reconcile(KEY)
    assert rec.owes_write(KEY) and rec.held_until(KEY) is None
    now[0] += timedelta(seconds=1)
    await rec.reconcile(KEY)
    assert api.writes == ["write@1", f"create:{JOB}", "write@2"]
