"""The eight scenarios and their sizes. Each runs on its own fresh sandbox.

Besides the size's keys, ``--set`` takes ``herd_contenders`` (default ``raw,raw-shaped,raw-cronjob-shaped,
sundial,cronjob-default``; ``cronjob-raised`` too on request), ``herd_reps`` (interleaved repetitions of each,
a size key), ``herd_production`` (``1``: Sundial with the chart's flags and fencing policy, :mod:`bench.production`;
``0``: the bench's own flags, no policy), ``steady_contenders`` (``raw,sundial,cronjob``), ``cost_contenders``
(``raw,sundial,cronjob-default``; raw is the baseline and must stay), ``apiserver_profile`` (``1``: perf on
the API server during each herd when perf and go are found), ``scale_cronjobs`` (``1``; ``0`` measures the
operator only) and ``sundial_args`` (extra operator flags, split on spaces)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import cost, production
from bench.calendaredit import CalendarEdit
from bench.failover import Failover
from bench.herd import Herd
from bench.intake import Intake
from bench.neighbour import Neighbour
from bench.scale import Scale
from bench.steady import Steady

#: Sundial's client settings for the herd (and the controller manager's "raised" QPS matches them).
SUNDIAL_QPS = 500
SUNDIAL_BURST = 1000

SIZES: dict[str, dict[str, Any]] = {
    "smoke": {
        "sundial_qps": SUNDIAL_QPS, "sundial_burst": SUNDIAL_BURST,
        "herd_n": 100, "herd_namespaces": 4, "herd_reps": 1,
        "steady_m": 50, "steady_minutes": 1, "scale_n": 500,
        "cost_n": 100, "failover_objects": 5, "idle_seconds": 10, "herd_priority_share": 0.0,
        "neighbour_victims": 5, "neighbour_seconds": 30,
        "intake_n": 500, "intake_ordinary": 2000,
        "calendar_edit_victims": 5, "calendar_edit_seconds": 30, "calendar_edit_referrers": 400,
    },
    "small": {
        "sundial_qps": SUNDIAL_QPS, "sundial_burst": SUNDIAL_BURST,
        "herd_n": 300, "herd_namespaces": 10, "herd_reps": 3,
        "steady_m": 100, "steady_minutes": 2, "scale_n": 2000,
        "cost_n": 200, "failover_objects": 10, "idle_seconds": 20, "herd_priority_share": 0.0,
        "neighbour_victims": 20, "neighbour_seconds": 90,
        "intake_n": 500, "intake_ordinary": 10000,
        "calendar_edit_victims": 10, "calendar_edit_seconds": 60, "calendar_edit_referrers": 400,
    },
    "full": {
        "sundial_qps": SUNDIAL_QPS, "sundial_burst": SUNDIAL_BURST,
        "herd_n": 2000, "herd_namespaces": 20, "herd_reps": 3,
        "steady_m": 1000, "steady_minutes": 10, "scale_n": 100000,
        "cost_n": 500, "failover_objects": 20, "idle_seconds": 60, "herd_priority_share": 0.0,
        "neighbour_victims": 20, "neighbour_seconds": 150,
        "intake_n": 500, "intake_ordinary": 20000,
        "calendar_edit_victims": 20, "calendar_edit_seconds": 75, "calendar_edit_referrers": 400,
    },
}  # fmt: skip


def operator_args(
    qps: int = SUNDIAL_QPS, burst: int = SUNDIAL_BURST, concurrency: int = 64, extra: str = ""
) -> list[str]:
    """Sundial's flags; ``extra`` (``--set sundial_args="--event-loop asyncio"``) is appended, split on spaces."""
    return ["--qps", str(qps), "--burst", str(burst), "--max-concurrency", str(concurrency), *extra.split()]


#: The herd's contenders unless ``--set herd_contenders=...`` names others.
HERD_CONTENDERS = "raw,raw-shaped,raw-cronjob-shaped,sundial,cronjob-default"


