"""Passes planned ahead of their instant (DESIGN §7.5, :mod:`sundial.runtime.acting.ahead`): a prepared run planned
a few seconds before its instant sends, at the instant, its Job POST alone - encoded ahead, without planning again -
and any change of what that plan read, or a clock past what it assumed, plans again as without it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest

from sundial import model
from sundial.planner.observed import ObservedJob
from sundial.planner.planning import plan
from sundial.planner.plans import Context, Plan
from sundial.runtime.acting import ahead

from .test_prepared import KEY, NOMINAL, body, job_name, reconciler, reserved
from .test_reconciler import FakeApi


class Counting:
    """The real planner, counting its passes and the time each planned as of."""

    def __init__(self) -> None:
        self.nows: list[datetime] = []

    def __call__(self, obj: model.ScheduledJob, jobs: Sequence[ObservedJob], context: Context) -> Plan:
        self.nows.append(context.now)
        return plan(obj, jobs, context)


def prepared(stored: dict[str, Any] | None = None, **hooks: Any) -> tuple[Any, Any, FakeApi, Counting, list[datetime]]:
    api, planner = FakeApi(), Counting()
    now = [NOMINAL - timedelta(seconds=4)]
    rec, store, _ = reconciler(api, stored or body(reservation=reserved(NOMINAL)), now, **hooks)
    rec._plan = planner  # the same planner the Reconciler was built with, counting
    return rec, store, api, planner, now


async def test_a_run_planned_ahead_sends_its_encoded_job_at_the_instant_without_planning_again() -> None:
    rec, _, api, planner, now = prepared()
    assert rec.prepare(KEY, NOMINAL)
    assert planner.nows == [NOMINAL], "planned as of its instant, still 4 s ahead"
    assert api.calls == [], "nothing is sent ahead"

    now[0] = NOMINAL + timedelta(milliseconds=200)
    await rec.reconcile(KEY)
    assert api.calls == [f"create:{job_name(NOMINAL)}", "event:SuccessfulCreate"]
    assert planner.nows == [NOMINAL], "the instant's pass used the plan made ahead"
    sent = api.encoded[0]
    assert sent is not None and orjson.loads(sent)["metadata"]["name"] == job_name(NOMINAL)
    assert rec.owes_write(KEY), "its status write waits for the lane, as for any prepared run"
    assert len(rec.prepared) == 0


def change_object(store: Any, now: list[datetime]) -> None:
    store.put_scheduled_job(body(reservation=reserved(NOMINAL), rv="2"))


def a_job_appears(store: Any, now: list[datetime]) -> None:
    meta = {
        "name": "nightly-manual",
        "namespace": KEY[0],
        "uid": "m",
        "resourceVersion": "5",
        "labels": {"sundial.dev/scheduledjob": KEY[1]},
        "ownerReferences": [{"uid": "sj-uid", "controller": True, "kind": "ScheduledJob", "name": KEY[1]}],
    }
    store.put_job({"metadata": meta, "spec": {}, "status": {}})  # fmt: skip


def too_late(store: Any, now: list[datetime]) -> None:
    now[0] = NOMINAL + ahead.TOLERANCE + timedelta(milliseconds=1)


def too_early(store: Any, now: list[datetime]) -> None:
    now[0] = NOMINAL - timedelta(milliseconds=1)


@pytest.mark.parametrize(
    "change", [change_object, a_job_appears, too_late, too_early],
    ids=["the object changed", "a Job of it appeared", "past the tolerance", "before its time"],
)  # fmt: skip
async def test_a_change_of_what_the_plan_read_plans_again(change: Any) -> None:
    rec, store, api, planner, now = prepared()
    assert rec.prepare(KEY, NOMINAL)
    now[0] = NOMINAL + timedelta(milliseconds=200)
    change(store, now)
    await rec.reconcile(KEY)
    assert len(planner.nows) == 2 and planner.nows[1] == now[0], "planned again, as of now"
    assert api.encoded in ([], [None]), "a Job, if any, is encoded as it is sent"


async def test_a_run_later_than_its_catch_up_window_is_planned_again_and_missed() -> None:
    stored = body(reservation=reserved(NOMINAL))
    stored["spec"]["catchUp"] = {"window": "1s"}
    rec, _, api, planner, now = prepared(stored)
    assert rec.prepare(KEY, NOMINAL)
    now[0] = NOMINAL + timedelta(seconds=1.5)  # within the tolerance, past the window
    await rec.reconcile(KEY)
    assert len(planner.nows) == 2
    assert not any(call.startswith("create:") for call in api.calls), "missed: never run"


async def test_a_run_whose_claim_must_be_written_first_is_not_kept() -> None:
    rec, _, api, _, now = prepared(body(reservation=None))
    assert not rec.prepare(KEY, NOMINAL), "nothing reserved: the claim is a status write, not the instant's alone"
    now[0] = NOMINAL + timedelta(milliseconds=200)
    await rec.reconcile(KEY)
    assert api.calls[:2] == ["write@1", f"create:{job_name(NOMINAL)}"]


async def test_a_forgotten_object_drops_its_prepared_pass() -> None:
    rec, _, _, _, _ = prepared()
    assert rec.prepare(KEY, NOMINAL)
    rec.forget(KEY)
    assert len(rec.prepared) == 0


def test_the_prepared_passes_are_bounded_and_a_stale_one_makes_room() -> None:
    rec, _, _, _, _ = prepared()
    assert rec.prepare(KEY, NOMINAL)
    kept = rec.prepared.take(KEY)
    bounded = ahead.Prepared(limit=1)
    assert bounded.keep(("a", "x"), kept, now=NOMINAL)
    assert not bounded.keep(("a", "y"), kept, now=NOMINAL), "full of passes still usable"
    assert bounded.keep(("a", "y"), kept, now=NOMINAL + ahead.TOLERANCE + timedelta(seconds=1)), "the stale one went"
    assert len(bounded) == 1 and bounded.take(("a", "x")) is None


async def test_without_prepared_runs_nothing_is_planned_ahead() -> None:
    rec, _, _, planner, _ = prepared(prepared_runs=False)
    assert not rec.prepare(KEY, NOMINAL)
    assert planner.nows == [], "not even planned: its instant's pass claims first whatever the plan"
