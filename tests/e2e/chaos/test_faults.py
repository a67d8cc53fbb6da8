"""One fault per test, each bounded in time, each ending with the auditor's proof (see docs/chaos.md)."""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import time
from collections.abc import Callable
from datetime import timedelta

import pytest

from .harness import Harness, utcnow
from .proxy import FaultProxy, Faults, Request

pytestmark = [pytest.mark.e2e, pytest.mark.chaos, pytest.mark.timeout(300)]

EVERY_2S = "*/2 * * * * *"
EVERY_5S = "*/5 * * * * *"
FENCED_WRITES = re.compile(r"^sundial_fenced_writes_total\{[^}]*\}\s+([0-9.e+]+)$", re.MULTILINE)


def _run_for(seconds: float) -> None:
    time.sleep(seconds)  # schedule time passing (not a condition)


def test_sigkill_of_the_acting_replica_at_random_moments(harness: Harness) -> None:
    h = harness
    fleet = h.fleet(3)
    fleet.start()
    h.create_scheduled_jobs(10, EVERY_2S)
    for _ in range(4):
        leader = fleet.wait_for_holder(timeout=60)
        _run_for(h.random.uniform(1.0, 5.0))
        leader.kill()
        h.faults["SIGKILL leader"] += 1
        fleet.wait_for_holder(timeout=60, other_than=leader.identity)
        leader.start()
    _run_for(4)
    h.finish("sigkill")


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "claim-first"])
def test_crash_between_claim_and_create_is_recovered_exactly_once(harness: Harness, prepared: bool) -> None:
    """The acting replica exits (os._exit(137), the real process) right after its 3rd claim, before that
    Job's create. The standby (and the crashed replica restarted without the hook) take over.

    ``prepared`` (the default, DESIGN §7.5): every run is reserved ahead, so the 3rd claim is a reservation
    used at its instant - the crash falls between the reservation and the instant; the run was never
    started, so the new holder runs it (claiming first, under the same name) or counts it missed under
    ``catchUp``, exactly once. ``claim-first`` (``--no-prepared-runs``): the claim is a status write - the
    crash falls between that write and the create, and the claimed run gets its Job exactly once."""
    h = harness
    extra = () if prepared else ("--no-prepared-runs",)
    fleet = h.fleet(2, env={"replica-a": {"SUNDIAL_TEST_CRASH_AFTER_CLAIM": "3"}}, extra_args=extra)
    crasher, standby = fleet.replicas["replica-a"], fleet.replicas["replica-b"]
    crasher.start()  # alone, so it is the one acting (shard assignment could hand shard 0 to the other)
    # 5 s when prepared: the lane's write that reserves the next run lands well before it (on loaded cores too)
    h.create_scheduled_jobs(1, EVERY_5S if prepared else EVERY_2S)
    h.wait(lambda: crasher.exit_code() is not None, 60, "replica-a crashes after its 3rd claim")
    h.faults["crash after a used reservation" if prepared else "crash after a claim write"] += 1
    assert crasher.exit_code() == 137, crasher.log_text()[-3000:]
    assert "test crash hook" in crasher.log_text()
    (sj,) = h.scheduled_jobs()
    _run_for(0.5)
    seen = {job.name for job in h.watch.snapshot()}
    status = sj.get("status") or {}
    claimed = [run["job"] for run in status.get("active") or [] if run["job"] not in seen]
    reservation = status.get("reservation") or {}
    reserved = [reservation["job"]] if reservation and reservation["job"] not in seen else []
    if prepared:
        assert reserved and not claimed, f"the used reservation without its Job should be in status: {status}"
    else:
        assert claimed and not reserved, f"the claim without its Job should be in status.active: {status}"
    standby.start()
    # The standby takes the shard first: a crasher restarted at once under its old identity could renew its own
    # unexpired Lease without a transition, and its Jobs would carry the crashed process's token (still exactly
    # once - the same name - but not the takeover this test is about).
    fleet.wait_for_holder(timeout=60, other_than=crasher.identity)
    crasher.env.pop("SUNDIAL_TEST_CRASH_AFTER_CLAIM")
    crasher.start()
    h.wait(
        lambda: all(any(j.name == name for j in h.watch.snapshot()) for name in claimed) or None,
        60,
        "the claimed run's Job is created after the crash",
    )
    _run_for(3)
    for name in claimed + reserved:
        jobs = [j for j in h.watch.snapshot() if j.name == name]
        assert len(jobs) <= 1, jobs
        assert all(job.token_term != "0-0" for job in jobs), "created by a later holder (the Lease changed hands)"
    h.finish("crash-after-reservation" if prepared else "crash-after-claim")


