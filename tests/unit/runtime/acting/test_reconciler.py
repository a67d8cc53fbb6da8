"""One pass: claim (status CAS) before acting, re-read on 409, re-plan after an invalid template, and
never a write without the shard's lease."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from sundial import model
from sundial.kube import errors, ratelimits, requests, results
from sundial.model import names
from sundial.model.status import ScheduledJobStatus
from sundial.planner import actions
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.plans import Context, Plan
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.coordination import electors
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import FencedKind, Metrics, PassOutcome
from sundial.runtime.watch.store import Store

NOW = datetime(2026, 3, 1, 2, 30, 5, tzinfo=UTC)
KEY = ("team-a", "nightly")


class Elector:
    def __init__(self, holding: bool = True, transitions: int = 3) -> None:
        self.holding = holding
        self.transitions = transitions
        self.record = None

    def stop(self) -> None:
        self.holding = False


def one_shard(elector: Any) -> Leadership:
    """A one-shard Leadership made as ``sundial run`` makes it (never run here: its member Lease is unused)."""
    sharding = Sharding(
        api=cast(Any, None), member=cast(electors.LeaseElector, Elector(holding=False)), prefix="s", retry_period=1.0
    )
    return Leadership([cast(electors.LeaseElector, elector)], sharding=sharding)


def body(rv: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": "nightly", "namespace": "team-a", "uid": "sj-uid", "resourceVersion": rv},
            "spec": {}, "status": {}}  # fmt: skip


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.delete_results: list[results.DeleteResult] = []
        self.write_results: list[results.WriteResult] = []
        self.create_results: list[results.CreateResult] = []
        self.create_errors: list[Exception] = []
        self.statuses: list[Mapping[str, Any]] = []
        self.encoded: list[bytes | None] = []
        """What each create was sent as, if encoded ahead (``encoded``)."""
        self.fresh = body("2")

    async def get_scheduled_job(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        self.calls.append("get")
        return self.fresh

    async def write_status(
        self, *, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> results.WriteResult:
        self.calls.append(f"write@{resource_version}")
        self.statuses.append(status)
        if self.write_results:
            return self.write_results.pop(0)
        return results.Written(body=body(str(int(resource_version) + 10)))

    async def delete_scheduled_job(
        self, *, namespace: str, name: str, uid: str, resource_version: str = ""
    ) -> results.DeleteResult:
        self.calls.append(f"delete-sj@{resource_version}" if resource_version else "delete-sj")
        return results.Done()

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        self.calls.append(f"create:{manifest['metadata']['name']}")
        self.encoded.append(encoded)
        if self.create_errors:
            raise self.create_errors.pop(0)
        if self.create_results:
            return self.create_results.pop(0)
        return results.Created(body={"metadata": {**manifest["metadata"], "namespace": namespace, "uid": "j"}})

    async def delete_job(
        self,
        *,
        namespace: str,
        name: str,
        uid: str,
        resource_version: str = "",
        label: str = "",
        shard: str = "",
        token: str = "",
    ) -> results.DeleteResult:
        self.calls.append(f"delete:{name}@{uid}~{resource_version} label:{label}->{shard}/{token}")
        return self.delete_results.pop(0) if self.delete_results else results.Done()


class FakeEvents:
    """The EventRecorder: records go into the API's call log, to check their order with the writes."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api

    def record(
        self, involved: model.ObjectMeta, type_: str, reason: str, message: str, *, guard: Any = None, token: str = ""
    ) -> None:
        assert guard is not None  # every Event is fenced like the other writes
        assert token == "0-3"  # and carries the writer's fencing token (checked by the fencing policy)
        self.api.calls.append(f"event:{reason}")


class FakePlanner:
    def __init__(self, plans: list[Plan]) -> None:
        self.plans = plans
        self.seen: list[tuple[str, list[ObservedJob], Context]] = []

    def __call__(self, obj: model.ScheduledJob, jobs: Sequence[ObservedJob], context: Context) -> Plan:
        self.seen.append((obj.metadata.resource_version, list(jobs), context))
        return self.plans.pop(0) if len(self.plans) > 1 else self.plans[0]


