"""Catch-up and backfill runs start only as far as ``Context.backlog_creates`` goes (the namespace's budget,
DESIGN §11.1); the scheduled run, the run due just before it (late by one period), catch-up runs due within
``LAG_ALLOWANCE`` of the pass (the operator's lag), manual runs and retries never wait for it.

The runs the budget holds back wait (``status.buffered``, the backfill's progress), the plan says so
(``Plan.backlog_waiting``) and does not come back "now" for them; the next passes with a budget start
them - every time exactly once, as without a budget.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial.model import Trigger, names
from sundial.model.resource import ScheduledJob
from sundial.planner.actions import CreateJob
from sundial.planner.observed import ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import Plan
from sundial.schedule import format_rfc3339

from .builders import context, creates, hours_after, job, make_obj, pending_retry, raw_spec, status, with_status

T = hours_after(0)  # 10:00, an hourly schedule's time due now
NOW = T + timedelta(minutes=1)


def catching_up(due: int, *, policy: str = "Allow", max_runs: int = 50, **fields: Any) -> ScheduledJob:
    """An hourly object whose cursor is DUE hours back: DUE - 1 catch-up runs and the 10:00 run are due."""
    spec = raw_spec(catchUp={"policy": "All", "maxRuns": max_runs}, concurrencyPolicy=policy, **fields)
    return make_obj(spec, status=status(schedule_cursor=T - timedelta(hours=due)))


def backfilling(hours: int, **spec: Any) -> ScheduledJob:
    body = {
        "token": "b1",
        "from": format_rfc3339(T - timedelta(hours=hours)),
        "to": format_rfc3339(T - timedelta(hours=1)),
    }
    return make_obj(raw_spec(**spec), status=status(), annotations={names.BACKFILL_ANNOTATION: json.dumps(body)})


def made(result: Plan) -> list[tuple[datetime, str]]:
    return [
        (a.scheduled_time, a.manifest["metadata"]["annotations"][names.TRIGGER_ANNOTATION])
        for a in result.actions
        if isinstance(a, CreateJob)
    ]


def test_with_the_budget_empty_the_scheduled_run_and_the_one_late_by_a_period_start_the_older_ones_wait() -> None:
    result = plan(catching_up(6), [], context(NOW, backlog_creates=0))
    assert made(result) == [(T - timedelta(hours=1), Trigger.CATCH_UP), (T, Trigger.SCHEDULE)]
    assert result.backlog_creates == 0 and result.backlog_waiting
    assert [b.scheduled_time for b in result.status.buffered] == [T - timedelta(hours=h) for h in range(5, 1, -1)]
    assert result.wake_at != NOW  # not "now": the runtime wakes it when the budget has a create for it
    assert result.status.counters.buffered == 0 and result.status.counters.missed == 0


def test_a_pass_starts_as_many_catch_up_runs_as_the_budget_holds_oldest_first() -> None:
    result = plan(catching_up(6), [], context(NOW, backlog_creates=2))
    hours = [h for h, _ in made(result)]
    assert hours == [T - timedelta(hours=h) for h in (5, 4, 1, 0)]
    assert result.backlog_creates == 2 and result.backlog_waiting
    assert [b.scheduled_time for b in result.status.buffered] == [T - timedelta(hours=3), T - timedelta(hours=2)]


def test_a_run_late_by_one_period_as_under_load_does_not_draw() -> None:
    result = plan(catching_up(2), [], context(NOW, backlog_creates=0))
    assert made(result) == [(T - timedelta(hours=1), Trigger.CATCH_UP), (T, Trigger.SCHEDULE)]
    assert result.backlog_creates == 0 and not result.backlog_waiting and not result.status.buffered


def test_catch_up_runs_within_the_lag_allowance_do_not_draw_the_older_ones_do() -> None:
    """Every 10 s, the cursor 100 s behind a pass at T: 09:58:30 .. 09:59:50 are catch-up runs and 10:00 the
    scheduled one. Those due within LAG_ALLOWANCE (09:59:00 on) are the operator's lag and start with the
    budget empty; 09:58:30 .. 09:58:50 draw and wait."""
    spec = raw_spec(schedule="*/10 * * * * *", catchUp={"policy": "All", "maxRuns": 50})
    obj = make_obj(spec, status=status(schedule_cursor=T - timedelta(seconds=100), next_schedule_time=None))
    result = plan(obj, [], context(T, backlog_creates=0))
    started = [t for t, _ in made(result)]
    assert started == [T - timedelta(seconds=s) for s in range(60, -1, -10)]
    assert [b.scheduled_time for b in result.status.buffered] == [T - timedelta(seconds=s) for s in (90, 80, 70)]
    assert result.backlog_creates == 0 and result.backlog_waiting


def passes(obj: ScheduledJob, budgets: list[int], *, now: datetime = NOW) -> list[Plan]:
    """One pass per budget (each a second later, seeing the Jobs of the ones before)."""
    plans: list[Plan] = []
    jobs: list[ObservedJob] = []
    for budget in budgets:
        result = plan(obj, jobs, context(now, backlog_creates=budget))
        plans.append(result)
        jobs += [job(name) for name in creates(result)]
        obj = with_status(obj, result.status)
        now += timedelta(seconds=1)
    return plans


def test_held_back_runs_start_in_later_passes_each_exactly_once() -> None:
    plans = passes(catching_up(30), [3, 0, 4, 0, 0, 10, 10, 10])
    assert [p.backlog_creates for p in plans] == [3, 0, 4, 0, 0, 10, 10, 1]  # 28: all but 09:00 and 10:00
    assert [p.backlog_waiting for p in plans] == [True] * 7 + [False]
    times = [t for p in plans for t, _ in made(p)]
    assert sorted(times) == [T - timedelta(hours=h) for h in range(29, -1, -1)] and len(set(times)) == 30
    last = plans[-1].status
    assert not last.buffered and last.counters.runs == 30 and last.counters.skipped == 0


def test_runs_held_only_by_the_pass_bound_come_back_at_once() -> None:
    result = plan(catching_up(15), [], context(NOW, backlog_creates=20))
    assert result.backlog_creates == 10 and not result.backlog_waiting and result.wake_at == NOW


def test_backfill_runs_draw_from_the_same_budget_after_the_catch_up() -> None:
    spec = raw_spec(catchUp={"policy": "All", "maxRuns": 50}, concurrencyPolicy="Allow")
    body = {
        "token": "b1",
        "from": format_rfc3339(T - timedelta(hours=40)),
        "to": format_rfc3339(T - timedelta(hours=30)),
    }
    obj = make_obj(spec, status=status(schedule_cursor=T - timedelta(hours=3)),
                   annotations={names.BACKFILL_ANNOTATION: json.dumps(body)})  # fmt: skip
    result = plan(obj, [], context(NOW, backlog_creates=4))
    triggers = [trigger for _, trigger in made(result)]
    assert triggers == [Trigger.CATCH_UP] * 2 + [Trigger.SCHEDULE] + [Trigger.BACKFILL] * 3  # 08:00 draws, 09:00 not
    assert result.backlog_creates == 4 and result.backlog_waiting and result.status.backfills[0].started == 3


def test_a_backfill_waits_for_the_budget_with_its_progress_unchanged() -> None:
    result = plan(backfilling(10), [], context(NOW, backlog_creates=0))
    assert made(result) == [] and result.backlog_waiting and result.wake_at != NOW
    [progress] = result.status.backfills
    assert progress.started == 0 and progress.next_time == T - timedelta(hours=10) and not progress.done
    plans = passes(with_status(backfilling(10), result.status), [3, 0, 10])
    assert [p.backlog_creates for p in plans] == [3, 0, 7] and plans[-1].status.backfills[0].done
    assert sorted(t for p in plans for t, _ in made(p)) == [T - timedelta(hours=h) for h in range(10, 0, -1)]


def test_retries_and_manual_runs_never_draw_from_the_budget() -> None:
    retry = pending_retry(T - timedelta(hours=2), not_before=NOW - timedelta(seconds=5), trigger=Trigger.CATCH_UP)
    obj = make_obj(raw_spec(), status=status(pending_retries=(retry,)),
                   annotations={names.TRIGGER_ANNOTATION: "now-please"})  # fmt: skip
    result = plan(obj, [], context(NOW, backlog_creates=0))
    attempts = [(a.scheduled_time, a.attempt) for a in result.actions if isinstance(a, CreateJob)]
    assert (T - timedelta(hours=2), 2) in attempts and len(attempts) == 2  # the retry and the manual run
    assert result.backlog_creates == 0 and not result.backlog_waiting


def test_under_forbid_a_run_waiting_for_the_budget_lets_a_later_one_start_and_is_skipped_as_an_overlap() -> None:
    first = plan(catching_up(4, policy="Forbid"), [], context(NOW, backlog_creates=0))
    assert made(first) == [(T - timedelta(hours=1), Trigger.CATCH_UP)] and first.backlog_waiting
    assert first.status.counters.skipped == 1  # 10:00 overlaps 09:00, which needed no budget
    [again] = passes(with_status(catching_up(4, policy="Forbid"), first.status), [5], now=NOW + timedelta(seconds=1))
    assert made(again) == [] and not again.status.buffered and again.status.counters.skipped == 3


@pytest.mark.parametrize(("policy", "kept"), [("BufferOne", 1), ("BufferAll", 4)])
def test_under_a_buffer_policy_the_run_waiting_for_the_budget_stands_where_the_active_one_would(
    policy: str, kept: int
) -> None:
    result = plan(catching_up(5, policy=policy), [], context(NOW, backlog_creates=0))
    assert made(result) == [] and result.backlog_waiting
    assert len(result.status.buffered) == 1 + kept  # the head waits for the budget, the buffer holds its full count
    assert result.status.counters.buffered == kept and result.status.counters.skipped == 4 - kept
    [started] = passes(with_status(catching_up(5, policy=policy), result.status), [1], now=NOW + timedelta(seconds=1))
    assert made(started) == [(T - timedelta(hours=4), Trigger.CATCH_UP)] and len(started.status.buffered) == kept


def test_without_a_namespace_budget_nothing_waits_for_one() -> None:
    result = plan(catching_up(6), [], context(NOW))
    assert len(made(result)) == 6 and result.backlog_creates == 4 and not result.backlog_waiting