def test_a_stopped_leader_writes_nothing_after_it_resumes(harness: Harness) -> None:
    """SIGSTOP the leader for longer than its lease; the other replica takes over; SIGCONT: the zombie
    decides no write (Job, status, Event) - proven by the proxy's per-replica request log: no write on a
    connection opened after the resume, at most one per sender in flight at the stop - and no Job with
    its stale fencing token was created after it was stopped.

    The replicas run as the operator's ServiceAccount (pod-bound tokens) under the chart's server-side
    fencing policy, and a write *in flight* across the takeover is made certain: from just before the stop,
    the proxy holds the leader's Job creates at the API server's door and forwards them once the
    other replica holds the Lease. The API server refuses each one (403, stale token), and the resumed
    replica counts them (``sundial_fenced_writes_total``).

    ``--qps 4`` keeps writes queued in the client-side rate limiter, so the stop lands while writes that
    already passed the Lease check wait to be sent: the case the send guard exists for (before it, the
    resumed replica sent them with its stale token)."""
    h = harness
    fencing = h.server_fencing()
    fleet = h.fleet(2, via_proxy=True, extra_args=("--qps", "4", "--burst", "4"), fencing=fencing)
    fleet.start()
    h.create_scheduled_jobs(10, EVERY_2S)
    fleet.wait_for_holder(timeout=60)
    _run_for(4)  # past the start-up shard hand-offs
    assert h.proxy is not None
    for _ in range(10):
        zombie, record = fleet.holder_record(timeout=60)  # one read: the holder and its fencing token together
        h.proxy.hold(zombie.identity, "POST", path="/jobs")
        with contextlib.suppress(AssertionError):
            _until(functools.partial(_holds, h.proxy, zombie.identity), 5, "a held Job create")
        if h.proxy.held(zombie.identity) and fleet.lease().get("holderIdentity") == zombie.identity:
            break
        h.proxy.release(zombie.identity)  # a start-up hand-off moved the Lease meanwhile: pick the holder again
    else:
        raise AssertionError("no create of the Lease holder could be held")
    stale = f"0-{int(record.get('leaseTransitions') or 0)}"
    stopped_at = time.time()
    zombie.signal(signal.SIGSTOP)
    h.faults["SIGSTOP leader"] += 1
    fleet.wait_for_holder(timeout=60, other_than=zombie.identity)
    held = h.proxy.held(zombie.identity)
    released_at = time.time()
    h.proxy.release(zombie.identity)

    def answered() -> list[Request]:
        assert h.proxy is not None
        log = h.proxy.log()
        return [
            r
            for r in log
            if r.listener == zombie.identity and r.method == "POST" and "/jobs" in r.path and r.at >= released_at
        ]

    _until(lambda: len(answered()) >= held and all(r.status for r in answered()), 20, "the held creates answered")
    refused = answered()
    assert refused and all(r.status == 403 for r in refused), f"the API server took a stale write: {refused}"
    resumed_at = time.time()
    zombie.signal(signal.SIGCONT)
    _until(lambda: _fenced(zombie.metrics()) >= 1, 30, "the resumed replica counting the refused writes")
    _run_for(max(0.0, resumed_at + 8 - time.time()))
    log = [r for r in h.proxy.log() if r.listener == zombie.identity and r.at >= resumed_at]
    # Shard assignment may legitimately hand shard 0 back to the resumed replica: it then acquires the
    # Lease again (a new fencing token). Everything it wrote before that successful Lease write is a
    # zombie write.
    lease = f"{h.lease_prefix}-shard-0"
    regained = min(
        (r.at for r in log if r.method == "PUT" and lease in r.path and r.status == 200 and r.outcome == "forwarded"),
        default=float("inf"),
    )
    writes = [r for r in log if r.at < regained and r.is_write and r.resource != "leases"]
    # In flight at the SIGSTOP: the connection was opened (and the last send-guard check passed) before the
    # stop, the bytes went out after the resume. Unavoidable for any client, at most what was in flight, and
    # refused by the API server (stale token, or a conflict); a write *decided* after the resume comes on a
    # connection opened after it.
    in_flight = [r for r in writes if r.opened < resumed_at]
    decided_after = [r for r in writes if r.opened >= resumed_at]
    assert not decided_after, f"the zombie wrote after it resumed: {decided_after[:10]}"
    assert len(in_flight) <= 2, f"more writes in flight at the SIGSTOP than one per sender: {in_flight}"
    assert all(r.status >= 400 for r in in_flight if r.outcome == "forwarded"), in_flight
    assert any(r.resource == "leases" for r in log), "the resumed replica talks to the API server again"
    h.faults[f"stale Job creates refused by the API server: {len(refused)} of {held} held"] += 1
    assert not [sj["metadata"]["name"] for sj in h.scheduled_jobs() if (sj.get("status") or {}).get("deadLetters")]
    h.finish("sigstop-zombie", zombie=(stale, stopped_at))


