"""The results file for machines, ``docs/benchmarks/latest.json``: each scenario's headline numbers, labelled with
the size, the start time and the load average of its run, merged into the file (the keys of other scenarios
and tools, e.g. ``isolation``, ``memory``, ``neighbour``, are kept).

Keys each scenario sets (the rest of each section is context):

* ``herd``: ``n``, ``repetitions``, ``order`` (the interleaving), and per contender ``raw``, ``raw_shaped``,
  ``raw_cronjob_shaped``, ``sundial``, ``cronjob_default`` (``cronjob_raised`` when run): ``median`` (the medians
  over its repetitions of ``last_s``, ``p50_s``, ``p99_s`` and every process's CPU seconds in the instant's
  window), ``repetitions`` (each one's ``last_s``, ``p50_s``, ``p99_s``, loads and CPU seconds by process), and
  its median repetition's numbers as before: ``p99_s``, ``last_s``, the load at the nominal time and after;
  ``sundial.cpu_ms_per_run_instant``; ``job_bytes`` (a Job's compact JSON sent and as a GET returns it); the API
  server's CPU per request kind during each herd: ``apiserver_handler_share`` (handler-time share,
  :mod:`bench.apiserver`) and, with ``--profile``, ``apiserver_cpu_profile`` (perf, :mod:`bench.apiprofile`).
  The ratios (``sundial_over_raw``, ``sundial_over_raw_shaped``, ``sundial_over_cronjob_default``) divide
  medians, with the issue's targets.
* ``steady``: ``m``, ``minutes``, and per contender ``raw``, ``sundial`` (``cronjob`` when run) ``p99_s``,
  ``missed``, ``duplicated``, the load during the window.
* ``scale``: ``n``, ``rss_mb`` (idle, after the first status writes), ``ready_s``, the peak RSS.
* ``cost`` (merged field by field: the ``cost`` scenario sets the first-run half, ``steady`` the recurring half):
  ``writes_per_first_run``, ``writes_per_recurring_run`` (Events amortised, included), the same without Events
  and the Events apart, operator CPU per run.

A section is replaced as a whole by a new run of its scenario (its numbers belong together), except ``cost``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import cost

MERGED_FIELD_BY_FIELD = ("cost",)
OWN_WRITE_VERBS = ("create", "update", "patch", "delete")


def _own_writes(counters: dict[str, float] | None) -> float | None:
    """The operator's own writes per run (``sundial_api_requests_total``, Leases apart): a cross-check of the
    API-server difference, which Event aggregation in the controller manager makes noisy by a few tenths."""
    if not counters:
        return None
    return round(sum(v for k, v in counters.items() if k.split("|")[0] in OWN_WRITE_VERBS and "leases" not in k), 2)


def _lag(data: dict[str, Any]) -> dict[str, Any]:
    lag = data.get("lag", {})
    return {"p50_s": lag.get("p50"), "p99_s": lag.get("p99")}


#: Targets of Sundial's median time to the last Job over each contender's (issue 31).
TARGETS = {"raw": 1.5, "raw_shaped": 1.2, "cronjob_default": 0.2}


def _repetition(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "repetition": data.get("repetition"),
        **_lag(data),
        "last_s": data.get("time_to_last_job"),
        "missing": data.get("missing"),
        "loadavg": {"at_nominal": data.get("load_at_nominal"), "after": data.get("load_after")},
        "cpu_s_instant": data.get("cpu_seconds"),
    }


def _median(data: dict[str, Any]) -> dict[str, Any]:
    m = data.get("median") or {}
    lag = m.get("lag") or {}
    return {
        "last_s": m.get("time_to_last_job"),
        "p50_s": lag.get("p50"),
        "p99_s": lag.get("p99"),
        "cpu_s_instant": m.get("cpu_seconds"),
        "cpu_s_instant_total": m.get("cpu_seconds_total"),
        "repetitions": m.get("repetitions"),
    }


def _ratio(sundial: dict[str, Any], other: dict[str, Any], target: float | None) -> dict[str, Any] | None:
    """Sundial's median last and p99 over OTHER's (the median repetition's when a run has no medians)."""
    mine, theirs = sundial.get("median") or sundial, other.get("median") or other
    if not (mine.get("last_s") and theirs.get("last_s")):
        return None
    ratio = {
        "last": round(mine["last_s"] / theirs["last_s"], 2),
        "p99": round(mine["p99_s"] / theirs["p99_s"], 2) if mine.get("p99_s") and theirs.get("p99_s") else None,
    }
    if target is not None:
        ratio["target"] = target
        ratio["met"] = ratio["last"] <= target
    return ratio


def herd(result: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = {
        "n": result["n"],
        "namespaces": result["namespaces"],
        "repetitions": result.get("repetitions", 1),
        "order": result.get("order"),
        "production": result.get("production"),
        "operator_args": result.get("operator_args"),
    }
    for name, data in result["contenders"].items():
        entry = {
            **_lag(data),
            "last_s": data.get("time_to_last_job"),
            "jobs": data.get("jobs_seen"),
            "missing": data.get("missing"),
            "loadavg": {"at_nominal": data.get("load_at_nominal"), "after": data.get("load_after")},
            "cpu_s_instant": data.get("cpu_seconds"),
        }
        if "median" in data:
            entry["median"] = _median(data)
            entry["repetitions"] = [_repetition(r) for r in data.get("repetitions", [])]
        job_bytes = next((r["job_bytes"] for r in data.get("repetitions", [data]) if r.get("job_bytes")), None)
        if job_bytes:
            entry["job_bytes"] = job_bytes
        if name == "sundial":
            entry["cpu_ms_per_run_instant"] = data.get("instant", {}).get("cpu_ms_per_run")
            if "fencing_enforced" in data:
                entry["fencing_enforced"] = data["fencing_enforced"]
        by_kind = data.get("instant", {}).get("apiserver", {}).get("by_kind")
        if by_kind:
            entry["apiserver_handler_share"] = dict(list(by_kind.items())[:8])
        profile = data.get("apiserver_profile", {}).get("by_kind")
        if profile:
            entry["apiserver_cpu_profile"] = profile
        section[name.replace("-", "_")] = entry
    sundial = section.get("sundial", {})
    for other in ("raw", "raw_shaped", "raw_cronjob_shaped", "cronjob_default"):
        ratio = _ratio(sundial, section.get(other, {}), TARGETS.get(other))
        if ratio is not None:
            section[f"sundial_over_{other}"] = ratio
    return {"herd": section}


def _per_run(s: dict[str, Any], *, instant_cpu_ms: Any) -> dict[str, Any]:
    """What the first-run and the recurring-run cost sections both hold, from Sundial's per-run counts ``s``."""
    own = s.get("operator_own_counters_per_run")
    return {
        "writes_without_events": s["writes_without_events"],
        "events": s["events"],
        "downstream_writes": s["downstream_writes"],
        "requests_per_run": s["requests_per_run"],
        "operator_own_counters_per_run": own,
        "writes_by_own_counter": _own_writes(own),
        "operator_cpu_ms_per_run": s["cpu_ms_per_run"].get("operator"),
        "operator_cpu_ms_per_run_instant": instant_cpu_ms,
        "apiserver_cpu_ms_per_run": s["cpu_ms_per_run"].get("apiserver"),
    }


def steady(result: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = {"m": result["m"], "minutes": result["minutes"]}
    for name, data in result["contenders"].items():
        section[name] = {
            **_lag(data),
            "max_s": data.get("lag", {}).get("max"),
            "runs": data.get("runs"),
            "expected": data.get("expected"),
            "missed": data.get("missed"),
            "duplicated": data.get("duplicated"),
            "loadavg": {"before": data.get("load_before"), "during": data.get("load_during")},
            "cpu_ms_per_run": data.get("cpu_per_run_ms"),
            "cpu_ms_per_run_instant": data.get("cpu_ms_per_run_instant"),
        }
    raw, sundial = section.get("raw", {}), section.get("sundial", {})
    if raw.get("p99_s") and sundial.get("p99_s"):
        section["sundial_over_raw"] = {"p99": round(sundial["p99_s"] / raw["p99_s"], 2), "target": 1.5}
    out: dict[str, Any] = {"steady": section}
    recurring = cost.recurring_run(result)
    if recurring and "sundial" in recurring:
        s = recurring["sundial"]
        out["cost"] = {
            "writes_per_recurring_run": s["writes"],
            "recurring_run": {
                **_per_run(s, instant_cpu_ms=sundial.get("cpu_ms_per_run_instant", {}).get("operator")),
                "raw_apiserver_cpu_ms_per_run": recurring["raw"]["cpu_ms_per_run"].get("apiserver"),
                "runs": s["runs"],
                "m": result["m"],
                "window_minutes": result["minutes"] - 1,
                "target": 2,
            },
        }
    return out


def scale(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "scale": {
            "n": result["n"],
            "rss_mb": result.get("operator_rss_mb"),
            "ready_s": result.get("operator_ready_seconds"),
            "rss_peak_mb": result.get("operator_rss_peak_mb"),
            "rss_at_ready_mb": result.get("operator_rss_mb_at_ready"),
            "idle_cpu_pct": result.get("operator_idle_cpu_pct"),
            "first_status_writes_s": result.get("operator_settle_seconds"),
            "create_seconds": result.get("sj_create_seconds"),
            "create_per_second": result.get("sj_create_per_second"),
            "loadavg": {
                "at_operator_start": result.get("load_at_operator_start"),
                "idle": result.get("load_operator_idle"),
            },
            "targets": {"rss_mb": 250, "ready_s": 90, "n": 100000},
        }
    }


def first_run_cost(result: dict[str, Any]) -> dict[str, Any]:
    s = result["per_run"]["sundial"]
    data = result["contenders"]["sundial"]
    return {
        "cost": {
            "writes_per_first_run": s["writes"],
            "first_run": {
                **_per_run(s, instant_cpu_ms=data["instant"]["cpu_ms_per_run"].get("operator")),
                "n": result["n"],
                "settle_s": data.get("settle_seconds"),
                "loadavg": {"at_nominal": data.get("load_at_nominal"), "settled": data.get("load_settled")},
                "target": 3,
            },
        }
    }


def _intake_run(run: dict[str, Any] | None) -> dict[str, Any] | None:
    if not run:
        return None
    return {
        "objects": run.get("objects"),
        "rss_peak_mb_at_ready": run.get("rss_peak_mb_at_ready"),
        "ready_s": run.get("ready_seconds"),
        "rss_mb_idle": run.get("rss_mb_idle"),
        "rss_peak_mb": run.get("rss_peak_mb"),
        "loadavg": {"at_start": run.get("load_at_start"), "idle": run.get("load_idle")},
    }


def intake(result: dict[str, Any]) -> dict[str, Any]:
    """The intake scenario: peak RSS while listing the largest legal objects (and ordinary ones, and none)."""
    return {
        "intake": {
            "n": result["n"],
            "object_bytes_as_served": result.get("object_bytes_as_served"),
            "none": _intake_run(result.get("none")),
            "largest": _intake_run(result.get("largest")),
            "ordinary": _intake_run(result.get("ordinary_run")),
            "targets": {"chart_memory_limit_mb": 512, "page_bytes": 16 * 1024 * 1024},
        }
    }


HEADLINES = {"herd": herd, "steady": steady, "scale": scale, "cost": first_run_cost, "intake": intake}


def headlines(name: str, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The top-level sections of latest.json that scenario NAME's RESULT sets (empty for a failed run)."""
    if not result.get("ok", True):
        return {}
    if name in HEADLINES:
        return HEADLINES[name](result)
    if result.get("latest"):  # a scenario that makes its own (neighbour)
        return {name: dict(result["latest"])}
    return {}


def merge(latest: dict[str, Any], sections: dict[str, dict[str, Any]], label: dict[str, Any]) -> dict[str, Any]:
    """LATEST with SECTIONS set (each with LABEL: size, start time, load, machine); other keys kept."""
    merged = dict(latest)
    for key, section in sections.items():
        if key in MERGED_FIELD_BY_FIELD:
            part = "first_run" if "first_run" in section else "recurring_run"
            merged[key] = {**merged.get(key, {}), **section, part: {**section[part], **label}}
        else:
            merged[key] = {**section, **label}
    return merged


def record(path: Path, name: str, result: dict[str, Any], label: dict[str, Any]) -> list[str]:
    """Merge scenario NAME's headlines into the JSON file PATH; the sections written."""
    sections = headlines(name, result)
    if not sections:
        return []
    latest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merge(latest, sections, label), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return sorted(sections)
