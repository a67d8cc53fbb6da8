"""Coordinated shard Leases (issue 8): replicas against one fake Lease API with compare-and-set semantics, on a
shared fake monotonic clock. No sleeps: every round is an explicit ``step()`` and a clock advance."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sundial.kube import results
from sundial.kube.leases import LeaseRecord
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.coordination.inflight import InFlight
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.coordination.members import member_lease_name
from sundial.runtime.serving.metrics import Metrics, WithdrawReason
from sundial.runtime.settings import LeaseSettings

SHARDS = 12
DURATION, DEADLINE, RETRY = 6.0, 4.0, 1.0
EPOCH = datetime(2026, 3, 1, tzinfo=UTC)
TIMINGS = LeaseSettings(duration=DURATION, renew_deadline=DEADLINE, retry_period=RETRY)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return EPOCH + timedelta(seconds=self.now)


class FakeLeases:
    """A namespace of Leases; every write bumps the resourceVersion; a stale one is a 409."""

    def __init__(self) -> None:
        self.records: dict[str, LeaseRecord] = {}
        self.version = 0
        self.on_write: list[tuple[str, LeaseRecord | None, LeaseRecord | None]] = []

    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None:
        return self.records.get(name)

    async def list(self, *, namespace: str) -> dict[str, LeaseRecord]:
        return dict(self.records)

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        if name in self.records:
            return results.Conflict()
        return self._store(name, record)

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        current = self.records.get(name)
        if current is None or record.resource_version != current.resource_version:
            return results.Conflict()
        return self._store(name, record)

    async def delete(self, *, namespace: str, name: str, resource_version: str) -> None:
        current = self.records.get(name)
        if current is not None and current.resource_version == resource_version:
            del self.records[name]

    def _store(self, name: str, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        before = self.records.get(name)
        self.records[name] = dataclasses.replace(record, resource_version=str(self.version))
        self.on_write.append((name, before, self.records[name]))
        return self.records[name]

    def holders(self) -> dict[int, str | None]:
        return {i: self.records[f"s-shard-{i}"].holder for i in range(SHARDS) if f"s-shard-{i}" in self.records}


@dataclasses.dataclass
class Replica:
    identity: str
    leadership: Leadership
    metrics: Metrics
    drain: list[tuple[int, bool]]


def replica(
    api: FakeLeases,
    clock: Clock,
    identity: str,
    *,
    gate: asyncio.Event | None = None,
    guard: Callable[[], WithdrawReason | None] = lambda: None,
) -> Replica:
    def elector(name: str) -> LeaseElector:
        return LeaseElector(
            api=api, namespace="ns", name=name, identity=identity, timings=TIMINGS, clock=clock, wallclock=clock.wall,
        )  # fmt: skip

    drains: list[tuple[int, bool]] = []
    metrics = Metrics()
    holder: list[Leadership] = []

    async def drain(shard: int) -> None:
        drains.append((shard, holder[0].acting(shard)))  # what the reconciler would see right now
        if gate is not None:
            await gate.wait()

    sharding = Sharding(
        api=api, member=elector(member_lease_name("s", identity)), prefix="s", retry_period=RETRY,
        drain=drain, metrics=metrics, wallclock=clock.wall, guard=guard,
    )  # fmt: skip
    lead = Leadership([elector(f"s-shard-{i}") for i in range(SHARDS)], sharding=sharding, clock=clock)
    holder.append(lead)
    return Replica(identity, lead, metrics, drains)


def assert_exclusive(replicas: list[Replica]) -> None:
    for shard in range(SHARDS):
        acting = [r.identity for r in replicas if r.leadership.acting(shard)]
        assert len(acting) <= 1, (shard, acting)


async def rounds(replicas: list[Replica], clock: Clock, count: int) -> None:
    for _ in range(count):
        for r in replicas:
            await r.leadership.step()
            await r.leadership.settle()
            assert_exclusive(replicas)
        clock.now += RETRY


def held(replicas: list[Replica]) -> dict[str, int]:
    return {r.identity: r.leadership.held() for r in replicas}


async def test_three_replicas_converge_to_four_shards_each_and_the_lease_holders_say_so() -> None:
    api, clock = FakeLeases(), Clock()
    replicas = [replica(api, clock, f"replica-{c}") for c in "abc"]
    await rounds(replicas, clock, 3)
    assert held(replicas) == {"replica-a": 4, "replica-b": 4, "replica-c": 4}
    for r in replicas:
        assert r.leadership.assigned == {s for s, h in api.holders().items() if h == r.identity}
        assert api.records[member_lease_name("s", r.identity)].holder == r.identity
        assert r.metrics.leases.assigned._value.get() == 4
        assert r.metrics.leases.members._value.get() == 3


async def test_a_join_stops_acting_before_releasing_and_the_newcomer_takes_the_shards_at_once() -> None:
    api, clock = FakeLeases(), Clock()
    a, b = replica(api, clock, "replica-a"), replica(api, clock, "replica-b")
    await rounds([a, b], clock, 3)
    assert held([a, b]) == {"replica-a": 6, "replica-b": 6}
    c = replica(api, clock, "replica-c")
    await rounds([a, b, c], clock, 3)  # exclusivity is checked after every step
    assert held([a, b, c]) == {"replica-a": 4, "replica-b": 4, "replica-c": 4}
    # Every drain ran after acting() had become False; every release came after the drain.
    assert a.drain + b.drain and all(not acting for _, acting in a.drain + b.drain)
    for name, before, after in api.on_write:
        if before is not None and before.holder and after is not None and after.holder != before.holder:
            assert after.holder is None, f"{name} moved from {before.holder} to {after.holder} without a release"
    assert a.metrics.leases.rebalances._value.get() == 2  # b joined, then c joined
    assert a.metrics.leases.handoff.labels(phase="release")._sum.get() == 0.0  # fake clock: no time passed
    assert c.metrics.leases.handoff.labels(phase="acquire")._sum.get() >= 0.0


async def test_handoff_order_stop_acting_then_drain_then_release() -> None:
    api, clock = FakeLeases(), Clock()
    gate = asyncio.Event()
    a = replica(api, clock, "replica-a", gate=gate)
    await rounds([a], clock, 2)
    assert a.leadership.held() == SHARDS
    b = replica(api, clock, "replica-b")
    await b.leadership.step()  # b registers as a member (it holds nothing yet: a does)
    await a.leadership.step()  # a sees b: hands off b's shards, but the drain is still waiting
    moving = sorted(b.leadership.assigned)
    for _ in range(20):  # let the handoff tasks reach their drains (a few loop iterations, no clock)
        if len(a.drain) == len(moving):
            break
        await asyncio.sleep(0)
    assert moving and [shard for shard, _ in a.drain] == moving
    for shard in moving:
        assert not a.leadership.acting(shard)  # stopped acting...
        assert api.records[f"s-shard-{shard}"].holder == "replica-a"  # ...but not released yet
        await b.leadership.step()
        assert not b.leadership.acting(shard)  # so b cannot take it before the lease expires
    gate.set()
    await a.leadership.settle()
    assert all(api.records[f"s-shard-{shard}"].holder is None for shard in moving)
    await b.leadership.step()
    assert b.leadership.held() == len(moving)
    assert all(b.leadership.fencing_token(s) == f"{s}-1" for s in moving)


async def test_a_killed_replicas_shards_move_within_the_lease_duration_plus_a_round() -> None:
    api, clock = FakeLeases(), Clock()
    replicas = [replica(api, clock, f"replica-{c}") for c in "abc"]
    await rounds(replicas, clock, 3)
    dead = replicas.pop(1)  # SIGKILL: no release, it just stops renewing
    orphaned = dead.leadership.assigned
    killed_at = clock.now
    while any(api.holders()[s] == dead.identity for s in orphaned):
        assert clock.now - killed_at <= DURATION + 2 * RETRY, "takeover too slow"
        await rounds(replicas, clock, 1)
    assert held(replicas) == {"replica-a": 6, "replica-c": 6}
    for shard in orphaned:
        owner = next(r for r in replicas if r.leadership.acting(shard))
        assert owner.leadership.fencing_token(shard) == f"{shard}-2"  # created, taken at start, taken over


async def test_a_restarted_replica_rebalances_back() -> None:
    api, clock = FakeLeases(), Clock()
    replicas = [replica(api, clock, f"replica-{c}") for c in "abc"]
    await rounds(replicas, clock, 3)
    replicas.pop(2)
    await rounds(replicas, clock, int(DURATION) + 3)
    assert held(replicas) == {"replica-a": 6, "replica-b": 6}
    replicas.append(replica(api, clock, "replica-c"))
    await rounds(replicas, clock, 3)
    assert held(replicas) == {"replica-a": 4, "replica-b": 4, "replica-c": 4}


async def test_graceful_shutdown_releases_at_once_and_leaves_the_member_set() -> None:
    api, clock = FakeLeases(), Clock()
    replicas = [replica(api, clock, f"replica-{c}") for c in "ab"]
    await rounds(replicas, clock, 3)
    leaving = replicas.pop()
    await leaving.leadership.release()
    assert leaving.leadership.held() == 0
    assert member_lease_name("s", leaving.identity) not in api.records
    assert leaving.identity not in api.holders().values()
    await rounds(replicas, clock, 1)  # no waiting for an expiry
    assert held(replicas) == {"replica-a": SHARDS}


async def test_a_member_lease_seen_first_long_after_its_renewal_is_not_a_member() -> None:
    api, clock = FakeLeases(), Clock()
    ghost = replica(api, clock, "replica-ghost")
    await rounds([ghost], clock, 1)
    clock.now += 100  # it died long ago; its Leases are still there
    a = replica(api, clock, "replica-a")
    await a.leadership.step()
    assert a.leadership.members == ("replica-a",)
    assert member_lease_name("s", "replica-ghost") not in api.records  # stale member Leases are collected


async def test_in_flight_counts_per_shard_and_drains() -> None:
    flights = InFlight()
    await flights.drained(3)  # nothing in flight: returns at once
    with flights.track(3):
        waiter = asyncio.ensure_future(flights.drained(3))
        await asyncio.sleep(0)
        assert not waiter.done()
    await asyncio.wait_for(waiter, timeout=1)
    await asyncio.wait_for(flights.drained(3), timeout=1)


async def test_a_renewal_after_the_renew_deadline_is_reported_so_the_shard_is_planned_again() -> None:
    """Passes that ran while acting() was False dropped their keys; a lost/held pair makes the process
    touch every object of the shard again, even though no step ever saw the shard not held."""
    api, clock = FakeLeases(), Clock()
    changes: list[tuple[int, bool]] = []
    a = replica(api, clock, "replica-a")
    a.leadership._on_change = lambda shard, held: changes.append((shard, held))
    await rounds([a], clock, 1)
    assert changes == [(s, True) for s in range(SHARDS)]
    changes.clear()
    clock.now += DEADLINE + 0.5  # the event loop stalled: no step in time
    assert not a.leadership.acting(0)
    await a.leadership.step()
    assert a.leadership.held() == SHARDS
    assert changes == [change for s in range(SHARDS) for change in ((s, False), (s, True))]


class StallingLeases(FakeLeases):
    """Member renewals whose answer arrives after the renew deadline (an event loop stalled by a herd)."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.stall = False

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        answer = await super().replace(namespace=namespace, name=name, record=record)
        if self.stall and "-member-" in name:
            self.clock.now += DEADLINE + RETRY
        return answer