def _until(predicate: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {message}")
        time.sleep(0.05)


def _holds(proxy: FaultProxy, listener: str) -> bool:
    return proxy.held(listener) > 0


def _fenced(metrics: str) -> float:
    """The sum of ``sundial_fenced_writes_total`` over its kinds."""
    return sum(float(value) for value in FENCED_WRITES.findall(metrics))


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_control_plane_restart(harness: Harness, component: str) -> None:
    h = harness
    if h.sandbox is None:
        pytest.skip("restarting control plane processes needs the sandbox")
    fleet = h.fleet(2)
    fleet.start()
    h.create_scheduled_jobs(10, EVERY_2S)
    fleet.wait_for_holder(timeout=60)
    for _ in range(2):
        _run_for(h.random.uniform(4.0, 8.0))
        h.restart(component, down=3.0)
    _run_for(6)
    h.finish(f"restart-{component}")


def test_whole_fleet_down_then_back_catches_up_per_policy(harness: Harness) -> None:
    h = harness
    fleet = h.fleet(2)
    fleet.start()
    latest = h.create_scheduled_jobs(4, EVERY_5S)
    all_ = [f"all-{name}" for name in latest]
    template = h.cluster.job_manifest("x")["spec"]
    for name in all_:
        h.cluster.apply(
            {
                "apiVersion": "sundial.dev/v1alpha1",
                "kind": "ScheduledJob",
                "metadata": {"name": name},
                "spec": {
                    "schedule": EVERY_5S,
                    "catchUp": {"policy": "All", "maxRuns": 10},
                    "jobTemplate": {"spec": template},
                },
            },
            h.namespace,
        )
    fleet.wait_for_holder(timeout=60)
    _run_for(12)
    for replica in fleet.replicas.values():
        replica.kill()
    h.faults["fleet down 25s"] += 1
    down_at = utcnow()
    _run_for(25)
    fleet.start()
    up_at = utcnow()
    _run_for(8)
    h.quiesce()
    report = h.report("fleet-down")
    report.assert_clean()
    gap = int((up_at - down_at) / timedelta(seconds=5))
    by_name = {a.name: a for a in report.sjs}
    for name in all_:
        assert by_name[name].counted_missed == 0, by_name[name]
    for name in latest:
        assert by_name[name].counted_missed >= gap - 2, (by_name[name], gap)
    catch_ups = [j for j in h.watch.snapshot() if j.trigger == "catch-up"]
    assert catch_ups, "policy All must have caught up the runs of the outage"


def test_api_errors_resets_and_latency_through_a_fault_proxy(harness: Harness) -> None:
    h = harness
    fleet = h.fleet(2, via_proxy=True)
    fleet.start()
    h.create_scheduled_jobs(10, EVERY_2S)
    fleet.wait_for_holder(timeout=60)
    assert h.proxy is not None
    h.proxy.set_faults(Faults(error_5xx=0.06, error_429=0.06, reset_before=0.04, reset_after=0.04, latency=0.1))
    _run_for(40)
    h.proxy.clear_faults()
    _run_for(4)
    h.finish("proxy-faults")
    assert sum(h.proxy.injected.values()) > 20, h.proxy.injected
