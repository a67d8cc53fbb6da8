"""Prepared runs under faults (DESIGN §7.5), each case small and bounded, each ending with the auditor's proof.

A run is reserved in ``status.reservation`` ahead of its instant; at the instant only its Job is created and
the status write that records it follows in a low-priority lane. The faults here fall in the gaps that
protocol opens: after a prepared create and before its deferred write (a crash), in the middle of a herd of
prepared creates (a failover), while a stopped replica still holds reservations under its token (a zombie),
and between a reservation and its instant (a spec edit, a suspend). The crash between a reservation and its
instant is ``test_faults.py::test_crash_between_claim_and_create_is_recovered_exactly_once[Allow]``.
"""

from __future__ import annotations

import json
import signal
import time
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial import schedule

from .auditor import SeenJob
from .harness import Harness, utcnow

pytestmark = [pytest.mark.e2e, pytest.mark.chaos, pytest.mark.timeout(300)]

EVERY_2S = "*/2 * * * * *"
EVERY_5S = "*/5 * * * * *"
PREPARED = 'sundial_reconciles_total{outcome="prepared"}'


def _time(text: str | None) -> datetime | None:
    return schedule.parse_rfc3339(text, field="status") if text else None


def _recorded(status: dict[str, Any]) -> set[str]:
    """The Jobs a status records (active, finished, waiting for a retry, dead-lettered)."""
    return (
        {run["job"] for run in status.get("active") or []}
        | {str(run.get("job")) for run in status.get("recentRuns") or []}
        | {str(p.get("lastJob")) for p in status.get("pendingRetries") or []}
        | {str(d.get("lastJob")) for d in status.get("deadLetters") or []}
    )


def _prepared(metrics: str) -> float:
    line = next((line for line in metrics.splitlines() if line.startswith(PREPARED)), "")
    return float(line.split()[-1]) if line else 0.0


def test_a_crash_between_a_prepared_create_and_its_status_write_is_recorded_once(harness: Harness) -> None:
    """The acting replica dies right after its 3rd prepared create, before the deferred write that records it:
    that Job exists and its status does not know it. The next holder lists the Job and records the run (the
    reservation is the claim) without creating it again."""
    h = harness
    fleet = h.fleet(2, env={"replica-a": {"SUNDIAL_TEST_CRASH_AFTER_CREATE": "3"}})
    crasher, standby = fleet.replicas["replica-a"], fleet.replicas["replica-b"]
    crasher.start()  # alone, so it is the one acting
    h.create_scheduled_jobs(2, EVERY_5S)
    h.wait(lambda: crasher.exit_code() is not None, 60, "replica-a crashes after its 3rd prepared create")
    h.faults["crash after a prepared create"] += 1
    assert crasher.exit_code() == 137, crasher.log_text()[-3000:]
    assert "exiting after prepared create 3" in crasher.log_text()
    by_uid = {sj["metadata"]["uid"]: sj for sj in h.scheduled_jobs()}

    def unrecorded() -> list[SeenJob]:
        known = {uid: _recorded(sj.get("status") or {}) for uid, sj in by_uid.items()}
        return [
            job
            for job in h.watch.snapshot()
            if job.controller_uid in known and job.name not in known[job.controller_uid]
        ]

    orphans = h.wait(unrecorded, 10, "the crashed replica's last Job, which its status does not record", 0.05)
    standby.start()
    crasher.env.pop("SUNDIAL_TEST_CRASH_AFTER_CREATE")
    crasher.start()
    fleet.wait_for_holder(timeout=60)

    def recorded_all() -> bool:
        statuses = {sj["metadata"]["uid"]: sj.get("status") or {} for sj in h.scheduled_jobs()}
        return all(job.name in _recorded(statuses[str(job.controller_uid)]) for job in orphans)

    h.wait(recorded_all, 60, "the next holder records the orphaned Jobs' runs", interval=0.5)
    for job in orphans:
        same = [j for j in h.watch.snapshot() if (j.scheduled_time, j.attempt) == (job.scheduled_time, job.attempt)
                and j.controller_uid == job.controller_uid]  # fmt: skip
        assert [j.uid for j in same] == [job.uid], f"the orphaned run got another Job: {same}"
    h.finish("crash-after-prepared-create")