CREATE = actions.CreateJob(
    manifest={"metadata": {"name": "nightly-1-1", "labels": {names.SCHEDULED_JOB_LABEL: "nightly"}}},
    scheduled_time=datetime(2026, 3, 1, 2, 30, tzinfo=UTC),
    attempt=1,
)
EVENT = actions.EmitEvent(type=actions.EventType.NORMAL, reason=actions.EventReason.SUCCESSFUL_CREATE, message="m")
WAKE = datetime(2026, 3, 1, 2, 31, tzinfo=UTC)


def plan(*acts: actions.Action, write: bool = True) -> Plan:
    return Plan(status=ScheduledJobStatus(), write_status=write, actions=acts, wake_at=WAKE)


def reconciler(api: FakeApi, planner: FakePlanner, elector: Elector | None = None) -> tuple[Reconciler, Store]:
    store = Store()
    store.put_scheduled_job(body())

    async def no_sleep(_: float) -> None:
        return None

    lead = one_shard(elector or Elector())
    return Reconciler(store=store, api=api, leadership=lead, planner=planner, events=FakeEvents(api),
                      metrics=Metrics(), clock=lambda: NOW, sleep=no_sleep), store  # fmt: skip


async def test_claims_in_status_before_creating_and_then_acts_in_order() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE, EVENT)])
    rec, store = reconciler(api, planner)
    assert await rec.reconcile(KEY) == WAKE
    assert api.calls == ["write@1", "create:nightly-1-1", "event:SuccessfulCreate"]
    assert planner.seen[0][2] == Context(now=NOW, fencing_token="0-3")
    assert [job.name for job in store.observed_jobs(KEY)] == ["nightly-1-1"]
    assert store.scheduled_job(KEY)["metadata"]["resourceVersion"] == "11"  # type: ignore[index]


async def test_every_status_write_carries_the_writers_fencing_token() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE)])
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    [status] = api.statuses
    assert status["fencingToken"] == "0-3"


async def test_a_write_the_fencing_policy_refuses_gives_the_shard_up_without_a_dead_letter() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE, EVENT)])
    api.create_errors = [errors.FencedError(code=403, reason="Forbidden", message="sundial.dev/fenced: stale")]
    elector = Elector()
    rec, store = reconciler(api, planner, elector)
    with pytest.raises(NotActingError):
        await rec.reconcile(KEY)
    assert api.calls == ["write@1", "create:nightly-1-1"]  # no Event, no re-plan, no synthetic failed Job
    assert len(planner.seen) == 1
    assert store.observed_jobs(KEY) == []
    assert not elector.holding  # coordination stopped acting on the shard until it holds the Lease again
    fenced = rec._metrics.fencing.fenced_writes.labels(kind=FencedKind.JOB_CREATE)._value.get()
    assert fenced == 1


async def test_a_conflict_rereads_from_the_api_and_plans_again() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE)])
    api.write_results = [results.Conflict()]
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    assert api.calls == ["write@1", "get", "write@2", "create:nightly-1-1"]
    assert [seen[0] for seen in planner.seen] == ["1", "2"]


async def test_an_invalid_template_becomes_a_failed_attempt_and_is_replanned() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE, EVENT), plan()])
    api.create_results = [results.Invalid(message="spec.template.spec.restartPolicy: Unsupported value")]
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    assert "event:SuccessfulCreate" not in api.calls
    [(_, jobs, _)] = planner.seen[1:]
    [failed] = jobs
    assert failed.phase is JobPhase.FAILED
    assert failed.failure_reason == "InvalidJobTemplate"
    assert "restartPolicy" in failed.failure_message


