"""calendar-edit: other tenants' lag while one tenant's calendars, shared by 400 ScheduledJobs, are edited every
second (issue 30 criterion 2), on one fresh sandbox.

Victims: V namespaces, each with one ScheduledJob every 5 seconds (the neighbour scenario's, and its lag:
nominal time -> Job seen by the independent watch). The tenant namespace holds 16 maximal legal
ScheduleCalendars (100 entries sharing the 1,000 dates allowed in all, checked by the webhook's own
:func:`sundial.runtime.serving.admission.calendar_problems`) and R (400) yearly ScheduledJobs each referring to
all 16 (``calendarRefs`` is at most 16; checked by :func:`~sundial.runtime.serving.admission.problems`). Three
phases of S seconds each, the victims' lag measured in each:

* ``baseline`` - everything in place, nothing edited;
* ``label_edit`` - every second one calendar (in turn) gets a new label value (a merge PATCH of metadata only):
  each edit wakes its 400 referrers, whose compiled specs must not be rebuilt (cache keys follow the spec);
* ``spec_edit`` - every second the same calendar's spec changes (one far-future date moved back and forth):
  each edit really changes what its 400 referrers exclude, so they recompile (bounded per pass).

Goal: each edit phase's p99 <= baseline p99 + 1 s. The result's ``latest`` is what ``docs/benchmarks/latest.json``
keeps under ``calendar_edit``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench import env
from bench.kube import Api, credentials, scheduled_job, sj_path
from bench.neighbour import CALENDARS_PATH, Neighbour, calendar, maximal_exclude

TENANT = "ce-tenant"
CALENDARS = 16
GOAL_SLACK_S = 1.0
"""The goal: an edit phase's p99 <= baseline p99 + this."""
PHASES = ("baseline", "label_edit", "spec_edit")


def referrer(name: str) -> dict[str, Any]:
    """A yearly ScheduledJob referring to every calendar (it never runs during the bench: only its passes count)."""
    body = scheduled_job(name, "0 0 1 1 *")
    body["spec"]["calendarRefs"] = [f"max-{i:02d}" for i in range(CALENDARS)]
    return body


def check_legal(calendar_body: dict[str, Any], referrer_body: dict[str, Any]) -> None:
    """Raise unless the webhook admits both (what the CRD checks is checked by the API server at create)."""
    from sundial.runtime.serving.admission import calendar_problems, problems  # noqa: PLC0415

    found = [*calendar_problems(calendar_body), *problems(referrer_body)]
    if found:
        raise ValueError(f"the webhook would refuse the calendar-edit objects: {found}")


class CalendarEdit:
    def __init__(self, *, out: Path, victims: int, seconds: int, referrers: int, operator_args: list[str]) -> None:
        self.out, self.victims, self.seconds, self.referrers = out, victims, seconds, referrers
        self.operator_args = operator_args
        # The neighbour scenario's phase: the victims' lag over SECONDS, with /readyz probed every second.
        self._phases = Neighbour(out=out, victims=victims, seconds=seconds, operator_args=operator_args)

    def run(self, cluster: env.BenchCluster | None = None) -> dict[str, Any]:
        return env.run_on_cluster("calendar-edit", self.out, self._run, cluster)

    async def _run(self, cluster: env.BenchCluster) -> dict[str, Any]:
        exclude = maximal_exclude()
        check_legal(calendar("max-00", exclude), referrer("ref-000"))
        operator = env.start_operator(cluster.kubeconfig, self.out, *self.operator_args, identity="calendar-edit")
        watch = env.JobWatch(cluster.kubeconfig, self.out / "calendar-edit-jobs.jsonl")
        victims = [f"ce-victim-{i:02d}" for i in range(self.victims)]
        results: dict[str, Any] = {}
        try:
            operator.wait_ready()
            async with Api(credentials(cluster.kubeconfig)) as api:
                await api.namespaces([*victims, TENANT])
                await api.create_many((sj_path(ns), scheduled_job("victim", "*/5 * * * * *")) for ns in victims)
                path = CALENDARS_PATH.format(TENANT)
                made = time.monotonic()
                await api.create_many(((path, calendar(f"max-{i:02d}", exclude)) for i in range(CALENDARS)), 4)
                await api.create_many(((sj_path(TENANT), referrer(f"ref-{i:03d}")) for i in range(self.referrers)), 16)
                setup_s = round(time.monotonic() - made, 1)
                await asyncio.sleep(20)  # the first passes of the victims and of the referrers
                for phase in PHASES:
                    print(f"[calendar-edit] {phase}: {self.victims} victims, {self.seconds} s, load={env.load()}",
                          flush=True)  # fmt: skip
                    edits = asyncio.create_task(self._edit(api, phase, exclude))
                    try:
                        measured = await self._phases._phase(operator, watch, set(victims))
                    finally:
                        edits.cancel()
                        [counted] = await asyncio.gather(edits, return_exceptions=True)
                    measured["edits"] = counted if isinstance(counted, dict) else {"error": repr(counted)}
                    results[phase] = measured
                    print(f"[calendar-edit] {phase}: p50 {measured['p50_s']} s, p99 {measured['p99_s']} s over "
                          f"{measured['runs']} runs, edits {measured['edits']}", flush=True)  # fmt: skip
                results["operator_rss_mb"] = env.rss_mb(operator.pid)
        finally:
            watch.close()
            operator.stop()
        keep = ("p50_s", "p99_s", "max_s", "runs", "missed", "load", "readyz_misses", "edits")
        baseline = results["baseline"]["p99_s"]
        latest: dict[str, Any] = {phase: {k: results[phase].get(k) for k in keep} for phase in PHASES}
        latest |= {
            "goal": f"label_edit.p99_s and spec_edit.p99_s <= baseline.p99_s + {GOAL_SLACK_S}",
            "goal_met": {
                phase: results[phase]["p99_s"] is not None and results[phase]["p99_s"] <= baseline + GOAL_SLACK_S
                for phase in PHASES[1:]
            },
            "victims": self.victims,
            "referrers": self.referrers,
            "calendars": CALENDARS,
            "phase_seconds": self.seconds,
            "setup_s": setup_s,
        }
        return {**results, "latest": latest}

    async def _edit(self, api: Api, phase: str, exclude: list[dict[str, Any]]) -> dict[str, int]:
        """One edit a second for PHASE until cancelled: a label of each calendar in turn, or the spec of max-00."""
        done = {"edits": 0, "errors": 0}
        if phase == "baseline":
            return done
        path = CALENDARS_PATH.format(TENANT)
        merge = "application/merge-patch+json"
        first = exclude[0]["dates"][0]
        moved = "2099-12-31"  # before every other date of the maximal list: still distinct, still far away
        try:
            while True:
                started = time.monotonic()
                n = done["edits"] + done["errors"]
                try:
                    if phase == "label_edit":
                        body: dict[str, Any] = {"metadata": {"labels": {"bench.sundial.dev/edit": str(n)}}}
                        await api.call("PATCH", f"{path}/max-{n % CALENDARS:02d}", body, merge)
                    else:
                        dates = list(exclude[0]["dates"])
                        dates[0] = moved if n % 2 == 0 else first
                        spec = {"exclude": [{"dates": dates}, *exclude[1:]]}
                        await api.call("PATCH", f"{path}/max-00", {"spec": spec}, merge)
                    done["edits"] += 1
                except Exception:  # counted; the phase goes on
                    done["errors"] += 1
                await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        except asyncio.CancelledError:
            return done
