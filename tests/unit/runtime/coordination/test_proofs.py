"""Fencing that proves itself (docs/fencing.md): a refusal is confirmed by a fresh Lease read before the shard
is given up, and every acquire probes that the policy refuses a stale write."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest

from sundial.kube import errors, results
from sundial.kube.leases import NOT_ENFORCED_REASON, LeaseRecord
from sundial.runtime.coordination import proofs, provers
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import LeaseSettings

TIMINGS = LeaseSettings(duration=6.0, renew_deadline=4.0, retry_period=1.0)
WALL = datetime(2026, 3, 1, tzinfo=UTC)


class Leases:
    """One namespace of Leases with UIDs, the enforcement probe's answer and the Warning Events written."""

    def __init__(self) -> None:
        self.records: dict[str, LeaseRecord] = {}
        self.version = 0
        self.reads = 0
        self.read_error: errors.KubeError | None = None
        self.probe_answer: bool | errors.KubeError = True
        self.probes: list[tuple[str, int, int]] = []
        self.warnings: list[tuple[str, str, str]] = []

    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None:
        self.reads += 1
        if self.read_error is not None:
            raise self.read_error
        return self.records.get(name)

    async def list(self, *, namespace: str) -> dict[str, LeaseRecord]:
        return dict(self.records)

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        if name in self.records:
            return results.Conflict()
        return self._store(name, dataclasses.replace(record, uid=f"uid-{self.version}"))

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        current = self.records.get(name)
        if current is None or current.resource_version != record.resource_version:
            return results.Conflict()
        return self._store(name, dataclasses.replace(record, uid=current.uid))

    async def delete(self, *, namespace: str, name: str, resource_version: str) -> None:
        self.records.pop(name, None)

    async def probe_fencing(self, *, namespace: str, name: str, shard: int, transitions: int) -> bool:
        self.probes.append((name, shard, transitions))
        if isinstance(self.probe_answer, errors.KubeError):
            raise self.probe_answer
        return self.probe_answer

    async def warn(self, *, namespace: str, name: str, reason: str, message: str) -> None:
        self.warnings.append((name, reason, message))

    def _store(self, name: str, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.records[name] = dataclasses.replace(record, resource_version=str(self.version))
        return self.records[name]


def elector(api: Leases, name: str = "s-shard-0", identity: str = "replica-a") -> LeaseElector:
    return LeaseElector(api=api, namespace="ns", name=name, identity=identity, timings=TIMINGS,
                        clock=lambda: 100.0, wallclock=lambda: WALL)  # fmt: skip


async def holding(api: Leases) -> LeaseElector:
    held = elector(api)
    assert await held.tick()
    return held


def unconfirmed(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("sundial_fenced_unconfirmed_total") or 0.0


async def test_a_refusal_while_the_lease_is_still_ours_keeps_the_shard_and_is_counted() -> None:
    api, metrics = Leases(), Metrics()
    held = await holding(api)
    assert not await proofs.confirm(held, api, shard=0, metrics=metrics)
    assert held.holding  # no give-up / re-acquire / refused-again loop
    assert api.reads == 2  # the acquire's read and the confirmation's fresh read, not a cached record
    assert unconfirmed(metrics) == 1


@pytest.mark.parametrize("change", ["holder", "transitions", "uid", "deleted"])
async def test_a_refusal_gives_the_shard_up_only_when_the_lease_moved_on(change: str) -> None:
    api, metrics = Leases(), Metrics()
    held = await holding(api)
    record = api.records["s-shard-0"]
    match change:
        case "holder":
            api.records["s-shard-0"] = dataclasses.replace(record, holder="replica-b", transitions=1)
        case "transitions":  # taken over and back meanwhile
            api.records["s-shard-0"] = dataclasses.replace(record, transitions=2)
        case "uid":  # deleted and recreated: leaseTransitions 0 again, another UID
            api.records["s-shard-0"] = dataclasses.replace(record, uid="recreated")
        case "deleted":
            del api.records["s-shard-0"]
    assert await proofs.confirm(held, api, shard=0, metrics=metrics)
    assert not held.holding
    assert unconfirmed(metrics) == 0


async def test_a_refusal_that_cannot_be_confirmed_stops_acting() -> None:
    api = Leases()
    held = await holding(api)
    api.read_error = errors.TransientError(code=503, reason="ServiceUnavailable", message="down")
    assert await proofs.confirm(held, api, shard=0, metrics=None)
    assert not held.holding  # the safe side; the next round re-reads the Lease


async def test_the_probe_sets_the_gauge_and_warns_when_fencing_is_not_enforced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api, metrics = Leases(), Metrics()
    held = await holding(api)

    def gauge() -> float | None:
        return metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"})

    assert await proofs.probe(held, api, shard=0, policy="sundial-fencing", metrics=metrics) is True
    assert gauge() == 1 and api.warnings == []
    assert api.probes == [("s-shard-0", 0, 0)]

    api.probe_answer = False  # the dry-run write was admitted (e.g. an overlay moved the namespace)
    waited: list[float] = []
    with caplog.at_level(logging.ERROR):
        assert await proofs.probe(held, api, shard=0, policy="sundial-fencing", metrics=metrics,
                                  sleep=_recorded(waited)) is False  # fmt: skip
    assert gauge() == 0
    assert waited == list(proofs.PROBE_PAUSES) and len(api.probes) == 1 + 1 + len(proofs.PROBE_PAUSES)
    [(lease, reason, message)] = api.warnings
    assert (lease, reason) == ("s-shard-0", NOT_ENFORCED_REASON)
    assert "NOT enforced" in message and "'sundial-fencing'" in message and "'ns'" in message
    assert any("NOT enforced" in r.getMessage() for r in caplog.records)

    api.probe_answer = errors.ForbiddenError(code=403, reason="Forbidden", message="another policy said no")
    assert await proofs.probe(held, api, shard=0, policy="sundial-fencing", metrics=metrics) is False
    assert gauge() == 0 and "another policy said no" in api.warnings[-1][2]

    api.probe_answer = errors.TransientError(code=503, reason="ServiceUnavailable", message="down")
    assert await proofs.probe(held, api, shard=0, policy="sundial-fencing", metrics=metrics) is None
    assert gauge() == 0 and len(api.warnings) == 2  # unknown: unchanged, no Event


def _recorded(waited: list[float], then: Callable[[], None] = lambda: None) -> Callable[[float], Awaitable[None]]:
    async def sleep(seconds: float) -> None:
        waited.append(seconds)
        then()

    return sleep


class _Informer(Leases):
    """The policy's params lag: the first ``misses`` probes are admitted, as right after the Lease's create."""

    def __init__(self, misses: int) -> None:
        super().__init__()
        self.misses = misses

    async def probe_fencing(self, *, namespace: str, name: str, shard: int, transitions: int) -> bool:
        self.probe_answer = len(self.probes) >= self.misses
        return await super().probe_fencing(namespace=namespace, name=name, shard=shard, transitions=transitions)


async def test_a_probe_admitted_before_the_policy_saw_a_new_lease_is_sent_again_and_then_refused() -> None:
    api, metrics = _Informer(misses=2), Metrics()
    held = await holding(api)
    waited: list[float] = []
    assert await proofs.probe(held, api, shard=0, policy="p", metrics=metrics, sleep=_recorded(waited)) is True
    assert waited == list(proofs.PROBE_PAUSES[:2]) and len(api.probes) == 3
    assert metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"}) == 1
    assert api.warnings == []  # no false FencingNotEnforced at a fresh install


async def test_a_shard_lost_while_an_admitted_probe_waits_leaves_the_gauge_unknown() -> None:
    api, metrics = _Informer(misses=10), Metrics()
    held = await holding(api)
    assert await proofs.probe(held, api, shard=0, policy="p", metrics=metrics, sleep=_recorded([], held.stop)) is None
    assert metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"}) is None
    assert api.warnings == [] and len(api.probes) == 1


async def test_leadership_probes_at_acquire_and_confirms_refusals_on_its_own_loop() -> None:
    api, metrics = Leases(), Metrics()
    member = elector(api, name="s-member-a")
    sharding = Sharding(api=api, member=member, prefix="s", retry_period=1.0, metrics=metrics,
                        fencing=api, fencing_policy="sundial-fencing", wallclock=lambda: WALL)  # fmt: skip
    lead = Leadership([elector(api)], sharding=sharding, clock=lambda: 100.0)
    stopping = asyncio.Event()
    running = asyncio.create_task(lead.run(stopping))
    for _ in range(100):
        await asyncio.sleep(0)
        if lead.acting(0) and api.probes:
            break
    await lead.settle_background()
    assert lead.acting(0) and api.probes == [("s-shard-0", 0, 0)]
    token = lead.fencing_token(0)
    assert token == f"0-0-{api.records['s-shard-0'].uid}"

    lead.fenced(0)  # refused, but the Lease is still ours: kept
    await lead.settle_background()
    assert lead.acting(0) and unconfirmed(metrics) == 1

    api.records["s-shard-0"] = dataclasses.replace(api.records["s-shard-0"], uid="recreated")
    lead.fenced(0)  # refused and the Lease was recreated: given up
    await lead.settle_background()
    assert not lead.acting(0)
    stopping.set()
    await running


async def test_a_shard_held_all_along_is_probed_every_period_and_the_gauge_follows_the_policy() -> None:
    """The binding deleted after the acquire: the next periodic probe sets the gauge to 0 (one Warning Event),
    restored: 1 again - without pauses, the Lease is not new."""
    api, metrics = Leases(), Metrics()
    now = [100.0]
    clock = lambda: now[0]  # noqa: E731
    member = LeaseElector(api=api, namespace="ns", name="s-member-a", identity="replica-a", timings=TIMINGS,
                          clock=clock, wallclock=lambda: WALL)  # fmt: skip
    shard = LeaseElector(api=api, namespace="ns", name="s-shard-0", identity="replica-a", timings=TIMINGS,
                         clock=clock, wallclock=lambda: WALL)  # fmt: skip
    sharding = Sharding(api=api, member=member, prefix="s", retry_period=1.0, metrics=metrics, fencing=api,
                        fencing_policy="sundial-fencing", fencing_probe_period=10.0)  # fmt: skip
    lead = Leadership([shard], sharding=sharding, clock=clock)

    def gauge() -> float | None:
        return metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"})

    async def rounds_until(seconds: float) -> None:
        while now[0] < seconds:  # one round per retry period, as the lease thread runs them
            now[0] += 1.0
            await lead.step()
            await lead.settle_background()

    await lead.step()
    await lead.settle_background()
    assert gauge() == 1 and len(api.probes) == 1  # at the acquire (t=100)
    api.probe_answer = False  # the binding is deleted
    await rounds_until(109.0)
    assert gauge() == 1 and len(api.probes) == 1  # not yet a period since the last probe
    await rounds_until(110.0)
    assert gauge() == 0 and len(api.probes) == 2  # one probe, no pauses: the Lease is not new
    assert [reason for _, reason, _ in api.warnings] == [NOT_ENFORCED_REASON]
    await rounds_until(120.0)
    assert gauge() == 0 and len(api.probes) == 3 and len(api.warnings) == 1  # still 0: said once
    api.probe_answer = True  # restored
    await rounds_until(130.0)
    assert gauge() == 1 and len(api.probes) == 4


async def _until(condition: Callable[[], object], seconds: float = 10.0) -> None:
    """Poll CONDITION on the running loop until it holds, failing after SECONDS."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_a_policy_or_binding_change_probes_every_held_shard_again_without_waiting_a_period() -> None:
    """The binding deleted, then restored: each change seen (the informers call from their own thread) probes the
    held shard again although the clock stands still (no probe period passed), and a burst of changes seen
    together costs one round of probes, not one per change."""
    api, metrics = Leases(), Metrics()
    sharding = Sharding(api=api, member=elector(api, name="s-member-a"), prefix="s", retry_period=3600.0,
                        metrics=metrics, fencing=api, fencing_policy="sundial-fencing", fencing_probe_period=3600.0,
                        fencing_change_delays=(0.0,), wallclock=lambda: WALL)  # fmt: skip
    lead = Leadership([elector(api)], sharding=sharding, clock=lambda: 100.0)

    def gauge() -> float | None:
        return metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"})

    stopping = asyncio.Event()
    running = asyncio.create_task(lead.run(stopping))
    await _until(lambda: lead.acting(0) and api.probes)
    await lead.settle_background()
    assert gauge() == 1 and len(api.probes) == 1  # at the acquire

    api.probe_answer = False  # the binding is deleted; the informers see it, twenty events in one burst
    for _ in range(20):
        lead.fencing_changed()
    await _until(lambda: gauge() == 0)
    await lead.settle_background()
    assert len(api.probes) == 2 and [reason for _, reason, _ in api.warnings] == [NOT_ENFORCED_REASON]

    api.probe_answer = True  # restored, seen from the informers' thread
    await asyncio.to_thread(lead.fencing_changed)
    await _until(lambda: gauge() == 1)
    await lead.settle_background()
    assert len(api.probes) == 3
    stopping.set()
    await running


async def test_a_change_seen_without_a_fencing_policy_configured_probes_nothing() -> None:
    api, metrics = Leases(), Metrics()
    sharding = Sharding(api=api, member=elector(api, name="s-member-a"), prefix="s", retry_period=3600.0,
                        metrics=metrics, fencing=api, fencing_policy="", fencing_change_delays=(0.0,),
                        wallclock=lambda: WALL)  # fmt: skip
    lead = Leadership([elector(api)], sharding=sharding, clock=lambda: 100.0)
    stopping = asyncio.Event()
    running = asyncio.create_task(lead.run(stopping))
    await _until(lambda: lead.acting(0))
    lead.fencing_changed()
    await lead.settle_background()
    assert api.probes == []
    stopping.set()
    await running


async def _leading(api: Leases, metrics: Metrics, delays: tuple[float, ...]) -> tuple[Leadership, asyncio.Task[None],
                                                                                       asyncio.Event]:  # fmt: skip
    member = elector(api, name="s-member-a")
    sharding = Sharding(api=api, member=member, prefix="s", retry_period=3600.0, metrics=metrics, fencing=api,
                        fencing_policy="sundial-fencing", fencing_probe_period=3600.0, fencing_change_delays=delays,
                        wallclock=lambda: WALL)  # fmt: skip
    lead = Leadership([elector(api)], sharding=sharding, clock=lambda: 100.0)
    stopping = asyncio.Event()
    running = asyncio.create_task(lead.run(stopping))
    for _ in range(1000):
        await asyncio.sleep(0)
        if lead.acting(0) and api.probes:
            break
    await lead.settle_background()
    assert lead.acting(0) and len(api.probes) == 1  # the acquire's
    return lead, running, stopping


async def test_a_change_of_the_policy_or_binding_seen_on_another_thread_probes_at_once_not_at_the_period() -> None:
    """Changes come from the intake's informers (the main loop's thread); the probe period is an hour, the round
    after each delay still sets the gauge. Five changes at once make one round per delay, not five."""
    api, metrics = Leases(), Metrics()
    lead, running, stopping = await _leading(api, metrics, delays=(0.05, 0.3))
    api.probe_answer = False  # the binding is deleted
    changes = [threading.Thread(target=lead.fencing_changed) for _ in range(5)]
    for thread in changes:
        thread.start()
    for thread in changes:
        thread.join()
    deadline = asyncio.get_running_loop().time() + 5
    while len(api.probes) < 3 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    await lead.settle_background()
    assert len(api.probes) == 1 + 2, "one round after each delay, whatever the number of changes"
    assert metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"}) == 0
    assert [reason for _, reason, _ in api.warnings] == [NOT_ENFORCED_REASON]  # said once
    stopping.set()
    await running


async def test_change_rounds_come_at_most_once_per_interval_and_answer_every_change_before_them() -> None:
    api, metrics = Leases(), Metrics()
    held = await holding(api)
    prover = provers.Prover([held], fencing=api, policy="sundial-fencing", period=3600.0, metrics=metrics,
                            clock=lambda: 100.0, change_delays=(0.0,), change_interval=0.2)  # fmt: skip
    loop = asyncio.get_running_loop()
    prover.loop = loop
    started = loop.time()
    while loop.time() - started < 1.0:  # a storm: a change every 10 ms for a second
        prover.changed()
        await asyncio.sleep(0.01)
    took = loop.time() - started
    await prover.settle()
    assert 1 <= len(api.probes) <= took / 0.2 + 2, api.probes
    assert metrics.registry.get_sample_value("sundial_fencing_enforced", {"shard": "0"}) == 1
    before = len(api.probes)
    prover.changed()  # a change after the storm is answered too
    await asyncio.sleep(0)
    await prover.settle()
    assert len(api.probes) == before + 1


def test_changes_before_the_lease_loop_runs_or_without_a_policy_probe_nothing() -> None:
    api = Leases()
    for policy in ("sundial-fencing", ""):
        sharding = Sharding(api=api, member=elector(api, name="s-member-a"), prefix="s", retry_period=1.0,
                            fencing=api, fencing_policy=policy)  # fmt: skip
        Leadership([elector(api)], sharding=sharding).fencing_changed()
    assert api.probes == []


async def test_a_round_of_change_probes_still_waiting_when_leadership_stops_ends_with_it() -> None:
    """A change seen just before the stop asks for a round minutes away: the lease loop's end cancels and awaits
    it, so no task is left pending on a loop about to close (asyncio: "Task was destroyed but it is pending")."""
    api, metrics = Leases(), Metrics()
    lead, running, stopping = await _leading(api, metrics, delays=(600.0,))
    lead.fencing_changed()
    for _ in range(100):
        await asyncio.sleep(0)
    waiting = [task for task in asyncio.all_tasks() if task.get_name() == "fencing change probes"]
    assert len(waiting) == 1 and not waiting[0].done()
    stopping.set()
    await running
    assert waiting[0].cancelled()
    assert len(api.probes) == 1  # the acquire's only: the round never ran