async def test_an_unexpected_job_is_left_alone_and_ends_the_attempt_as_unexpected_job() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE), plan()])
    api.create_results = [results.Unexpected(owner_uid="someone-else")]
    rec, store = reconciler(api, planner)
    await rec.reconcile(KEY)
    # never deleted, never re-issued; the re-plan records the failed attempt
    assert api.calls == ["write@1", "create:nightly-1-1", "event:UnexpectedJob", "write@11"]
    assert store.observed_jobs(KEY) == []
    [(_, jobs, _)] = planner.seen[1:]  # planned again at once with a failed attempt under the squatted name
    [failed] = jobs
    assert (failed.name, failed.phase, failed.failure_reason) == ("nightly-1-1", JobPhase.FAILED, "UnexpectedJob")
    assert failed.uid == ""  # so that history never deletes the squatter
    assert rec._metrics.fencing.unexpected_jobs._value.get() == 1


async def test_a_delete_without_a_uid_is_never_sent() -> None:
    api, planner = (
        FakeApi(),
        FakePlanner([plan(actions.DeleteJob(name="j", uid="", reason=actions.DeleteReason.REPLACED))]),
    )
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    assert api.calls == ["write@1"]


async def test_without_the_lease_nothing_is_written() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE)])
    rec, _ = reconciler(api, planner, Elector(holding=False))
    assert await rec.reconcile(KEY) is None
    assert api.calls == []
    assert planner.seen == []


async def test_no_status_change_means_no_write() -> None:
    api, planner = FakeApi(), FakePlanner([plan(write=False)])
    rec, _ = reconciler(api, planner)
    assert await rec.reconcile(KEY) == WAKE
    assert api.calls == []


async def test_delete_job_carries_the_uid_precondition_and_reports_successful_delete() -> None:
    api, planner = FakeApi(), FakePlanner([plan(actions.DeleteJob(name="old", uid="u-old", reason="history"))])
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    assert api.calls[:2] == ["write@1", "delete:old@u-old~ label:->0/0-3"]  # never seen: no label, no version
    assert api.calls[2].endswith("SuccessfulDelete")


def _old_job(store: Store, label: str | None) -> None:
    labels = {names.SCHEDULED_JOB_LABEL: "nightly"} | ({names.SHARD_LABEL: label} if label is not None else {})
    meta = {"name": "old", "namespace": "team-a", "uid": "u-old", "resourceVersion": "77", "labels": labels}
    store.put_job({"metadata": meta})


@pytest.mark.parametrize("label", ["0", "7", None])
async def test_a_delete_names_the_owners_shard_and_token_and_the_job_as_seen(label: str | None) -> None:
    """The fencing policy checks a Job delete against the Lease its sundial.dev/shard label names: the delete
    gets the label and version observed, the owner's current shard and its token (a label a --shards change
    left behind, or none, is set to that shard first: tests/unit/kube/test_jobdeletes.py)."""
    api, planner = FakeApi(), FakePlanner([plan(actions.DeleteJob(name="old", uid="u-old", reason="history"))])
    rec, store = reconciler(api, planner)
    _old_job(store, label)
    await rec.reconcile(KEY)
    assert api.calls[1] == f"delete:old@u-old~77 label:{label or ''}->0/0-3"


async def test_a_job_that_changed_since_it_was_seen_is_not_reported_deleted() -> None:
    """A 409 (the Job kept changing after it was observed or relabelled): no SuccessfulDelete, no fencing; the
    Job's watch event brings the next pass, which decides again."""
    api, planner = FakeApi(), FakePlanner([plan(actions.DeleteJob(name="old", uid="u-old", reason="history"))])
    api.delete_results = [results.Conflict()]
    rec, store = reconciler(api, planner)
    _old_job(store, "0")
    assert await rec.reconcile(KEY) == WAKE
    assert api.calls == ["write@1", "delete:old@u-old~77 label:0->0/0-3"]


@pytest.mark.parametrize(("write", "version"), [(True, "11"), (False, "1")])
async def test_the_ttl_delete_carries_the_resource_version_of_the_pass(write: bool, version: str) -> None:
    """ttlSecondsAfterFinished deletes only the object as this pass wrote (or read) it: a user's change since
    (a longer TTL, a new schedule) makes the delete a 409 instead."""
    ttl = actions.DeleteScheduledJob(reason="ttl")
    api, planner = FakeApi(), FakePlanner([plan(ttl, write=write)])
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    assert api.calls[-1] == f"delete-sj@{version}"