def herd_operator_args(params: dict[str, Any], *, production: bool) -> list[str]:
    """The herd's operator flags: the chart's (production) or the bench's own, then ``sundial_args``."""
    extra = params.get("sundial_args", "")
    if not production:
        return operator_args(params["sundial_qps"], params["sundial_burst"], extra=extra)
    flags = production_args(params["sundial_qps"], params["sundial_burst"])
    return [*flags, *extra.split()]


def production_args(qps: int, burst: int, concurrency: int = 64) -> list[str]:
    return production.chart_args(production.chart_values(), qps=qps, burst=burst, concurrency=concurrency)


def kcm_raised(qps: int = SUNDIAL_QPS, burst: int = SUNDIAL_BURST) -> list[str]:
    return [f"--kube-api-qps={qps}", f"--kube-api-burst={burst}"]


def run(name: str, out: Path, params: dict[str, Any], *, profile: bool = False) -> dict[str, Any]:
    if name == "herd":
        contenders = str(params.get("herd_contenders", HERD_CONTENDERS)).split(",")
        in_production = bool(int(params.get("herd_production", 1)))
        return Herd(
            out=out,
            n=params["herd_n"],
            namespaces=params["herd_namespaces"],
            operator_args=herd_operator_args(params, production=in_production),
            kcm_raised=kcm_raised(params["sundial_qps"], params["sundial_burst"]),
            contenders=contenders,
            profile=profile,
            priority_share=float(params.get("herd_priority_share", 0.0)),
            apiserver_profile=bool(int(params.get("apiserver_profile", 1))),
            repetitions=int(params.get("herd_reps", 1)),
            as_in_production=in_production,
        ).run()
    if name == "cost":
        result = Herd(
            out=out,
            n=params["cost_n"],
            namespaces=params["herd_namespaces"],
            operator_args=operator_args(
                params["sundial_qps"], params["sundial_burst"], extra=params.get("sundial_args", "")
            ),
            kcm_raised=kcm_raised(params["sundial_qps"], params["sundial_burst"]),
            contenders=str(params.get("cost_contenders", "raw,sundial,cronjob-default")).split(","),
            settle_writes=True,
            name="cost",
            apiserver_profile=bool(int(params.get("apiserver_profile", 1))),
        ).run()
        return cost.first_run(result)
    if name == "steady":
        contenders = tuple(str(params.get("steady_contenders", "raw,sundial,cronjob")).split(","))
        return Steady(
            out=out,
            m=params["steady_m"],
            minutes=params["steady_minutes"],
            namespaces=params["herd_namespaces"],
            operator_args=operator_args(extra=params.get("sundial_args", "")),
        ).run(contenders)
    if name == "scale":
        return Scale(
            out=out,
            n=params["scale_n"],
            namespaces=params["herd_namespaces"],
            idle_seconds=params["idle_seconds"],
            cronjobs=bool(int(params.get("scale_cronjobs", 1))),
            # the first status write of every object created while no operator ran goes at Sundial's bench QPS
            operator_args=operator_args(
                params["sundial_qps"], params["sundial_burst"], extra=params.get("sundial_args", "")
            ),
        ).run()
    if name == "neighbour":
        return Neighbour(
            out=out,
            victims=params["neighbour_victims"],
            seconds=params["neighbour_seconds"],
            operator_args=operator_args(extra=params.get("sundial_args", "")),
        ).run()
    if name == "intake":
        return Intake(
            out=out,
            n=params["intake_n"],
            ordinary=params["intake_ordinary"],
            operator_args=operator_args(
                params["sundial_qps"], params["sundial_burst"], extra=params.get("sundial_args", "")
            ),
        ).run()
    if name == "calendar-edit":
        return CalendarEdit(
            out=out,
            victims=params["calendar_edit_victims"],
            seconds=params["calendar_edit_seconds"],
            referrers=params["calendar_edit_referrers"],
            operator_args=operator_args(extra=params.get("sundial_args", "")),
        ).run()
    if name == "failover":
        return Failover(out=out, objects=params["failover_objects"], operator_args=[]).run()
    raise ValueError(f"unknown scenario {name}")
