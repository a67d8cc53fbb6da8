"""The lease elector (API calls and clocks around the pure decisions) against a fake compare-and-set Lease
API, on a fake monotonic clock."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from sundial.kube import errors, results
from sundial.kube.leases import LeaseRecord
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.settings import LeaseSettings


class FakeLeaseApi:
    """One Lease; every write bumps resourceVersion; a stale resourceVersion is a 409."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.fail_next_replace: errors.KubeError | None = None
        self.apply_then_fail = False

    async def get(self, *, namespace: str, name: str) -> LeaseRecord | None:
        return self.record

    async def create(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        if self.record is not None:
            return results.Conflict()
        return self._store(record)

    async def replace(self, *, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord | results.Conflict:
        if self.fail_next_replace is not None:
            error, self.fail_next_replace = self.fail_next_replace, None
            if self.apply_then_fail:  # the update went through, the response was lost
                self._store(record)
            raise error
        if self.record is None or record.resource_version != self.record.resource_version:
            return results.Conflict()
        return self._store(record)

    def _store(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = dataclasses.replace(record, resource_version=str(self.version))
        return self.record

    def someone_else_renews(self, holder: str = "other") -> None:
        assert self.record is not None
        self._store(dataclasses.replace(self.record, holder=holder, renew_time=datetime.now(UTC)))


TIMINGS = LeaseSettings(duration=15, renew_deadline=10, retry_period=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _elector(api: FakeLeaseApi, clock: Clock, identity: str = "me") -> LeaseElector:
    return LeaseElector(
        api=api, namespace="ns", name="sundial-shard-0", identity=identity, timings=TIMINGS, clock=clock
    )


async def test_creates_a_missing_lease_and_holds_it() -> None:
    api, clock = FakeLeaseApi(), Clock()
    elector = _elector(api, clock)
    assert await elector.tick()
    assert elector.holding
    assert api.record is not None and api.record.holder == "me"
    assert elector.transitions == 0


async def test_renewing_its_own_lease_keeps_the_transitions() -> None:
    api, clock = FakeLeaseApi(), Clock()
    elector = _elector(api, clock)
    await elector.tick()
    clock.now += 2
    assert await elector.tick()
    assert elector.transitions == 0
    assert api.version == 2


async def test_stops_acting_once_renewals_fail_past_the_renew_deadline() -> None:
    api, clock = FakeLeaseApi(), Clock()
    elector = _elector(api, clock)
    await elector.tick()
    clock.now += 9.9
    assert elector.holding
    api.fail_next_replace = errors.TransientError(code=503, reason="Unavailable", message="")
    assert await elector.tick()  # still within the deadline of the last success
    clock.now += 0.2
    assert not elector.holding


async def test_waits_a_full_lease_duration_after_it_last_saw_a_change_before_taking_over() -> None:
    api, clock = FakeLeaseApi(), Clock()
    other = _elector(api, clock, identity="other")
    await other.tick()
    me = _elector(api, clock)
    assert not await me.tick()
    clock.now += 14
    assert not await me.tick()
    clock.now += 1.5
    assert await me.tick()
    assert api.record is not None and api.record.holder == "me"
    assert me.transitions == 1
    assert not other.holding


async def test_never_takes_over_while_the_holder_keeps_renewing() -> None:
    api, clock = FakeLeaseApi(), Clock()
    other = _elector(api, clock, identity="other")
    await other.tick()
    me = _elector(api, clock)
    for _ in range(20):
        clock.now += 2
        await other.tick()
        assert not await me.tick()
    assert api.record is not None and api.record.holder == "other"


async def test_a_released_lease_is_taken_over_at_once() -> None:
    api, clock = FakeLeaseApi(), Clock()
    other = _elector(api, clock, identity="other")
    await other.tick()
    await other.release()
    assert not other.holding
    assert api.record is not None and api.record.holder is None and api.record.duration_seconds == 1
    me = _elector(api, clock)
    assert await me.tick()
    assert me.transitions == 1


async def test_a_conflict_means_not_holding_until_the_next_read() -> None:
    api, clock = FakeLeaseApi(), Clock()
    me = _elector(api, clock)
    await me.tick()

    async def stale_get(*, namespace: str, name: str) -> LeaseRecord | None:
        assert api.record is not None
        return dataclasses.replace(api.record, resource_version="0")

    api.get = stale_get  # type: ignore[method-assign]
    assert not await me.tick()
    assert not me.holding


async def test_an_update_that_succeeded_despite_a_timeout_is_recognised_on_the_next_read() -> None:
    api, clock = FakeLeaseApi(), Clock()
    other = _elector(api, clock, identity="other")
    await other.tick()
    await other.release()
    me = _elector(api, clock)
    api.fail_next_replace = errors.TransientError(code=0, reason="TimeoutError", message="")
    api.apply_then_fail = True
    assert not await me.tick()  # outcome unknown: do not act
    assert api.record is not None and api.record.holder == "me" and api.record.transitions == 1
    clock.now += 2
    assert await me.tick()  # holder-is-me: a renewal, not a second transition
    assert me.transitions == 1


async def test_a_record_read_by_the_caller_saves_the_get() -> None:
    api, clock = FakeLeaseApi(), Clock()
    me = _elector(api, clock)
    await me.tick()

    async def no_get(*, namespace: str, name: str) -> LeaseRecord | None:
        raise AssertionError("tick(current=...) must not read again")

    api.get = no_get  # type: ignore[method-assign]
    clock.now += 2
    assert await me.tick(current=api.record, started=clock.now)


async def test_observing_elsewhere_keeps_the_expiry_clock_running() -> None:
    api, clock = FakeLeaseApi(), Clock()
    other = _elector(api, clock, identity="other")
    await other.tick()
    me = _elector(api, clock)
    me.observe(api.record, clock.now)  # seen in a LIST, never ticked
    clock.now += 15  # a full lease duration without a change
    assert await me.tick()  # no second lease duration to wait


async def test_release_after_stop_rereads_on_a_conflict_and_empties_only_its_own_lease() -> None:
    api, clock = FakeLeaseApi(), Clock()
    me = _elector(api, clock)
    await me.tick()
    api.fail_next_replace, api.apply_then_fail = errors.TransientError(code=0, reason="TimeoutError", message=""), True
    clock.now += 2
    await me.tick()  # went through, answer lost: our record's resourceVersion is stale now
    me.stop()
    assert not me.holding
    assert await me.release()
    assert api.record is not None and api.record.holder is None


async def test_release_never_touches_a_lease_someone_else_took() -> None:
    api, clock = FakeLeaseApi(), Clock()
    me = _elector(api, clock)
    await me.tick()
    api.someone_else_renews("other")
    assert await me.release()
    assert api.record is not None and api.record.holder == "other"