class CrashedError(Exception):
    pass


async def test_test_only_crash_hook_exits_after_the_nth_claim_before_its_create() -> None:
    api = FakeApi()
    planner = FakePlanner([plan(EVENT), plan(CREATE), plan(CREATE)])
    codes: list[int] = []

    def hard_exit(code: int) -> None:
        codes.append(code)
        raise CrashedError

    store = Store()
    store.put_scheduled_job(body())

    async def no_sleep(_: float) -> None:
        return None

    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()),
                     planner=planner, events=FakeEvents(api), metrics=Metrics(), clock=lambda: NOW, sleep=no_sleep,
                     crash_after_claim=2, hard_exit=hard_exit)  # fmt: skip
    await rec.reconcile(KEY)  # a claim without a create does not count
    await rec.reconcile(KEY)  # claim 1: created
    assert codes == []
    with pytest.raises(CrashedError):
        await rec.reconcile(KEY)  # claim 2: exits after the status write, before the create
    assert codes == [137]
    assert api.calls[-1].startswith("write@")
    assert sum(call.startswith("create:") for call in api.calls) == 1


async def test_crash_hook_is_off_by_default() -> None:
    api, planner = FakeApi(), FakePlanner([plan(CREATE)])
    rec, _ = reconciler(api, planner)
    for _ in range(3):
        await rec.reconcile(KEY)
    assert sum(call.startswith("create:") for call in api.calls) == 3


class PausingBucket:
    """A rate limiter whose wait is where the process gets paused: the Lease is lost meanwhile."""

    def __init__(self, elector: Elector) -> None:
        self.elector = elector

    async def acquire(self) -> None:
        self.elector.holding = False  # SIGSTOP here; on SIGCONT the renew deadline has long passed


class ZombieApi(FakeApi):
    """Creates go through a real Requester, like kube.objects.ObjectsApi's calls."""

    def __init__(self, requester: requests.Requester) -> None:
        super().__init__()
        self.requester = requester
        self.sent: list[str] = []

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        async def send() -> results.CreateResult:
            self.sent.append(manifest["metadata"]["name"])
            return results.Created(body={"metadata": {**manifest["metadata"], "namespace": namespace, "uid": "j"}})

        return await self.requester.call(verb="create", resource="jobs", ok=201, request=send)


async def test_a_write_that_waited_in_the_rate_limiter_is_not_sent_once_the_lease_was_lost() -> None:
    """Regression (chaos harness, SIGSTOP): the Lease check made before the rate limiter's wait is stale
    after a pause; the request is checked again right before it is sent, and nothing is sent."""
    elector = Elector()
    api = ZombieApi(requests.Requester(bucket=cast(ratelimits.TokenBucket, PausingBucket(elector))))
    rec, _ = reconciler(api, FakePlanner([plan(CREATE)]), elector)
    with pytest.raises(NotActingError):
        await rec.reconcile(KEY)
    assert api.sent == []
    assert requests.SEND_GUARD.get() is None  # reset after the pass


async def test_the_send_guard_is_only_set_around_the_reconcilers_requests() -> None:
    elector = Elector()
    seen: list[object] = []

    class Recording(FakeApi):
        async def create_job(
            self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
        ) -> results.CreateResult:
            seen.append(requests.SEND_GUARD.get())
            return await super().create_job(namespace=namespace, manifest=manifest, owner_uid=owner_uid)

    rec, _ = reconciler(Recording(), FakePlanner([plan(CREATE)]), elector)
    await rec.reconcile(KEY)
    assert seen and seen[0] is not None
    assert requests.SEND_GUARD.get() is None


class LosingApi(FakeApi):
    """The Lease is lost while the Job create is in flight."""

    def __init__(self, elector: Elector) -> None:
        super().__init__()
        self.elector = elector

    async def create_job(
        self, *, namespace: str, manifest: Mapping[str, Any], owner_uid: str, encoded: bytes | None = None
    ) -> results.CreateResult:
        self.elector.holding = False
        return await super().create_job(namespace=namespace, manifest=manifest, owner_uid=owner_uid)


