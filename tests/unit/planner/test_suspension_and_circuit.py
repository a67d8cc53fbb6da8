"""Rules 4 and 6: dead letters, the suspendAfter circuit, and spec.suspend."""

from __future__ import annotations

from datetime import datetime, timedelta

from sundial.model import Condition, DeadLetterReason
from sundial.planner.observed import JobPhase
from sundial.planner.planning import plan

from .builders import (
    active_run,
    condition,
    context,
    creates,
    dead_letter,
    events,
    hours_after,
    job,
    make_obj,
    name_at,
    pending_retry,
    raw_spec,
    seconds_after,
    status,
    steady_conditions,
    top_of_the_hour,
)

T = top_of_the_hour()
NEXT = hours_after(1)


def suspended_since(when: datetime, reason: str = "Suspended") -> tuple[Condition, ...]:
    others = tuple(c for c in steady_conditions() if c.type != "Suspended")
    return (
        Condition(type="Suspended", status="True", reason=reason, last_transition_time=when, observed_generation=1),
        *others,
    )


def test_a_dead_letter_is_recorded_counted_and_reported() -> None:
    obj = make_obj(raw_spec(), status=status(active=(active_run(T),), consecutive_dead_letters=1))
    result = plan(obj, [job(name_at(T), JobPhase.FAILED)], context(seconds_after(60)))
    (letter,) = result.status.dead_letters
    assert (letter.reason, letter.attempts, letter.last_job) == (DeadLetterReason.MAX_ATTEMPTS_EXCEEDED, 1, name_at(T))
    assert result.status.counters.dead_lettered == 1
    assert result.status.consecutive_dead_letters == 2
    assert [str(r.result) for r in result.status.recent_runs] == ["DeadLettered"]
    assert condition(result, "DeadLettered") == ("True", "MaxAttemptsExceeded")
    assert "Warning DeadLettered" in events(result)


def test_dead_letters_are_bounded_by_keep_dropping_the_oldest() -> None:
    old = (dead_letter(hours_after(-3)), dead_letter(hours_after(-2)))
    obj = make_obj(raw_spec(deadLetter={"keep": 2}), status=status(active=(active_run(T),), dead_letters=old))
    result = plan(obj, [job(name_at(T), JobPhase.FAILED)], context(seconds_after(60)))
    assert [d.scheduled_time for d in result.status.dead_letters] == [hours_after(-2), T]


def test_keep_zero_keeps_no_dead_letter_but_still_counts_it() -> None:
    obj = make_obj(raw_spec(deadLetter={"keep": 0}), status=status(active=(active_run(T),)))
    result = plan(obj, [job(name_at(T), JobPhase.FAILED)], context(seconds_after(60)))
    assert result.status.dead_letters == ()
    assert result.status.counters.dead_lettered == 1
    assert condition(result, "DeadLettered") == ("False", "NoDeadLetters")


def test_consecutive_dead_letters_open_the_circuit_and_stop_new_runs() -> None:
    obj = make_obj(
        raw_spec(deadLetter={"suspendAfter": 2}),
        status=status(active=(active_run(T),), consecutive_dead_letters=1),
        generation=1,
    )
    result = plan(obj, [job(name_at(T), JobPhase.FAILED)], context(NEXT + timedelta(seconds=5)))
    assert result.status.circuit_generation == 1
    assert condition(result, "Suspended") == ("True", "ConsecutiveDeadLetters")
    assert condition(result, "Ready") == ("True", "CircuitOpen")
    assert "Warning CircuitOpen" in events(result)
    assert creates(result) == []
    assert result.status.schedule_cursor == T


def test_an_open_circuit_holds_back_pending_retries() -> None:
    obj = make_obj(
        raw_spec(retry={"maxAttempts": 3}, deadLetter={"suspendAfter": 1}),
        status=status(
            pending_retries=(pending_retry(T, not_before=seconds_after(10)),),
            consecutive_dead_letters=1,
            circuit_generation=1,
            conditions=suspended_since(seconds_after(1), "ConsecutiveDeadLetters"),
        ),
    )
    result = plan(obj, [], context(NEXT + timedelta(seconds=5)))
    assert creates(result) == []
    assert len(result.status.pending_retries) == 1
    assert result.wake_at is None


def test_a_spec_change_closes_the_circuit_and_counts_what_came_due_while_it_was_open_as_missed() -> None:
    obj = make_obj(
        raw_spec(deadLetter={"suspendAfter": 1}),
        status=status(
            consecutive_dead_letters=1,
            circuit_generation=1,
            conditions=suspended_since(seconds_after(1), "ConsecutiveDeadLetters"),
        ),
        generation=2,
    )
    now = hours_after(2, NEXT) + timedelta(minutes=5)
    result = plan(obj, [], context(now))
    assert result.status.circuit_generation is None
    assert result.status.consecutive_dead_letters == 0
    assert creates(result) == []
    assert result.status.counters.missed == 3
    assert result.status.schedule_cursor == now
    assert condition(result, "Suspended") == ("False", "NotSuspended")


def test_a_success_resets_the_consecutive_count() -> None:
    obj = make_obj(
        raw_spec(deadLetter={"suspendAfter": 3}), status=status(active=(active_run(T),), consecutive_dead_letters=2)
    )
    result = plan(obj, [job(name_at(T), JobPhase.SUCCEEDED)], context(seconds_after(60)))
    assert result.status.consecutive_dead_letters == 0


def test_while_suspended_no_scheduled_run_starts_but_the_next_time_is_shown() -> None:
    obj = make_obj(raw_spec(suspend=True), status=status())
    result = plan(obj, [], context(NEXT + timedelta(seconds=5)))
    assert creates(result) == []
    assert condition(result, "Suspended") == ("True", "Suspended")
    assert condition(result, "Ready") == ("True", "Suspended")
    assert result.status.next_schedule_time == hours_after(2)
    assert result.status.schedule_cursor == T
    assert result.wake_at is None


def test_while_suspended_active_runs_finish_and_pending_retries_start() -> None:
    obj = make_obj(
        raw_spec(suspend=True, retry={"maxAttempts": 3}),
        status=status(
            active=(active_run(T),),
            pending_retries=(pending_retry(hours_after(-1), not_before=seconds_after(10)),),
        ),
    )
    result = plan(obj, [job(name_at(T), JobPhase.SUCCEEDED)], context(seconds_after(60)))
    assert result.status.counters.succeeded == 1
    assert creates(result) == [name_at(hours_after(-1), 2)]


def test_on_resume_runs_that_came_due_while_suspended_are_dropped_silently() -> None:
    obj = make_obj(raw_spec(), status=status(conditions=suspended_since(seconds_after(30))))
    now = hours_after(3) + timedelta(minutes=1)
    result = plan(obj, [], context(now))
    assert creates(result) == []
    assert result.status.counters.missed == 0
    assert result.status.schedule_cursor == now
    assert result.status.next_schedule_time == hours_after(4)
    assert condition(result, "Suspended") == ("False", "NotSuspended")


def test_on_resume_a_run_due_before_the_suspension_is_still_caught_up() -> None:
    obj = make_obj(
        raw_spec(catchUp={"policy": "All"}),
        status=status(schedule_cursor=hours_after(-1), conditions=suspended_since(seconds_after(30))),
    )
    now = hours_after(2) + timedelta(minutes=1)
    result = plan(obj, [], context(now))
    assert creates(result) == [name_at(T)]
    assert result.status.schedule_cursor == now
