"""Interleaved repetitions of the herd's contenders, and their medians (issue 31: one honest run).

Every contender runs ``repetitions`` times on the same control plane, interleaved: repetition ``r`` runs the
contenders in the given order rotated by ``r`` places, so no contender always runs first (right after the
sandbox started) or always right after a given other one. The headline of each contender is the median of its
repetitions; the repetition whose time to the last Job is that median (the lower one for an even count) stands
for it where one whole run is needed (the report's plots, the cost scenario's counters).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

#: The numbers of one repetition whose medians are kept (keys of a herd contender's result).
MEDIAN_KEYS = ("time_to_last_job", "time_to_first_job", "client_seconds", "slack_seconds")
LAG_KEYS = ("p50", "p90", "p99", "max")
#: Big per-repetition lists left out of the kept repetitions (the median repetition keeps its own).
DROPPED = ("lags",)


def order(contenders: Sequence[str], repetitions: int) -> list[tuple[int, str]]:
    """(repetition, contender) in the order they run."""
    if repetitions < 1:
        raise ValueError(f"herd_reps: must be at least 1, got {repetitions}")
    if not contenders:
        raise ValueError("herd_contenders: must name at least one contender")
    k = len(contenders)
    return [(r, contenders[(r + i) % k]) for r in range(repetitions) for i in range(k)]


def median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def median_index(runs: Sequence[dict[str, Any]]) -> int:
    """The repetition whose time to the last Job is the (lower) median; 0 when none has one."""
    timed = sorted((r["time_to_last_job"], i) for i, r in enumerate(runs) if r.get("time_to_last_job") is not None)
    return timed[(len(timed) - 1) // 2][1] if timed else 0


def medians(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The medians over RUNS (one contender's repetitions) of the times, lags and per-process CPU seconds."""
    result: dict[str, Any] = {key: median(r.get(key) for r in runs) for key in MEDIAN_KEYS}
    result["lag"] = {key: median((r.get("lag") or {}).get(key) for r in runs) for key in LAG_KEYS}
    processes = sorted({name for r in runs for name in (r.get("cpu_seconds") or {})})
    result["cpu_seconds"] = {name: median((r.get("cpu_seconds") or {}).get(name) for r in runs) for name in processes}
    result["cpu_seconds_total"] = median(sum((r.get("cpu_seconds") or {}).values()) for r in runs)
    result["repetitions"] = len(runs)
    return result


def combine(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One contender's entry in the herd's result: its median repetition's result, with every repetition (big
    lists dropped) and the medians."""
    chosen = median_index(runs)
    return {
        **runs[chosen],
        "median_repetition": chosen,
        "median": medians(runs),
        "repetitions": [{k: v for k, v in r.items() if k not in DROPPED} for r in runs],
    }
