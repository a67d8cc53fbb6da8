"""A pass starts at most ``Context.creates_per_pass`` Jobs (DESIGN §11.1): catch-up and backfill share it.

The rest waits in ``status.buffered`` (catch-up) or in the backfill's progress, the wake-up is "now", and
the next passes start them - every time exactly once, every missed time counted once, as in one big pass.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from sundial.model import Trigger, names
from sundial.model.resource import ScheduledJob
from sundial.planner.actions import CreateJob
from sundial.planner.observed import ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import CREATES_PER_PASS, Plan
from sundial.schedule import format_rfc3339

from .builders import context, counters, creates, hours_after, job, make_obj, name_at, raw_spec, status, with_status

T = hours_after(0)  # 10:00; the hourly object's cursor is set by each test
NOW = T + timedelta(minutes=1)


def passes(obj: ScheduledJob, *, now: datetime = NOW, limit: int = 50) -> list[Plan]:
    """Plan again and again (each pass sees the Jobs of the ones before) until the wake-up is not "now"."""
    plans: list[Plan] = []
    jobs: list[ObservedJob] = []
    for _ in range(limit):
        result = plan(obj, jobs, context(now))
        plans.append(result)
        jobs += [job(name) for name in creates(result)]
        obj = with_status(obj, result.status)
        if result.wake_at != now:
            return plans
        now += timedelta(seconds=1)
    raise AssertionError(f"still coming back at once after {limit} passes")


def catching_up(max_runs: int, *, due: int, policy: str = "Allow", **fields: Any) -> ScheduledJob:
    spec = raw_spec(catchUp={"policy": "All", "maxRuns": max_runs}, concurrencyPolicy=policy, **fields)
    return make_obj(spec, status=status(schedule_cursor=T - timedelta(hours=due)))


def all_creates(plans: list[Plan]) -> list[CreateJob]:
    return [a for p in plans for a in p.actions if isinstance(a, CreateJob)]


def test_a_big_catch_up_is_spread_over_passes_that_come_back_at_once() -> None:
    plans = passes(catching_up(50, due=35))
    assert [len(creates(p)) for p in plans] == [10, 10, 10, 5]
    assert CREATES_PER_PASS == 10
    first = plans[0]
    assert first.wake_at == NOW and len(first.status.buffered) == 25
    assert first.status.schedule_cursor == T  # every due time is handled (run now or kept to run next)
    made = all_creates(plans)
    expected = [T - timedelta(hours=h) for h in range(34, -1, -1)]
    assert [a.scheduled_time for a in made] == expected  # oldest first, each exactly once
    assert [a.manifest["metadata"]["name"] for a in made] == [name_at(t) for t in expected]
    triggers = [a.manifest["metadata"]["annotations"][names.TRIGGER_ANNOTATION] for a in made]
    assert triggers == [Trigger.CATCH_UP] * 34 + [Trigger.SCHEDULE]
    last = plans[-1].status
    assert not last.buffered and len(last.active) == 35
    assert last.counters.missed == 0 and last.counters.skipped == 0 and last.counters.buffered == 0
    assert last.counters.runs == 35


def test_times_beyond_max_runs_are_missed_once_in_the_first_pass() -> None:
    plans = passes(catching_up(20, due=30))
    assert [len(creates(p)) for p in plans] == [10, 10]
    assert counters(plans[0])["missed"] == 10
    assert plans[-1].status.counters.missed == 10 and plans[-1].status.counters.runs == 20


def test_kept_runs_still_count_against_the_active_run_bound() -> None:
    plans = passes(catching_up(1000, due=150))
    assert sum(len(creates(p)) for p in plans) == 100  # MAX_ACTIVE, as in one pass
    assert plans[0].status.counters.skipped == 50 and plans[-1].status.counters.skipped == 50


def test_a_pass_of_a_deleted_object_keeps_the_runs_it_had_no_create_for() -> None:
    first = plan(catching_up(50, due=15), [], context(NOW))
    assert len(creates(first)) == 10 and len(first.status.buffered) == 5
    obj = catching_up(50, due=15)
    deleting = make_obj(obj.raw_spec, status=first.status, deleting=True)
    again = plan(deleting, [job(name) for name in creates(first)], context(NOW + timedelta(seconds=1)))
    assert not creates(again) and len(again.status.buffered) == 5 and again.wake_at != NOW + timedelta(seconds=1)


def test_other_policies_start_one_run_per_pass_as_before() -> None:
    forbid = plan(catching_up(50, due=35, policy="Forbid"), [], context(NOW))
    assert len(creates(forbid)) == 1 and not forbid.status.buffered


def backfilling(hours: int, **request: Any) -> ScheduledJob:
    body = {"token": "b1", "from": format_rfc3339(T - timedelta(hours=hours)), "to": format_rfc3339(T), **request}
    return make_obj(
        raw_spec(concurrencyPolicy="Allow"),
        status=status(),
        annotations={names.BACKFILL_ANNOTATION: json.dumps(body)},
    )


def test_a_backfill_of_a_hundred_runs_takes_ten_passes_with_its_progress_in_status() -> None:
    plans = passes(backfilling(99, maxRuns=100))
    per_pass = [len(creates(p)) for p in plans]
    assert per_pass[:10] == [10] * 10 and sum(per_pass) == 100
    progress = [p.status.backfills[0] for p in plans]
    assert [b.started for b in progress[:10]] == [10 * i for i in range(1, 11)]
    assert progress[0].next_time == T - timedelta(hours=89) and not progress[0].done
    assert progress[-1].done and progress[-1].started == 100
    made = [a.scheduled_time for a in all_creates(plans)]
    assert sorted(made) == [T - timedelta(hours=h) for h in range(99, -1, -1)] and len(set(made)) == 100
    assert {a.manifest["metadata"]["annotations"][names.TRIGGER_ANNOTATION] for a in all_creates(plans)} == {
        Trigger.BACKFILL
    }


def test_catch_up_and_backfill_share_one_pass_budget_scheduled_runs_first() -> None:
    spec = raw_spec(catchUp={"policy": "All", "maxRuns": 50}, concurrencyPolicy="Allow")
    body = {
        "token": "b1",
        "from": format_rfc3339(T - timedelta(hours=40)),
        "to": format_rfc3339(T - timedelta(hours=30)),
    }
    obj = make_obj(
        spec,
        status=status(schedule_cursor=T - timedelta(hours=4)),
        annotations={names.BACKFILL_ANNOTATION: json.dumps(body)},
    )
    first = plan(obj, [], context(NOW))
    made = [a for a in first.actions if isinstance(a, CreateJob)]
    assert len(made) == CREATES_PER_PASS
    due = [T - timedelta(hours=h) for h in range(3, -1, -1)]
    assert [a.scheduled_time for a in made[:4]] == due  # the catch-up and the 10:00 run go first
    assert all(a.scheduled_time <= T - timedelta(hours=30) for a in made[4:])  # backfill gets the rest: 6
    assert first.status.backfills[0].started == 6 and first.wake_at == NOW
    rest = passes(with_status(obj, first.status), now=NOW + timedelta(seconds=1))
    assert sum(len(creates(p)) for p in rest) == 5 and rest[-1].status.backfills[0].done
