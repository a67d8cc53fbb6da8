"""Rules 1, 2, 12 and 13: invalid specs, generations, condition transitions, bounds and write decisions."""

from __future__ import annotations

from datetime import timedelta

import pytest

from sundial.model import RunRecord, RunResult, Trigger, names
from sundial.model.status import MAX_RECENT_RUNS
from sundial.planner.observed import JobPhase
from sundial.planner.planning import plan

from .builders import (
    active_run,
    condition,
    context,
    created,
    creates,
    events,
    hours_after,
    job,
    just_after_the_hour,
    make_obj,
    name_at,
    raw_spec,
    reserved,
    seconds_after,
    status,
    top_of_the_hour,
    with_status,
)

T = top_of_the_hour()


@pytest.mark.parametrize(
    ("spec", "reason", "field"),
    [
        pytest.param(
            {"schedule": "0 0 30 2 *"},
            "InvalidSchedule",
            "spec.schedule",
            id="an impossible schedule is InvalidSchedule",
        ),
        pytest.param(
            {"timeZone": "Mars/Olympus"}, "InvalidSchedule", "spec.timeZone", id="an unknown zone is InvalidSchedule"
        ),
        pytest.param(
            {"retry": {"maxAttempts": 0}}, "InvalidSpec", "spec.retry.maxAttempts", id="a bad retry is InvalidSpec"
        ),
    ],
)
def test_an_invalid_spec_reports_itself_once_and_runs_nothing(spec: dict[str, object], reason: str, field: str) -> None:
    obj = make_obj(raw_spec(**spec), status=status(active=(active_run(T),)), generation=4)
    result = plan(obj, [], context(just_after_the_hour()))
    assert condition(result, "Ready") == ("False", reason)
    ready = result.status.condition("Ready")
    assert ready is not None
    assert field in ready.message
    assert ready.observed_generation == 4
    assert result.status.observed_generation == 4
    assert events(result) == [f"Warning {reason}"]
    assert creates(result) == []
    assert result.wake_at is None
    assert result.write_status
    again = plan(with_status(obj, result.status), [], context(just_after_the_hour() + timedelta(minutes=1)))
    assert again.actions == ()
    assert again.write_status is False


def test_a_new_generation_is_observed_and_conditions_carry_it_without_a_new_transition_time() -> None:
    obj = make_obj(raw_spec(), status=status(), generation=2)
    result = plan(obj, [], context(seconds_after(60)))
    assert result.write_status
    assert result.status.observed_generation == 2
    ready = result.status.condition("Ready")
    assert ready is not None
    assert (ready.observed_generation, ready.last_transition_time) == (2, created())


def test_the_transition_time_moves_only_when_the_status_flips() -> None:
    obj = make_obj(raw_spec(suspend=True), status=status())
    result = plan(obj, [], context(seconds_after(60)))
    suspended = result.status.condition("Suspended")
    ready = result.status.condition("Ready")
    assert suspended is not None and ready is not None
    assert suspended.last_transition_time == seconds_after(60)
    assert (ready.reason, ready.last_transition_time) == ("Suspended", created())


def test_a_settled_object_plans_nothing_and_writes_nothing() -> None:
    settled = status(reservation=reserved(hours_after(1)))
    result = plan(make_obj(raw_spec(), status=settled), [], context(seconds_after(60)))
    assert result.actions == ()
    assert result.write_status is False
    assert result.deferred is False
    assert result.wake_at == hours_after(1)


@pytest.mark.parametrize("token", ["0-7", "0-8"], ids=["the planning replica's", "another replica's"])
def test_the_fencing_token_the_runtime_stamps_is_no_change_of_its_own(token: str) -> None:
    """The runtime stamps ``status.fencingToken`` on every write; the planned status never carries one. Were it
    compared, every pass after an object's first write (each Job watch event) would write the status again."""
    written = make_obj(raw_spec(), status=status().model_copy(update={"fencing_token": token}))
    result = plan(written, [], context(seconds_after(60)))
    assert result.write_status is False
    ran = plan(written, [], context(hours_after(1, just_after_the_hour())))  # the next run is still claimed
    assert ran.write_status and creates(ran)


def test_recent_runs_are_bounded_keeping_the_newest_last() -> None:
    old = tuple(
        RunRecord(
            scheduled_time=hours_after(-i - 1),
            attempts=1,
            result=RunResult.SUCCEEDED,
            trigger=Trigger.SCHEDULE,
            finished_at=hours_after(-i - 1),
        )
        for i in reversed(range(MAX_RECENT_RUNS))
    )
    obj = make_obj(raw_spec(), status=status(recent_runs=old, active=(active_run(T),)))
    result = plan(obj, [job(name_at(T), JobPhase.SUCCEEDED)], context(seconds_after(60)))
    runs = result.status.recent_runs
    assert len(runs) == MAX_RECENT_RUNS
    assert runs[-1].scheduled_time == T
    assert runs[0].scheduled_time == hours_after(-MAX_RECENT_RUNS + 1)


def test_an_object_being_deleted_starts_no_new_job() -> None:
    obj = make_obj(raw_spec(), status=status(), deleting=True, annotations={names.TRIGGER_ANNOTATION: "x"})
    result = plan(obj, [], context(hours_after(1, T) + timedelta(seconds=5)))
    assert creates(result) == []
