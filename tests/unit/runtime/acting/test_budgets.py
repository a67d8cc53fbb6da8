"""The namespaces' budgets of catch-up and backfill creates (DESIGN §11.1): burst, rate, reservations in
turn, given back when not used; the clock is stepped by hand."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from sundial.kube import errors, results
from sundial.model.status import ScheduledJobStatus
from sundial.planner.plans import Plan
from sundial.runtime.acting.budgets import STALE, NamespaceBudgets, NoBudgets
from sundial.runtime.acting.reconciler import Reconciler
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.watch.store import Store

from .test_reconciler import KEY, NOW, Elector, FakeApi, FakeEvents, FakePlanner, body, one_shard

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
LATER = datetime(2026, 6, 1, 13, 0, tzinfo=UTC)


def plan(starts: int = 0, *, waiting: bool = False, wake: datetime | None = LATER) -> Plan:
    return Plan(
        status=ScheduledJobStatus(), write_status=True, actions=(), wake_at=wake,
        backlog_creates=starts, backlog_waiting=waiting,
    )  # fmt: skip


def one_pass(
    budgets: NamespaceBudgets, key: tuple[str, str], now: datetime, *, want: int
) -> tuple[int, datetime | None]:
    """A pass that starts what it may of WANT runs, claims them and waits if some are left."""
    started = min(want, budgets.available(key, now))
    result = plan(started, waiting=started < want)
    budgets.take(key, result, now)
    budgets.commit(key)
    return started, budgets.settle(key, result, now)


def test_a_full_bucket_gives_its_burst_at_most_a_pass_at_a_time_then_its_rate() -> None:
    budgets = NamespaceBudgets(rate=2, burst=15, per_pass=10)
    key = ("a", "x")
    assert budgets.available(key, T0) == 10
    assert one_pass(budgets, key, T0, want=10)[0] == 10
    assert budgets.available(key, T0) == 5
    assert one_pass(budgets, key, T0, want=5)[0] == 5
    assert budgets.available(key, T0) == 0
    assert budgets.available(key, T0 + timedelta(seconds=0.49)) == 0
    assert budgets.available(key, T0 + timedelta(seconds=0.5)) == 1
    assert budgets.available(key, T0 + timedelta(seconds=3)) == 6
    assert budgets.available(key, T0 + timedelta(hours=1)) == 10  # never more than a pass, never more than burst


def test_namespaces_have_buckets_of_their_own() -> None:
    budgets = NamespaceBudgets(rate=1, burst=3)
    assert one_pass(budgets, ("hostile", "x"), T0, want=50)[0] == 3
    assert budgets.available(("hostile", "y"), T0) == 0
    assert budgets.available(("quiet", "x"), T0) == 3


def test_what_an_unclaimed_plan_took_is_given_back() -> None:
    budgets = NamespaceBudgets(rate=1, burst=4)
    key = ("a", "x")
    budgets.take(key, plan(4), T0)
    assert budgets.available(("a", "other"), T0) == 0  # held while the claim is written
    budgets.release(key)  # the claim was refused (a conflict) or the pass failed
    assert budgets.available(("a", "other"), T0) == 4
    budgets.take(key, plan(3), T0)
    assert budgets.available(key, T0) == 4  # planned again after a conflict: what the first plan took counts
    budgets.take(key, plan(2), T0)  # and comes back first
    budgets.commit(key)
    budgets.release(key)  # committed: nothing to give back
    assert budgets.available(("a", "other"), T0) == 2


def test_waiting_objects_reserve_the_next_tokens_in_turn_and_each_is_woken_for_its_own() -> None:
    budgets = NamespaceBudgets(rate=4, burst=2)
    keys = [("a", f"sj-{i}") for i in range(4)]
    assert one_pass(budgets, keys[0], T0, want=5) == (2, T0 + timedelta(seconds=0.25))
    wakes = [one_pass(budgets, key, T0, want=5)[1] for key in keys[1:]]
    assert wakes == [T0 + timedelta(seconds=0.25 * i) for i in (2, 3, 4)]
    assert budgets.waiting("a") == 4
    # At its time a reserved token is its holder's, not anybody else's.
    first = T0 + timedelta(seconds=0.25)
    assert budgets.available(keys[1], first) == 0 and budgets.available(("a", "newcomer"), first) == 0
    assert one_pass(budgets, keys[0], first, want=3) == (1, T0 + timedelta(seconds=1.25))  # at the back again
    # Woken early (a change) before its token is due: nothing, and the reservation is kept.
    assert one_pass(budgets, keys[3], first, want=3) == (0, T0 + timedelta(seconds=1))


def test_a_reservation_no_longer_needed_is_given_to_the_next_comer() -> None:
    budgets = NamespaceBudgets(rate=1, burst=1)
    assert one_pass(budgets, ("a", "x"), T0, want=2) == (1, T0 + timedelta(seconds=1))
    assert one_pass(budgets, ("a", "y"), T0, want=1) == (0, T0 + timedelta(seconds=2))
    budgets.settle(("a", "y"), plan(), T0)  # y's backfill was cancelled: it waits no more
    assert budgets.waiting("a") == 1
    assert one_pass(budgets, ("a", "x"), T0 + timedelta(seconds=1), want=1) == (1, LATER)
    assert budgets.available(("a", "z"), T0 + timedelta(seconds=2)) == 1  # y's slot came back


def test_a_reservation_left_unclaimed_too_long_is_dropped_and_the_object_reserves_anew() -> None:
    budgets = NamespaceBudgets(rate=1, burst=1)
    one_pass(budgets, ("a", "x"), T0, want=1)
    assert one_pass(budgets, ("a", "y"), T0, want=1) == (0, T0 + timedelta(seconds=1))
    late = T0 + timedelta(seconds=1) + STALE + timedelta(seconds=1)
    started, wake = one_pass(budgets, ("a", "y"), late, want=2)
    assert started == 1 and wake == late + timedelta(seconds=1)  # the free token, not the stale one as well


def test_forgetting_an_object_gives_its_reservation_back() -> None:
    budgets = NamespaceBudgets(rate=1, burst=1)
    one_pass(budgets, ("a", "x"), T0, want=1)
    one_pass(budgets, ("a", "y"), T0, want=1)
    budgets.forget(("a", "y"))
    assert budgets.waiting("a") == 0
    assert budgets.available(("a", "z"), T0 + timedelta(seconds=1)) == 1


def test_a_full_idle_namespace_keeps_no_state() -> None:
    budgets = NamespaceBudgets(rate=10, burst=5)
    one_pass(budgets, ("a", "x"), T0, want=5)
    assert budgets._buckets
    one_pass(budgets, ("a", "x"), T0 + timedelta(seconds=1), want=0)
    assert budgets._buckets == {}


def test_started_runs_never_exceed_burst_plus_rate_times_elapsed() -> None:
    rate, burst = 3.0, 7
    budgets = NamespaceBudgets(rate=rate, burst=burst)
    chance = random.Random(21)
    keys = [("a", f"sj-{i}") for i in range(12)]
    wakes = dict.fromkeys(keys, T0)
    now, started = T0, 0
    while now < T0 + timedelta(seconds=120):
        now += timedelta(milliseconds=chance.randint(1, 200))
        key = chance.choice(keys)
        if chance.random() < 0.7 and wakes[key] > now:
            continue  # mostly passes at their wake-up; some early (a change to the object)
        got, wake = one_pass(budgets, key, now, want=chance.randint(0, 4))
        started += got
        wakes[key] = wake or LATER
        assert started <= burst + rate * (now - T0).total_seconds() + 1e-9
    assert started >= rate * 100  # and the budget is really given out


def test_no_budgets_limit_nothing() -> None:
    none = NoBudgets()
    assert none.available(("a", "x"), T0) is None
    assert none.settle(("a", "x"), plan(waiting=True), T0) == LATER


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (float("nan"), 1), (float("inf"), 1), (1, 0)])
def test_a_bad_rate_or_burst_is_refused(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="rate must be a finite number > 0"):
        NamespaceBudgets(rate=rate, burst=burst)


# The reconciler's side: what a pass is told, what it takes and what it gives back.


def reconciling(plans: list[Plan], budgets: NamespaceBudgets) -> tuple[Reconciler, FakeApi, FakePlanner]:
    api, planner = FakeApi(), FakePlanner(plans)
    store = Store()
    store.put_scheduled_job(body())

    async def no_sleep(_: float) -> None:
        return None

    rec = Reconciler(store=store, api=api, leadership=one_shard(Elector()), planner=planner, events=FakeEvents(api),
                     metrics=Metrics(), clock=lambda: NOW, sleep=no_sleep, budgets=budgets)  # fmt: skip
    return rec, api, planner


async def test_a_pass_is_told_its_namespaces_budget_and_spends_what_its_claim_started() -> None:
    budgets = NamespaceBudgets(rate=1, burst=3)
    rec, api, planner = reconciling([plan(3)], budgets)
    api.write_results = [results.Conflict()]  # the first claim loses: planned again from a fresh read
    assert await rec.reconcile(KEY) == LATER
    assert [seen[2].backlog_creates for seen in planner.seen] == [3, 3]
    assert budgets.available(("team-a", "other"), NOW) == 0  # the second claim was written: spent once


async def test_a_pass_that_fails_before_its_claim_gives_its_tokens_back() -> None:
    budgets = NamespaceBudgets(rate=1, burst=3)
    rec, api, _ = reconciling([plan(2)], budgets)

    async def refused(**_: object) -> results.WriteResult:
        raise errors.TransientError(code=503, reason="ServiceUnavailable", message="try later")

    api.write_status = refused  # type: ignore[method-assign]
    with pytest.raises(errors.TransientError):
        await rec.reconcile(KEY)
    assert budgets.available(("team-a", "other"), NOW) == 3


async def test_a_pass_whose_runs_wait_is_woken_when_its_reserved_token_is_due() -> None:
    budgets = NamespaceBudgets(rate=2, burst=1)
    rec, _, _ = reconciling([plan(1, waiting=True)], budgets)
    assert await rec.reconcile(KEY) == NOW + timedelta(seconds=0.5)
    assert budgets.waiting("team-a") == 1
    rec.forget(KEY)
    assert budgets.waiting("team-a") == 0
