"""A prepared run through the reconciler with the real planner (DESIGN §7.5): at its instant only the Job create
is sent, the key owes a status write, and the lane's pass writes the start with the next reservation. Without a
usable reservation the claim is written first, as ever; the crash hooks die at the two moments in between."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sundial import model
from sundial.kube import results
from sundial.planner import manifests
from sundial.planner.planning import plan
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.serving.metrics import Metrics, PassOutcome
from sundial.runtime.watch.store import Store

from .test_reconciler import KEY, Elector, FakeApi, FakeEvents, one_shard

NOMINAL = datetime(2026, 3, 1, 2, 31, tzinfo=UTC)
NEXT = NOMINAL + timedelta(minutes=1)
TOKEN = "0-3"
TEMPLATE = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}


def job_name(nominal: datetime) -> str:
    return manifests.job_name(scheduled_job=KEY[1], scheduled_time=nominal, attempt=1)


def reserved(nominal: datetime, token: str = TOKEN, generation: int = 1) -> dict[str, Any]:
    return {"scheduledTime": nominal.strftime("%Y-%m-%dT%H:%M:%SZ"), "job": job_name(nominal),
            "fencingToken": token, "generation": generation}  # fmt: skip


def body(*, reservation: dict[str, Any] | None, rv: str = "1") -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": 1, "scheduleCursor": "2026-03-01T02:30:00Z"}
    if reservation is not None:
        status["reservation"] = reservation
    meta = {"name": KEY[1], "namespace": KEY[0], "uid": "sj-uid", "resourceVersion": rv, "generation": 1}
    return {
        "metadata": {**meta, "creationTimestamp": "2026-03-01T00:00:00Z"},
        "spec": {"schedule": "* * * * *", "jobTemplate": TEMPLATE},
        "status": status,
    }


class CrashedError(Exception):
    pass


def reconciler(
    api: FakeApi, stored: dict[str, Any], now: list[datetime], **hooks: Any
) -> tuple[Reconciler, Store, list[int]]:
    store = Store()
    store.put_scheduled_job(stored)
    codes: list[int] = []

    def hard_exit(code: int) -> None:
        codes.append(code)
        raise CrashedError

    async def no_sleep(_: float) -> None:
        return None

    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()), planner=plan, events=FakeEvents(api),
                     metrics=Metrics(), clock=lambda: now[0], sleep=no_sleep, hard_exit=hard_exit, **hooks)  # fmt: skip
    return rec, store, codes


async def test_at_its_instant_only_the_job_is_sent_and_the_lane_writes_the_start_after() -> None:
    api = FakeApi()
    now = [NOMINAL + timedelta(seconds=1)]
    rec, store, _ = reconciler(api, body(reservation=reserved(NOMINAL)), now)
    api.write_results = [results.Written(body=body(reservation=reserved(NEXT), rv="11"))]

    await rec.reconcile(KEY)
    assert api.calls == [f"create:{job_name(NOMINAL)}", "event:SuccessfulCreate"], "no status write before the create"
    assert rec.owes_write(KEY)
    assert [j.name for j in store.observed_jobs(KEY)] == [job_name(NOMINAL)], "the created Job is known at once"

    now[0] += timedelta(seconds=1)
    await rec.reconcile(KEY)  # the lane's pass
    assert api.calls[2:] == ["write@1"]
    written = model.parse_status(api.statuses[-1])
    assert [(run.job, run.attempt) for run in written.active] == [(job_name(NOMINAL), 1)]
    assert written.counters.runs == 1
    assert written.reservation is not None and written.reservation.scheduled_time == NEXT
    assert not rec.owes_write(KEY)


@pytest.mark.parametrize(
    "reservation",
    [None, reserved(NOMINAL, token="0-2"), reserved(NOMINAL, generation=0)],
    ids=["nothing reserved", "reserved under an older token", "reserved at another generation"],
)
async def test_without_a_usable_reservation_the_claim_is_written_before_the_create(
    reservation: dict[str, Any] | None,
) -> None:
    api = FakeApi()
    rec, _, _ = reconciler(api, body(reservation=reservation), [NOMINAL + timedelta(seconds=1)])
    await rec.reconcile(KEY)
    assert api.calls[:2] == ["write@1", f"create:{job_name(NOMINAL)}"]
    assert not rec.owes_write(KEY)


async def test_a_squatted_name_at_the_instant_is_recorded_as_an_unexpected_job() -> None:
    api = FakeApi()
    api.create_results = [results.Unexpected(owner_uid="someone-else")]
    rec, _, _ = reconciler(api, body(reservation=reserved(NOMINAL)), [NOMINAL + timedelta(seconds=1)])
    await rec.reconcile(KEY)
    assert api.calls[0] == f"create:{job_name(NOMINAL)}"
    assert "write@1" in api.calls, "the re-plan records the failed attempt at once"
    written = model.parse_status(api.statuses[0])
    assert written.counters.runs == 1 and written.counters.failed == 1


async def test_the_crash_hooks_die_before_the_prepared_create_and_after_it() -> None:
    api = FakeApi()
    rec, _, codes = reconciler(api, body(reservation=reserved(NOMINAL)), [NOMINAL + timedelta(seconds=1)],
                               crash_after_claim=1)  # fmt: skip
    with pytest.raises(CrashedError):
        await rec.reconcile(KEY)
    assert codes == [137] and api.calls == [], "between the reservation and the instant: nothing sent"

    api = FakeApi()
    rec, _, codes = reconciler(api, body(reservation=reserved(NOMINAL)), [NOMINAL + timedelta(seconds=1)],
                               crash_after_create=1)  # fmt: skip
    with pytest.raises(CrashedError):
        await rec.reconcile(KEY)
    assert codes == [137] and api.calls[0] == f"create:{job_name(NOMINAL)}"
    assert not [call for call in api.calls if call.startswith("write@")], "the deferred write never went out"


async def test_a_prepared_pass_is_counted_as_such() -> None:
    api = FakeApi()
    metrics = Metrics()
    store = Store()
    store.put_scheduled_job(body(reservation=reserved(NOMINAL)))
    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()), planner=plan, events=FakeEvents(api),
                     metrics=metrics, clock=lambda: NOMINAL + timedelta(seconds=1))  # fmt: skip
    await rec.reconcile(KEY)
    sample = metrics.registry.get_sample_value("sundial_reconciles_total", {"outcome": PassOutcome.PREPARED.value})
    assert sample == 1


async def test_a_pass_that_does_not_act_owes_nothing_more() -> None:
    """After the shard is lost, an owed key must not come back to the lane forever (each pass would end at
    once, not acting): the pass that acts once the shard is held again records what is owed."""
    api = FakeApi()
    elector = Elector()
    store = Store()
    store.put_scheduled_job(body(reservation=reserved(NOMINAL)))
    rec = Reconciler(store=store, api=api, leadership=one_shard(elector), planner=plan, events=FakeEvents(api),
                     metrics=Metrics(), clock=lambda: NOMINAL + timedelta(seconds=1))  # fmt: skip
    await rec.reconcile(KEY)
    assert rec.owes_write(KEY)
    elector.holding = False
    await rec.reconcile(KEY)
    assert not rec.owes_write(KEY)
    elector.holding = True
    await rec.reconcile(KEY)
    assert api.calls[-1] == "write@1", "the used reservation is recorded by the next pass that acts"


async def test_a_used_reservation_keeps_its_jobs_tombstone_while_the_spec_is_invalid() -> None:
    """The prepared Job is created; before the lane's write the spec turns invalid (the pass only reports it:
    nothing records the run) and the Job finishes and is deleted (its ttlSecondsAfterFinished). Its tombstone
    must outlive the invalid passes, as a claimed attempt's does: once the spec is valid again the run is
    recorded from it - its time is never run a second time under the same name."""
    api = FakeApi()
    now = [NOMINAL + timedelta(seconds=1)]
    valid = body(reservation=reserved(NOMINAL))
    rec, store, _ = reconciler(api, valid, now)
    await rec.reconcile(KEY)
    assert api.calls == [f"create:{job_name(NOMINAL)}", "event:SuccessfulCreate"]

    invalid = {**valid, "metadata": {**valid["metadata"], "generation": 2, "resourceVersion": "2"},
               "spec": {**valid["spec"], "schedule": "not a schedule"}}  # fmt: skip
    reported = {**invalid, "metadata": {**invalid["metadata"], "resourceVersion": "3"}}
    api.write_results = [results.Written(body=reported)]
    store.put_scheduled_job(invalid)
    now[0] += timedelta(seconds=1)
    await rec.reconcile(KEY)  # Ready=False, InvalidSchedule
    assert api.calls[-2:] == ["write@2", "event:InvalidSchedule"]
    store.put_scheduled_job({**reported, "status": model.resource.dump_status(model.parse_status(api.statuses[-1]))})

    finished = NOMINAL + timedelta(seconds=20)
    store.drop_job({
        "metadata": {"name": job_name(NOMINAL), "namespace": KEY[0], "uid": "j",
                     "labels": {model.names.SCHEDULED_JOB_LABEL: KEY[1]},
                     "annotations": {model.names.SCHEDULED_TIME_ANNOTATION: "2026-03-01T02:31:00Z",
                                     model.names.ATTEMPT_ANNOTATION: "1"}},
        "status": {"conditions": [{"type": "Complete", "status": "True",
                                   "lastTransitionTime": finished.strftime("%Y-%m-%dT%H:%M:%SZ")}]},
    })  # fmt: skip
    now[0] = finished + timedelta(seconds=1)
    await rec.reconcile(KEY)  # still invalid: nothing to write

    stored = store.scheduled_job(KEY)
    assert stored is not None
    fixed = {**stored, "metadata": {**stored["metadata"], "generation": 3, "resourceVersion": "4"},
             "spec": valid["spec"]}  # fmt: skip
    store.put_scheduled_job(fixed)
    api.write_results = [results.Written(body={**fixed, "metadata": {**fixed["metadata"], "resourceVersion": "5"}})]
    now[0] += timedelta(seconds=1)
    await rec.reconcile(KEY)
    assert api.calls.count(f"create:{job_name(NOMINAL)}") == 1, "the reserved run's Job was created a second time"
    written = model.parse_status(api.statuses[-1])
    assert written.counters.runs == 1 and written.counters.succeeded == 1
