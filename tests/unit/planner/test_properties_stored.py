"""Planner properties over *stored* status histories (issue 5 item 5): between passes the status goes
through the API as JSON (``dump_status`` → ``parse_status``), exactly as the runtime's compare-and-set
writes and re-reads it. The invariants of the in-memory simulation must survive that round trip:
idempotence, never two CreateJob for one (run, attempt), every due nominal time started, skipped or
counted missed."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sundial import schedule
from sundial.model import ScheduledJobStatus, parse_status
from sundial.model.resource import dump_status
from sundial.planner.actions import CreateJob, DeleteJob, EmitEvent
from sundial.planner.planning import plan

from .builders import UID, context, created, make_obj, raw_spec
from .test_properties import Cluster, assert_no_double_create, specs

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def stored(status: ScheduledJobStatus) -> ScheduledJobStatus:
    """What a re-read from the API returns after the status was written."""
    return parse_status(dump_status(status))


@SETTINGS
@given(spec=specs.filter(lambda s: s["schedule"] is not None), seed=st.integers(0, 2**32))
def test_stored_status_histories_keep_the_planner_invariants(spec: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    raw = raw_spec(**spec)
    cluster = Cluster()
    status = ScheduledJobStatus()
    now = created()
    for _ in range(25):
        now += timedelta(seconds=rng.choice([1, 7, 45, 300, 1200, 4000]), microseconds=rng.randrange(1_000_000))
        obj = make_obj(raw, status=status)
        result = plan(obj, list(cluster.jobs.values()), context(now))
        if result.write_status:
            status = stored(result.status)
            assert status == stored(status), "a stored status changes when stored again"
        cluster.apply(result, now)
        if result.deferred:  # the lane's pass writes what the instant deferred (DESIGN §7.5), or holds a start
            result = plan(make_obj(raw, status=status), list(cluster.jobs.values()), context(now, lane=True))
            assert result.write_status != (result.hold_until is not None), "the lane's pass wrote nothing"
            if result.write_status:
                status = stored(result.status)
            cluster.apply(result, now)
        deleted = {a.name for a in result.actions if isinstance(a, DeleteJob)}
        again = plan(make_obj(raw, status=status), [j for n, j in cluster.jobs.items() if n not in deleted],
                     context(now))  # fmt: skip
        assert again.write_status is False, "planning again on the stored status wrote again"
        assert not [a for a in again.actions if isinstance(a, CreateJob | DeleteJob | EmitEvent)]
        cluster.churn(rng, now)
    # A start held while its Job runs is written at the hold's end at the latest (DESIGN §7.5).
    result = plan(make_obj(raw, status=status), list(cluster.jobs.values()), context(now, hold_start=timedelta(0)))
    if result.write_status:
        status = stored(result.status)
    cluster.apply(result, now)
    assert_no_double_create(cluster)
    timetable = schedule.build_timetable(raw["schedule"], uid=UID)
    handled, _ = timetable.between(created(), status.schedule_cursor or created(), limit=100_000)
    started = {c.scheduled_time for c in cluster.created if c.attempt == 1}
    assert started <= set(handled)
    assert len(started) + status.counters.skipped + status.counters.missed == len(handled)
