"""Properties: no unhandled exception, idempotence, no double create, nothing silently dropped.

A fake cluster applies each plan the way the runtime does (the status only when ``write_status``;
CreateJob adds an Active Job; DeleteJob removes it) and randomly finishes, fails or deletes Jobs
between passes while the clock advances.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sundial import schedule
from sundial.model import ScheduledJobStatus, names
from sundial.planner.actions import CreateJob, DeleteJob, EmitEvent
from sundial.planner.observed import JobPhase, ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import Plan

from .builders import UID, context, created, make_obj, raw_spec, with_status

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

specs = st.fixed_dictionaries(
    {
        "schedule": st.sampled_from(["*/5 * * * *", "0 * * * *", "*/1 * * * *", "*/20 * * * * *", None]),
        "jitter": st.sampled_from(["0s", "90s"]),
        "catchUp": st.fixed_dictionaries(
            {
                "window": st.sampled_from([None, "10m", "2h"]),
                "policy": st.sampled_from(["Latest", "All"]),
                "maxRuns": st.sampled_from([1, 3]),
            }
        ).map(lambda d: {k: v for k, v in d.items() if v is not None}),
        "concurrencyPolicy": st.sampled_from(["Allow", "Forbid", "Replace"]),
        "retry": st.fixed_dictionaries(
            {
                "maxAttempts": st.sampled_from([1, 3]),
                "backoff": st.sampled_from([{"initial": "0s", "max": "0s"}, {"initial": "30s", "max": "10m"}]),
                "maxRunAge": st.sampled_from([None, "20m"]),
            }
        ).map(lambda d: {k: v for k, v in d.items() if v is not None}),
        "deadLetter": st.fixed_dictionaries({"keep": st.sampled_from([0, 3]), "suspendAfter": st.sampled_from([0, 2])}),
        "successfulJobsHistoryLimit": st.sampled_from([0, 2]),
        "failedJobsHistoryLimit": st.sampled_from([0, 1]),
    }
)


@dataclass
class Cluster:
    """Jobs as an informer would show them, and every CreateJob the planner ever asked for."""

    jobs: dict[str, ObservedJob] = field(default_factory=dict)
    created: list[CreateJob] = field(default_factory=list)
    next_uid: int = 0

    def apply(self, result: Plan, now: datetime) -> None:
        for action in result.actions:
            if isinstance(action, CreateJob):
                if not action.reissue:
                    self.created.append(action)
                name = action.manifest["metadata"]["name"]
                if name not in self.jobs:
                    self.next_uid += 1
                    self.jobs[name] = ObservedJob(
                        name=name,
                        uid=f"job-{self.next_uid}",
                        owner_uid=UID,
                        phase=JobPhase.ACTIVE,
                        scheduled_time=action.scheduled_time,
                        attempt=action.attempt,
                        created_at=now,
                    )
            elif isinstance(action, DeleteJob):
                self.jobs.pop(action.name, None)

    def churn(self, rng: random.Random, now: datetime) -> None:
        for name, job in list(self.jobs.items()):
            if job.phase is JobPhase.DELETED:
                del self.jobs[name]
            elif job.phase is JobPhase.ACTIVE:
                roll = rng.random()
                if roll < 0.35:
                    self.jobs[name] = replace(job, phase=JobPhase.SUCCEEDED, finished_at=now)
                elif roll < 0.6:
                    self.jobs[name] = replace(job, phase=JobPhase.FAILED, finished_at=now, failure_reason="Boom")
                elif roll < 0.65:
                    self.jobs[name] = replace(job, phase=JobPhase.DELETED)
                elif roll < 0.67:
                    self.jobs[name] = replace(job, phase=JobPhase.FAILED, failure_reason="InvalidJobTemplate")


def assert_idempotent(
    obj_spec: dict[str, Any],
    annotations: dict[str, str],
    result: Plan,
    cluster: Cluster,
    now: datetime,
    generation: int,
) -> None:
    obj = make_obj(obj_spec, status=result.status, annotations=annotations, generation=generation)
    deleted = {a.name for a in result.actions if isinstance(a, DeleteJob)}
    jobs = [job for name, job in cluster.jobs.items() if name not in deleted]
    again = plan(obj, jobs, context(now))
    assert again.write_status is False, "planning twice at the same instant wrote again"
    assert not [a for a in again.actions if isinstance(a, CreateJob | DeleteJob | EmitEvent)]


def lane_pass(
    spec: dict[str, Any],
    annotations: dict[str, str],
    status: ScheduledJobStatus,
    cluster: Cluster,
    now: datetime,
    generation: int,
) -> ScheduledJobStatus:
    """The lane's pass of a deferred object: it writes (the used reservation, or the reservation on its own), or
    holds a used reservation's start while its Job runs (nothing written: the stored status stays)."""
    obj = make_obj(spec, status=status, annotations=annotations, generation=generation)
    result = plan(obj, list(cluster.jobs.values()), context(now, lane=True))
    assert result.write_status != (result.hold_until is not None), "the lane's pass wrote nothing"
    assert not result.write_status or not result.deferred
    cluster.apply(result, now)
    return result.status if result.write_status else status


