"""Squatted names, an active run past maxRunAge, and names claimed by an older version (issue 14 item 4)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from sundial.model import DeadLetterReason, names
from sundial.planner import manifests
from sundial.planner.actions import CreateJob, DeleteJob
from sundial.planner.observed import FailureReason, JobPhase
from sundial.planner.planning import plan

from .builders import (
    UID,
    active_run,
    context,
    hours_after,
    job,
    make_obj,
    name_at,
    raw_spec,
    seconds_after,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()
AGE = {"maxAttempts": 3, "maxRunAge": "1h"}


def test_an_active_run_past_max_run_age_is_dead_lettered_and_its_job_deleted_with_its_uid() -> None:
    obj = make_obj(raw_spec(retry=AGE), status=status(active=(active_run(T),)))
    result = plan(obj, [job(name_at(T), uid="u-1")], context(T + timedelta(hours=1, seconds=1)))
    assert [run.scheduled_time for run in result.status.active if run.scheduled_time == T] == []
    [letter] = result.status.dead_letters
    assert letter.reason is DeadLetterReason.MAX_RUN_AGE_EXCEEDED
    assert "still running after maxRunAge (1h0m0s)" in letter.message
    [delete] = [a for a in result.actions if isinstance(a, DeleteJob)]
    assert (delete.name, delete.uid, delete.reason) == (name_at(T), "u-1", "MaxRunAgeExceeded")


def test_max_run_age_counts_from_a_late_claim() -> None:
    # A run claimed late (catch-up) gets its whole maxRunAge; before it has passed, the Job keeps running.
    late = T + timedelta(minutes=50)
    obj = make_obj(raw_spec(retry=AGE), status=status(active=(active_run(T, claimed=late),)))
    result = plan(obj, [job(name_at(T))], context(T + timedelta(hours=1, minutes=10)))
    assert name_at(T) in [run.job for run in result.status.active]
    assert not [a for a in result.actions if isinstance(a, DeleteJob)]
    result = plan(obj, [job(name_at(T))], context(late + timedelta(hours=1, seconds=1)))
    assert name_at(T) not in [run.job for run in result.status.active]


def test_a_squatted_attempt_ends_as_unexpected_job_and_the_run_goes_on_under_its_next_name() -> None:
    obj = make_obj(raw_spec(retry={"maxAttempts": 3, "backoff": {"initial": "0s", "max": "0s"}}),
                   status=status(active=(active_run(T, seen=False),)))  # fmt: skip
    # As the runtime records a create answered AlreadyExists by another object's Job: no UID.
    squatted = replace(job(name_at(T), JobPhase.FAILED, reason=FailureReason.UNEXPECTED_JOB), uid="")
    result = plan(obj, [squatted], context(seconds_after(5, T)))
    assert result.status.counters.failed == 1
    assert not [a for a in result.actions if isinstance(a, DeleteJob)]  # the squatter is left alone
    # No backoff here: attempt 2 starts at once, under its own name.
    [run] = [run for run in result.status.active if run.scheduled_time == T]
    assert (run.attempt, run.job, run.trigger) == (2, name_at(T, 2), "retry")
    assert [a.manifest["metadata"]["name"] for a in result.actions if isinstance(a, CreateJob)] == [name_at(T, 2)]


def test_a_run_claimed_under_an_older_job_name_is_reissued_under_that_name() -> None:
    # Before 64-bit name hashes a long name had 5 hex digits; the claim records the name it was made under.
    long_name = "x" * 60
    obj = make_obj(raw_spec(), name=long_name, status=status())
    old = f"{'x' * 44}-{names.short_hash(long_name)}-{int(T.timestamp())}-1"
    assert old != manifests.job_name(scheduled_job=long_name, scheduled_time=T, attempt=1)
    claim = active_run(T, seen=False).model_copy(update={"job": old})
    obj = make_obj(raw_spec(), name=long_name, status=status(active=(claim,)))
    result = plan(obj, [], context(seconds_after(20, T)))  # past Context.reissue_after
    [create] = [a for a in result.actions if isinstance(a, CreateJob)]
    assert create.manifest["metadata"]["name"] == old
    assert create.reissue
    adopted = plan(obj, [job(old, uid="u-old")], context(seconds_after(1, T)))
    assert [run.job for run in adopted.status.active] == [old]
    assert UID  # the builders' owner


def test_history_never_deletes_an_attempt_that_had_no_job() -> None:
    obj = make_obj(raw_spec(failedJobsHistoryLimit=0), status=status())
    squatted = replace(job(name_at(T), JobPhase.FAILED, reason=FailureReason.UNEXPECTED_JOB), uid="")
    result = plan(obj, [squatted, job(name_at(hours_after(-1, T)), JobPhase.FAILED)], context(seconds_after(5, T)))
    assert [a.name for a in result.actions if isinstance(a, DeleteJob)] == [name_at(hours_after(-1, T))]