async def test_events_are_recorded_only_while_acting_for_the_shard() -> None:
    elector = Elector()
    api = LosingApi(elector)
    rec, _ = reconciler(api, FakePlanner([plan(CREATE, EVENT)]), elector)
    await rec.reconcile(KEY)
    assert api.calls == ["write@1", "create:nightly-1-1"]  # no SuccessfulCreate from a replica that lost it


async def test_outcome_counters_follow_the_status_counters_the_claim_recorded() -> None:
    from sundial.model.status import Counters  # noqa: PLC0415

    counted = ScheduledJobStatus(counters=Counters(runs=4, succeeded=2, failed=3, retried=1, missed=1))
    api, planner = FakeApi(), FakePlanner([Plan(status=counted, write_status=True, actions=(), wake_at=WAKE)])
    rec, _ = reconciler(api, planner)
    await rec.reconcile(KEY)
    metrics = rec._metrics

    def value(name: str) -> float | None:
        return metrics.registry.get_sample_value(name)

    assert value("sundial_runs_succeeded_total") == 2
    assert value("sundial_attempts_failed_total") == 3
    assert value("sundial_attempts_retried_total") == 1
    assert value("sundial_runs_missed_total") == 1


def passes(rec: Reconciler) -> dict[str, float]:
    """``sundial_reconciles_total`` by outcome, zeros left out."""
    registry = rec._metrics.registry
    counted = {
        o.value: registry.get_sample_value("sundial_reconciles_total", {"outcome": o.value}) for o in PassOutcome
    }
    return {outcome: value for outcome, value in counted.items() if value}


INVALID = results.Invalid(message="spec.template.spec.restartPolicy: Unsupported value")


@pytest.mark.parametrize(
    ("plans", "writes", "creates", "holding", "expected"),
    [
        pytest.param([plan(CREATE)], [], [], True, PassOutcome.CLAIMED, id="claimed"),
        pytest.param(
            [plan(CREATE), plan(write=False)], [], [INVALID], True, PassOutcome.CLAIMED, id="claimed-replanned"
        ),
        pytest.param([plan(write=False)], [], [], True, PassOutcome.UNCHANGED, id="unchanged"),
        pytest.param([plan(CREATE)], [results.Conflict()] * 5, [], True, PassOutcome.CONTENDED, id="contended"),
        pytest.param([plan(CREATE)], [results.Gone()], [], True, PassOutcome.GONE, id="gone-on-write"),
        pytest.param([plan(CREATE)], [], [], False, PassOutcome.NOT_ACTING, id="not-acting"),
    ],
)
async def test_each_pass_counts_once_by_how_it_ended(
    plans: list[Plan],
    writes: list[results.WriteResult],
    creates: list[results.CreateResult],
    holding: bool,
    expected: PassOutcome,
) -> None:
    api = FakeApi()
    api.write_results, api.create_results = list(writes), list(creates)
    rec, _ = reconciler(api, FakePlanner(plans), Elector(holding=holding))
    await rec.reconcile(KEY)
    assert passes(rec) == {expected.value: 1}


async def test_a_pass_for_an_object_no_longer_cached_counts_as_gone() -> None:
    rec, _ = reconciler(FakeApi(), FakePlanner([plan(CREATE)]))
    await rec.reconcile(("team-a", "deleted"))
    await rec.reconcile(KEY)
    assert passes(rec) == {"gone": 1, "claimed": 1}


async def test_a_pass_that_raises_counts_as_failed() -> None:
    elector = Elector()
    cleanup = actions.DeleteJob(name="old", uid="u-old", reason="history")
    rec, _ = reconciler(LosingApi(elector), FakePlanner([plan(CREATE, cleanup)]), elector)
    with pytest.raises(NotActingError):
        await rec.reconcile(KEY)
    assert passes(rec) == {"failed": 1}


def test_every_outcome_is_exported_before_its_first_pass() -> None:
    registry = Metrics().registry
    for outcome in PassOutcome:
        assert registry.get_sample_value("sundial_reconciles_total", {"outcome": outcome.value}) == 0
