"""Rule 7: cron nominal times become due, fire after their jitter, and go through catch-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from sundial import schedule
from sundial.model import Trigger
from sundial.planner.planning import plan
from sundial.planner.plans import RESERVE_AHEAD

from .builders import (
    UID,
    context,
    counters,
    created,
    creates,
    hours_after,
    just_after_the_hour,
    just_after_the_hour_in_zone,
    just_before_the_hour,
    make_obj,
    name_at,
    raw_spec,
    reasons,
    seconds_after,
    status,
    top_of_the_hour,
    top_of_the_hour_in_zone,
)

T = top_of_the_hour()
AN_HOUR_AGO = hours_after(-1)
JITTER_OFFSET = schedule.jitter_offset(uid=UID, nominal=T, jitter=timedelta(minutes=30))


@dataclass(frozen=True)
class Case:
    id: str
    # spec
    spec: dict[str, Any] = field(default_factory=dict)
    # status
    cursor: datetime | None = AN_HOUR_AGO
    # environment
    now: datetime = T
    max_enumerated_runs: int = 10_000
    # expectations
    expect_runs: tuple[tuple[datetime, Trigger], ...] = ()
    expect_missed: int = 0
    expect_missed_events: int = 0
    expect_cursor: datetime | None = None
    expect_next: datetime | None = None
    expect_wake: datetime | None = None


CASES = [
    Case(
        id="just before the hour nothing is due and the planner wakes at the hour",
        now=just_before_the_hour(),
        expect_cursor=hours_after(-1),
        expect_next=T,
        expect_wake=T,
    ),
    Case(
        id="just after the hour the hourly run starts with trigger schedule",
        now=just_after_the_hour(),
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_cursor=T,
        expect_next=hours_after(1),
        expect_wake=just_after_the_hour() + timedelta(seconds=15),
    ),
    Case(
        id="on a first pass the cursor starts at the creation time",
        cursor=None,
        now=just_after_the_hour(),
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_missed=1,
        expect_missed_events=1,
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="with policy All every due run starts oldest first and the older one is a catch-up",
        spec={"catchUp": {"policy": "All"}},
        cursor=hours_after(-2),
        now=just_after_the_hour(),
        expect_runs=((hours_after(-1), Trigger.CATCH_UP), (T, Trigger.SCHEDULE)),
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="with policy All and maxRuns 2 of 4 due runs the newer two are missed",
        spec={"catchUp": {"policy": "All", "maxRuns": 2}},
        cursor=hours_after(-4),
        now=just_after_the_hour(),
        expect_runs=((hours_after(-3), Trigger.CATCH_UP), (hours_after(-2), Trigger.CATCH_UP)),
        expect_missed=2,
        expect_missed_events=2,
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="with policy Latest only the newest of 3 due runs starts",
        cursor=hours_after(-3),
        now=just_after_the_hour(),
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_missed=2,
        expect_missed_events=2,
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="a run later than the catch-up window is missed and never run",
        spec={"catchUp": {"window": "10m"}},
        now=seconds_after(11 * 60),
        expect_missed=1,
        expect_missed_events=1,
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="more than ten missed runs give ten events and one summary",
        spec={"catchUp": {"window": "1m"}},
        cursor=hours_after(-13),
        now=seconds_after(11 * 60),
        expect_missed=13,
        expect_missed_events=11,
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="a jittered run does not fire before its offset",
        spec={"jitter": "30m"},
        now=T + JITTER_OFFSET - timedelta(microseconds=1),
        expect_cursor=hours_after(-1),
        expect_next=T,
        expect_wake=T + JITTER_OFFSET,
    ),
    Case(
        id="a jittered run fires at its offset",
        spec={"jitter": "30m"},
        now=T + JITTER_OFFSET,
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="no run fires before startTime",
        spec={"startTime": schedule.format_rfc3339(hours_after(1))},
        now=just_after_the_hour(),
        expect_cursor=hours_after(-1),
        expect_next=hours_after(1),
        expect_wake=hours_after(1) - RESERVE_AHEAD,  # to reserve the first run ahead of it (DESIGN §7.5)
    ),
    Case(
        id="a nominal time equal to startTime fires on the first pass",
        spec={"startTime": schedule.format_rfc3339(T)},
        cursor=None,
        now=just_after_the_hour(),
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_cursor=T,
        expect_next=hours_after(1),
    ),
    Case(
        id="no run fires after endTime and there is no next run",
        spec={"endTime": schedule.format_rfc3339(seconds_after(1))},
        now=just_after_the_hour(),
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_cursor=T,
        expect_next=None,
        expect_wake=just_after_the_hour() + timedelta(seconds=15),
    ),
    Case(
        id="a daily schedule fires at ten o'clock in its time zone",
        spec={"schedule": "0 10 * * *", "timeZone": "Asia/Kolkata"},
        cursor=created() - timedelta(days=1),
        now=just_after_the_hour_in_zone("Asia/Kolkata"),
        expect_runs=((top_of_the_hour_in_zone("Asia/Kolkata"), Trigger.SCHEDULE),),
        expect_cursor=top_of_the_hour_in_zone("Asia/Kolkata"),
        expect_next=top_of_the_hour_in_zone("Asia/Kolkata") + timedelta(days=1),
    ),
    Case(
        id="a bounded enumeration after a long outage misses the older times without listing them",
        spec={"schedule": "* * * * *", "catchUp": {"window": "2m"}},
        cursor=hours_after(-5),
        now=T,
        max_enumerated_runs=5,
        expect_runs=((T, Trigger.SCHEDULE),),
        expect_missed=4,
        expect_missed_events=5,
        expect_cursor=T,
        expect_next=hours_after(1 / 60),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_due_runs(case: Case) -> None:
    spec = raw_spec(**case.spec)
    obj = make_obj(spec, status=status(schedule_cursor=case.cursor))
    result = plan(obj, [], context(case.now, max_enumerated_runs=case.max_enumerated_runs))

    assert [(a.scheduled_time, a.trigger) for a in result.status.active] == list(case.expect_runs)
    assert creates(result) == [name_at(t) for t, _ in case.expect_runs]
    assert result.status.counters.missed == case.expect_missed
    assert reasons(result).count("MissedSchedule") == case.expect_missed_events
    assert result.status.schedule_cursor == case.expect_cursor
    assert result.status.next_schedule_time == case.expect_next
    if case.expect_wake is not None:
        assert result.wake_at == case.expect_wake
    if case.expect_runs:
        assert counters(result)["runs"] == len(case.expect_runs)
        assert result.status.last_schedule_time == case.expect_runs[-1][0]


def test_the_ready_message_names_the_next_run() -> None:
    obj = make_obj(raw_spec(), status=status())
    result = plan(obj, [], context(just_after_the_hour()))
    ready = result.status.condition("Ready")
    assert ready is not None
    assert (ready.status, ready.reason, ready.message) == ("True", "Scheduled", "next run at 2026-05-11T11:00:00Z")


def test_without_further_runs_the_ready_message_says_so() -> None:
    obj = make_obj(raw_spec(endTime=schedule.format_rfc3339(seconds_after(1))), status=status())
    result = plan(obj, [], context(just_after_the_hour()))
    ready = result.status.condition("Ready")
    assert ready is not None
    assert ready.message == "no further runs"