def simulate(
    spec: dict[str, Any], rng: random.Random, *, steps: int, tokens: bool
) -> tuple[Cluster, ScheduledJobStatus, datetime]:
    cluster = Cluster()
    status = ScheduledJobStatus()
    annotations: dict[str, str] = {}
    now = created()
    generation = 1
    for step in range(steps):
        now += timedelta(seconds=rng.choice([1, 7, 45, 300, 1200, 4000]), microseconds=rng.randrange(1_000_000))
        if tokens and rng.random() < 0.15:
            annotations[names.TRIGGER_ANNOTATION] = f"t{step}"
        if tokens and rng.random() < 0.15:
            annotations[names.REDRIVE_ANNOTATION] = f"r{step}"
        if tokens and rng.random() < 0.1:
            spec = {**spec, "suspend": not spec.get("suspend", False)}
            generation += 1
        obj = make_obj(spec, status=status, annotations=annotations, generation=generation)
        result = plan(obj, list(cluster.jobs.values()), context(now))
        assert_idempotent(spec, annotations, result, cluster, now, generation)
        if result.write_status:
            status = result.status
        cluster.apply(result, now)
        # The low-priority lane plans a deferred object again after the actions and writes (DESIGN §7.5): at
        # once, after the Jobs changed, or never (the replica crashed: the next pass records it).
        lane = rng.choice(["before", "after", "never"]) if result.deferred else "never"
        if lane == "before":
            status = lane_pass(spec, annotations, status, cluster, now, generation)
        cluster.churn(rng, now)
        if lane == "after":
            status = lane_pass(spec, annotations, status, cluster, now, generation)
    for _ in range(3):  # the passes that follow the last one (a deferred status write is owed; a hold has ended)
        obj = make_obj(spec, status=status, annotations=annotations, generation=generation)
        result = plan(obj, list(cluster.jobs.values()), context(now, lane=True, hold_start=timedelta(0)))
        cluster.apply(result, now)
        if result.write_status:
            status = result.status
        elif not result.deferred:
            break
    return cluster, status, now


def assert_no_double_create(cluster: Cluster) -> None:
    names = [c.manifest["metadata"]["name"] for c in cluster.created]
    assert len(names) == len(set(names)), "a (run, attempt) got two CreateJob"
    keys = [(c.scheduled_time, c.attempt, "-m" in c.manifest["metadata"]["name"]) for c in cluster.created]
    assert len(keys) == len(set(keys))


@SETTINGS
@given(spec=specs, seed=st.integers(0, 2**32))
def test_simulated_passes_never_create_the_same_attempt_twice(spec: dict[str, Any], seed: int) -> None:
    cluster, _, _ = simulate(raw_spec(**spec), random.Random(seed), steps=25, tokens=True)
    assert_no_double_create(cluster)


@SETTINGS
@given(spec=specs.filter(lambda s: s["schedule"] is not None), seed=st.integers(0, 2**32))
def test_every_due_nominal_time_is_started_skipped_or_counted_missed(spec: dict[str, Any], seed: int) -> None:
    raw = raw_spec(**spec)
    cluster, status, now = simulate(raw, random.Random(seed), steps=25, tokens=False)
    assert_no_double_create(cluster)
    timetable = schedule.build_timetable(raw["schedule"], uid=UID)
    cursor = status.schedule_cursor or created()
    handled, _ = timetable.between(created(), cursor, limit=100_000)
    started = {c.scheduled_time for c in cluster.created if c.attempt == 1}
    counters = status.counters
    assert len(started) + counters.skipped + counters.missed == len(handled)
    assert started <= set(handled)
    if status.circuit_generation is None and status.next_schedule_time is not None:
        fire = status.next_schedule_time + schedule.jitter_offset(
            uid=UID, nominal=status.next_schedule_time, jitter=timedelta(seconds=90 if spec["jitter"] == "90s" else 0)
        )
        assert fire > now, "a due nominal time was left behind the cursor"


statuses = st.builds(
    ScheduledJobStatus,
    schedule_cursor=st.one_of(st.none(), st.just(created() + timedelta(hours=2))),
    consecutive_dead_letters=st.integers(0, 3),
    circuit_generation=st.one_of(st.none(), st.integers(0, 2)),
    last_handled_trigger=st.one_of(st.none(), st.just("t")),
)


@SETTINGS
@given(
    spec=specs,
    status=statuses,
    generation=st.integers(0, 2),
    annotations=st.dictionaries(
        st.sampled_from([names.TRIGGER_ANNOTATION, names.REDRIVE_ANNOTATION]), st.sampled_from(["t", "u"])
    ),
    offset=st.integers(-3600, 86_400 * 3),
)
def test_planning_any_status_never_raises(
    spec: dict[str, Any], status: ScheduledJobStatus, generation: int, annotations: dict[str, str], offset: int
) -> None:
    obj = make_obj(raw_spec(**spec), status=status, annotations=annotations, generation=generation)
    result = plan(obj, [], context(created() + timedelta(seconds=offset)))
    again = plan(with_status(obj, result.status), [], context(created() + timedelta(seconds=offset)))
    assert again.write_status is False


@SETTINGS
@given(schedule_text=st.text(max_size=30), zone=st.sampled_from(["UTC", "Mars/Olympus", "Local", "Europe/Berlin"]))
def test_an_invalid_spec_never_raises_and_reports_itself_once(schedule_text: str, zone: str) -> None:
    obj = make_obj(raw_spec(schedule=schedule_text, timeZone=zone))
    result = plan(obj, [], context(created()))
    if obj.spec is None:
        ready = result.status.condition("Ready")
        assert ready is not None
        assert ready.status == "False"
        again = plan(with_status(obj, result.status), [], context(created()))
        assert again.actions == ()
        assert again.write_status is False