async def test_a_replica_whose_own_member_renewal_came_late_still_counts_itself() -> None:
    # After an API server restart every replica's member renewal may come past the renew deadline. If a
    # replica then left itself out, two replicas would hand each other the same shards and nobody would act.
    clock = Clock()
    api = StallingLeases(clock)
    a, b = replica(api, clock, "replica-a"), replica(api, clock, "replica-b")
    await rounds([a, b], clock, 3)
    assert held([a, b]) == {"replica-a": 6, "replica-b": 6}
    api.stall = True
    await a.leadership.step()
    await a.leadership.settle()
    assert "replica-a" in a.leadership.members
    assert a.leadership.assigned, "a replica must keep assigning shards to itself"


async def test_held_leases_are_renewed_alongside_the_list_not_after_it() -> None:
    """A slow LIST (a loaded API server) must not age the renewals of what a replica already holds."""
    api, clock = FakeLeases(), Clock()
    a = replica(api, clock, "replica-a")
    await rounds([a], clock, 2)
    assert a.leadership.held() == SHARDS
    listing = asyncio.Event()
    order: list[str] = []
    plain_list, plain_replace = api.list, api.replace

    async def slow_list(*, namespace: str) -> dict[str, LeaseRecord]:
        order.append("list-start")
        await listing.wait()
        order.append("list-end")
        return await plain_list(namespace=namespace)

    async def replace(*, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        order.append("renew")
        return await plain_replace(namespace=namespace, name=name, record=record)

    api.list = slow_list  # type: ignore[method-assign]
    api.replace = replace  # type: ignore[method-assign]
    step = asyncio.create_task(a.leadership.step())
    for _ in range(50):
        if order.count("renew") == SHARDS + 1:  # every shard Lease and the member Lease
            break
        await asyncio.sleep(0)
    assert order[0] == "list-start" and order.count("renew") == SHARDS + 1 and "list-end" not in order
    listing.set()
    await step
    assert order.count("renew") == SHARDS + 1  # not renewed a second time after the LIST
    assert a.leadership.held() == SHARDS


async def test_a_shard_lost_to_a_conflict_is_acquired_again_from_the_list_once_free() -> None:
    """After a 409 our own record is stale: the shard must go through the LIST path, not be renewed with it
    forever (found by the SIGSTOP-zombie e2e: the resumed replica never took its shard back)."""
    api, clock = FakeLeases(), Clock()
    a = replica(api, clock, "replica-a")
    await rounds([a], clock, 2)
    name = "s-shard-0"
    api._store(name, dataclasses.replace(api.records[name], holder="someone-else"))  # taken over meanwhile
    await a.leadership.step()
    assert not a.leadership.acting(0)
    assert a.leadership.held() == SHARDS - 1
    api._store(name, dataclasses.replace(api.records[name], holder=None))  # ...and released again
    clock.now += RETRY
    await a.leadership.step()
    assert a.leadership.acting(0)
    assert api.records[name].holder == "replica-a"


async def test_a_withdrawn_replica_releases_everything_at_once_and_a_standby_takes_over_in_one_round() -> None:
    """The watchdog's second bound (or a skewed clock): stop acting, release every shard, leave the member set -
    the others take the shards at their next round, not after a lease duration; then it joins again."""
    api, clock = FakeLeases(), Clock()
    reason: list[WithdrawReason | None] = [None]
    a = replica(api, clock, "replica-a", guard=lambda: reason[0])
    b = replica(api, clock, "replica-b")
    await rounds([a, b], clock, 3)
    assert held([a, b]) == {"replica-a": 6, "replica-b": 6}
    reason[0] = WithdrawReason.LOOP_LAG
    await a.leadership.step()
    assert a.leadership.held() == 0 and a.leadership.withdrawn is WithdrawReason.LOOP_LAG
    assert "replica-a" not in api.holders().values()
    assert api.records[member_lease_name("s", "replica-a")].holder is None  # out of the member set
    assert a.metrics.registry.get_sample_value("sundial_withdrawals_total", {"reason": "loop_lag"}) == 1
    clock.now += RETRY
    await b.leadership.step()  # one round of the standby
    assert b.leadership.held() == SHARDS
    await rounds([a, b], clock, 2)  # still withdrawn: holds nothing, tries nothing
    assert held([a, b]) == {"replica-a": 0, "replica-b": SHARDS}
    assert a.metrics.registry.get_sample_value("sundial_withdrawals_total", {"reason": "loop_lag"}) == 1
    reason[0] = None  # the loop runs again
    await rounds([a, b], clock, 4)
    assert held([a, b]) == {"replica-a": 6, "replica-b": 6}
    assert a.leadership.withdrawn is None


async def test_a_replica_that_must_withdraw_from_the_start_never_acquires_and_is_no_member() -> None:
    api, clock = FakeLeases(), Clock()
    skewed = replica(api, clock, "replica-skewed", guard=lambda: WithdrawReason.CLOCK_SKEW)
    good = replica(api, clock, "replica-good")
    await rounds([skewed, good], clock, 3)
    assert held([skewed, good]) == {"replica-skewed": 0, "replica-good": SHARDS}
    assert good.leadership.members == ("replica-good",)
    assert all(record.holder != "replica-skewed" for record in api.records.values())


async def test_member_cleanup_compares_renew_times_with_the_servers_time_not_the_local_clock() -> None:
    """A replica whose own clock is 200 s ahead deletes no live member Lease: its Sharding.wallclock is the
    server's time (ServerClock.now), and so are the renewTimes the others write."""
    api, clock = FakeLeases(), Clock()
    b = replica(api, clock, "replica-b")
    await rounds([b], clock, 1)
    ahead = replica(api, clock, "replica-ahead")
    local = ahead.leadership._sharding.wallclock
    ahead.leadership._sharding.wallclock = lambda: local() + timedelta(seconds=200)
    await ahead.leadership.step()
    assert member_lease_name("s", "replica-b") not in api.records  # the local clock: a live member deleted
    api2, clock2 = FakeLeases(), Clock()
    b2 = replica(api2, clock2, "replica-b")
    await rounds([b2], clock2, 1)
    served = replica(api2, clock2, "replica-ahead")  # the server's time: what assembly wires (ServerClock.now)
    await served.leadership.step()
    assert member_lease_name("s", "replica-b") in api2.records