def test_a_failover_in_the_middle_of_a_herd_runs_every_object_once(harness: Harness) -> None:
    """40 objects due at the same second; the holder is killed once some, not all, of that instant's prepared
    creates went out (``--qps 10`` spreads them over seconds). The standby records the Jobs it finds and claims
    the rest: every object runs that instant exactly once (or counts it missed), none twice."""
    h = harness
    fleet = h.fleet(2, extra_args=("--qps", "10", "--burst", "5"))
    fleet.start()
    count = 40
    h.create_scheduled_jobs(count, "*/30 * * * * *")
    fleet.wait_for_holder(timeout=60)
    for _ in range(3):  # a herd every 30 s; the kill must land inside one
        holder = fleet.wait_for_holder(timeout=60)
        now = utcnow()
        instant = now.replace(microsecond=0) + timedelta(seconds=30 - now.second % 30)
        if (instant - now).total_seconds() < 5:
            instant += timedelta(seconds=30)

        def of_instant(at: datetime = instant) -> list[SeenJob]:
            return [job for job in h.watch.snapshot() if job.scheduled_time == at]

        h.wait(lambda: len(of_instant()) >= 3, 45, "the herd's first Jobs", interval=0.02)
        holder.kill()
        h.faults["SIGKILL of the holder in a herd"] += 1
        if len(of_instant()) < count:
            break
        holder.start()  # the herd was over before the kill landed: try the next one
    else:
        raise AssertionError("the kill never landed inside a herd")
    fleet.wait_for_holder(timeout=60, other_than=holder.identity)
    holder.start()
    jobs = h.wait(lambda: len(of_instant()) >= count and of_instant(), 60, "every object's Job of that instant", 0.5)
    by_token = sorted({job.token_term for job in jobs})
    h.faults[f"that instant's {count} Jobs by token: {', '.join(by_token)}"] += 1
    h.finish("failover-mid-herd")


def test_a_zombie_holding_reservations_writes_nothing_and_its_runs_are_claimed_anew(harness: Harness) -> None:
    """SIGSTOP the holder once every object holds a reservation under its token, for longer than its lease;
    the other replica takes over, finds reservations under a token that is not its own and claims each run
    first; SIGCONT: the zombie writes nothing (the proxy's per-replica log), and no Job carries its token after
    the stop (the auditor)."""
    h = harness
    fleet = h.fleet(2, via_proxy=True)
    fleet.start()
    names = h.create_scheduled_jobs(5, EVERY_5S)

    def reserved_by_holder() -> tuple[Any, str] | None:
        """(the holder, its token's term) once every object holds a reservation under that holder's token."""
        holder, record = fleet.holder_record(timeout=60)
        term = f"0-{int(record.get('leaseTransitions') or 0)}"
        found = [(sj.get("status") or {}).get("reservation") or {} for sj in h.scheduled_jobs()]
        ours = len(found) == len(names) and all(r.get("fencingToken", "").startswith(f"{term}-") for r in found)
        return (holder, term) if ours and fleet.lease().get("holderIdentity") == holder.identity else None

    zombie, stale = h.wait(reserved_by_holder, 60, "every object reserved under the holder's token", 0.5)
    stopped_at = time.time()
    zombie.signal(signal.SIGSTOP)
    h.faults["SIGSTOP of a holder with reservations"] += 1
    successor = fleet.wait_for_holder(timeout=60, other_than=zombie.identity)

    def claimed_anew() -> bool:
        return all(
            any(job.name.startswith(f"{name}-") and job.token_term != stale and job.created is not None
                and job.created.timestamp() > stopped_at for job in h.watch.snapshot())
            for name in names
        )  # fmt: skip

    h.wait(claimed_anew, 60, f"{successor.identity} running every object under its own token", interval=0.5)
    resumed_at = time.time()
    zombie.signal(signal.SIGCONT)
    time.sleep(8)  # the resumed replica's loops run (it must notice its lost lease, not write)
    assert h.proxy is not None
    lease = f"{h.lease_prefix}-shard-0"
    log = [r for r in h.proxy.log() if r.listener == zombie.identity and r.at >= resumed_at]
    regained = min((r.at for r in log if r.method == "PUT" and lease in r.path and r.status == 200), default=1e18)
    decided = [r for r in log if r.at < regained and r.is_write and r.resource != "leases" and r.opened >= resumed_at]
    assert not decided, f"the zombie wrote after it resumed: {decided[:5]}"
    h.finish("zombie-reservations", zombie=(stale, stopped_at))


def test_a_spec_edit_and_a_suspend_between_reservation_and_instant(harness: Harness) -> None:
    """Three objects reserved for the same instant; before it, one's jobTemplate is edited and another is
    suspended. At the instant the edited one runs once with the new template, the suspended one not at all,
    the third once - and the replica's prepared instants are counted."""
    h = harness
    fleet = h.fleet(1)
    fleet.start()
    edited, suspended, plain = h.create_scheduled_jobs(3, "*/15 * * * * *")
    replica = fleet.wait_for_holder(timeout=60)

    def common_reservation() -> datetime | None:
        found = {
            sj["metadata"]["name"]: _time(((sj.get("status") or {}).get("reservation") or {}).get("scheduledTime"))
            for sj in h.scheduled_jobs()
        }
        times = set(found.values())
        if len(found) != 3 or len(times) != 1:
            return None
        (at,) = times
        return at if at is not None and (at - utcnow()).total_seconds() >= 5 else None

    instant = h.wait(common_reservation, 60, "one instant reserved by all three, at least 5 s ahead", 0.5)
    template = h.cluster.job_manifest("x")["spec"]
    template["template"]["metadata"]["labels"]["sundial.dev/e2e-edited"] = "yes"
    h.cluster.kubectl("patch", "scheduledjob", edited, "-n", h.namespace, "--type", "merge",
                      "-p", f'{{"spec": {{"jobTemplate": {{"spec": {json.dumps(template)}}}}}}}')  # fmt: skip
    h.cluster.kubectl("patch", "scheduledjob", suspended, "-n", h.namespace, "--type", "merge",
                      "-p", '{"spec": {"suspend": true}}')  # fmt: skip
    h.faults["spec edit + suspend between reservation and instant"] += 1

    def of(name: str) -> list[SeenJob]:
        return [j for j in h.watch.snapshot() if j.name.startswith(f"{name}-") and j.scheduled_time == instant]

    h.wait(lambda: of(edited) and of(plain), 30, "the instant's Jobs of the edited and the plain object", 0.2)
    h.wait(lambda: utcnow() > instant + timedelta(seconds=3), 30, "the instant passed", 0.05)
    assert len(of(edited)) == 1 and len(of(plain)) == 1 and of(suspended) == []
    job = h.cluster.get_json("job", of(edited)[0].name, "-n", h.namespace) or {}
    labels = ((job.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    assert labels.get("sundial.dev/e2e-edited") == "yes", "the Job was made from the edited spec"
    assert not [j for j in h.watch.snapshot() if j.name.startswith(f"{suspended}-") and j.scheduled_time
                and j.scheduled_time >= instant], "the suspended object ran"  # fmt: skip
    assert _prepared(replica.metrics()) > 0, "no run was ever created under its reservation"
    h.finish("edit-and-suspend-before-the-instant")


def test_a_kill_while_a_first_runs_start_is_held_records_it_once(harness: Harness) -> None:
    """New objects due once (a fixed date, next run a year away) whose Jobs run 25 s: the status write that records
    each start is held while its Job runs (DESIGN §7.5), so the Jobs exist and the statuses do not record them.
    The holder is killed (-9) inside that hold; the next holder finds the Jobs through the reservations (the
    claim), records each run once, and creates none again."""
    h = harness
    fleet = h.fleet(2)
    first, second = fleet.replicas["replica-a"], fleet.replicas["replica-b"]
    first.start()  # alone, so it is the one acting
    fleet.wait_for_holder(timeout=60)
    at = utcnow().replace(microsecond=0) + timedelta(seconds=15)
    fixed = f"{at.second} {at.minute} {at.hour} {at.day} {at.month} *"  # the herd's shape, with seconds
    h.create_scheduled_jobs(3, fixed, duration_seconds=25)
    by_uid: dict[str, dict[str, Any]] = {}

    def held() -> bool:
        """Every object's Job exists and runs, and no status records it yet."""
        by_uid.update({sj["metadata"]["uid"]: sj for sj in h.scheduled_jobs()})
        jobs = [job for job in h.watch.snapshot() if job.scheduled_time == at]
        return len(jobs) == 3 and all(
            job.name not in _recorded(by_uid[str(job.controller_uid)].get("status") or {}) for job in jobs
        )

    h.wait(held, 60, "the first runs' Jobs, their starts held", interval=0.2)
    time.sleep(2)  # well inside the 25 s the Jobs run: still held (no write of its own for the start)
    assert held(), "a start was written while its Job ran"
    first.kill()
    h.faults["SIGKILL while first runs' starts are held"] += 1
    second.start()
    fleet.wait_for_holder(timeout=60, other_than=first.identity)

    def recorded() -> bool:
        statuses = [sj.get("status") or {} for sj in h.scheduled_jobs()]
        return all(
            [(run.get("result"), run.get("scheduledTime")) for run in status.get("recentRuns") or []]
            == [("Succeeded", at.strftime("%Y-%m-%dT%H:%M:%SZ"))]
            for status in statuses
        )

    h.wait(recorded, 90, "each run recorded once, succeeded", interval=0.5)
    jobs = [job for job in h.watch.snapshot() if job.scheduled_time == at]
    assert len(jobs) == 3 and len({job.controller_uid for job in jobs}) == 3, f"one Job per object: {jobs}"
    h.finish("kill-while-start-held")
