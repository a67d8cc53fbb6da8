"""results.json -> report.md (markdown tables, targets) and PNG plots in the same folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench import cost


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _load(value: Any) -> str:
    return "/".join(_f(v) for v in value) if isinstance(value, list | tuple) else "-"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_f(c) if not isinstance(c, str) else c for c in row) + " |" for row in rows]
    return [*lines, ""]


def _cdf(ax: Any, values: list[float], label: str) -> None:
    if not values:
        return
    ordered = sorted(values)
    n = len(ordered)
    ax.step(ordered, [(i + 1) / n for i in range(n)], where="post", label=f"{label} (n={n})")


TICKS = (0, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)


def _lag_axis(ax: Any) -> None:
    """Lags from sub-second (raw) to minutes (CronJob at defaults) on one axis: linear below 1 s, log above."""
    ax.set_xscale("symlog", linthresh=1.0, linscale=0.6)
    top = max((line.get_xdata()[-1] for line in ax.get_lines() if len(line.get_xdata())), default=1.0)
    ax.set_xticks([t for t in TICKS if t <= max(1.0, float(top) * 1.5)])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))


def plots(results: dict[str, Any], out: Path) -> list[str]:
    made: list[str] = []
    herd = results.get("scenarios", {}).get("herd", {})
    contenders = herd.get("contenders", {})
    if contenders:
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, data in contenders.items():
            _cdf(ax, data.get("lags", []), name)
        _lag_axis(ax)
        ax.set_xlabel("lag: nominal time -> Job seen by the independent watch (s)")
        ax.set_ylabel("fraction of Jobs")
        ax.set_title(f"herd: {herd.get('n')} objects due at the same instant")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "herd-lag-cdf.png", dpi=110)
        plt.close(fig)
        fig, ax = plt.subplots(figsize=(8, 4.5))
        names = list(contenders)
        values = [contenders[n].get("time_to_last_job") or 0.0 for n in names]
        bars = ax.bar(names, values, color=["#888", "#d62", "#36c", "#69c", "#5a5"][: len(names)])
        ax.bar_label(bars, fmt="%.1f s")
        ax.set_ylabel("time to last Job (s)")
        ax.set_title(f"herd of {herd.get('n')}: nominal time -> last Job seen")
        fig.tight_layout()
        fig.savefig(out / "herd-time-to-last-job.png", dpi=110)
        plt.close(fig)
        made += ["herd-lag-cdf.png", "herd-time-to-last-job.png"]
    steady = results.get("scenarios", {}).get("steady", {}).get("contenders", {})
    if steady:
        fig, ax = plt.subplots(figsize=(8, 5))
        for name, data in steady.items():
            _cdf(ax, data.get("lags", []), name)
        _lag_axis(ax)
        ax.set_xlabel("lag (s)")
        ax.set_ylabel("fraction of runs")
        ax.set_title(f"steady: {results['scenarios']['steady'].get('m')} objects due at second 0 of every minute")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "steady-lag-cdf.png", dpi=110)
        plt.close(fig)
        made.append("steady-lag-cdf.png")
    return made


def markdown(results: dict[str, Any], images: list[str]) -> str:
    machine = results.get("machine", {})
    scen = results.get("scenarios", {})
    lines = [
        f"# Sundial benchmark results (size `{results.get('size')}`)",
        "",
        f"Machine: {machine.get('cores')} cores ({machine.get('cpu_model')}), {machine.get('memory_gb')} GB, "
        f"Python {machine.get('python')}, kernel {machine.get('kernel')}. Load averages are 1/5/15-minute.",
        "",
    ]
    for name, data in scen.items():
        status = "ok" if data.get("ok") else f"FAILED: {data.get('error')}"
        lines.append(
            f"- {name}: {status}; started {data.get('started')}, {data.get('wall_seconds')} s, "
            f"load at end {_load(data.get('load_end'))}"
        )
    lines.append("")
    herd = scen.get("herd", {})
    if herd.get("contenders"):
        lines += [f"## herd: {herd['n']} objects over {herd['namespaces']} namespaces, all due at once", ""]
        rows = []
        for name, d in herd["contenders"].items():
            lag = d.get("lag", {})
            rows.append([
                name, d.get("jobs_seen"), d.get("missing"), d.get("time_to_first_job"), lag.get("p50"),
                lag.get("p90"), lag.get("p99"), d.get("time_to_last_job"), d.get("slack_seconds"),
                _load(d.get("load_at_nominal")), _cpu(d.get("cpu_seconds", {})),
            ])  # fmt: skip
        lines += _table(
            ["contender", "Jobs", "missing", "first (s)", "p50 (s)", "p90 (s)", "p99 (s)", "last (s)",
             "setup slack (s)", "load at nominal", "CPU s during the herd"],
            rows,
        )  # fmt: skip
        lines += _herd_repetitions(herd)
        split = herd["contenders"].get("sundial", {}).get("priority")
        if split:
            lines += [
                f"Priority: {split['share']:.0%} of Sundial's objects had spec.priority {split['priority']}.", "",
            ]  # fmt: skip
            lines += _table(
                ["objects", "Jobs", "p50 (s)", "p99 (s)", "last (s)"],
                [[part, split[part]["jobs"], split[part]["lag"].get("p50"), split[part]["lag"].get("p99"),
                  split[part]["time_to_last_job"]] for part in ("high", "rest")],
            )  # fmt: skip
        lines += _herd_work(herd["contenders"])
    steady = scen.get("steady", {})
    if steady.get("contenders"):
        lines += [f"## steady: {steady['m']} objects every minute for {steady['minutes']} min", ""]
        rows = []
        for name, d in steady["contenders"].items():
            lag = d.get("lag", {})
            per = d.get("cpu_per_run_ms", {})
            rows.append([
                name, d.get("expected"), d.get("runs"), d.get("missed"), d.get("duplicated"), lag.get("p50"),
                lag.get("p99"), lag.get("max"), per.get("operator"), per.get("kcm"), per.get("apiserver"),
                _load(d.get("load_before")),
            ])  # fmt: skip
        lines += _table(
            ["contender", "expected", "runs", "missed", "duplicated", "p50 (s)", "p99 (s)", "max (s)",
             "operator CPU ms/run", "KCM CPU ms/run", "apiserver CPU ms/run", "load before"],
            rows,
        )  # fmt: skip
        rows = [[name, _cpu(d.get("cpu_ms_per_run_instant", {})),
                 ", ".join(_f(load[0]) for load in d.get("load_during", []))]
                for name, d in steady["contenders"].items()]  # fmt: skip
        lines += ["CPU per run in each minute's instant (1 s before until that minute's last Job):", ""]
        lines += _table(["contender", "CPU ms per run at the instant", "1-minute load, each minute"], rows)
    scale = scen.get("scale", {})
    if "n" in scale:
        lines += [f"## scale: {scale.get('sj_count')} idle ScheduledJobs / {scale.get('cj_count')} idle CronJobs", ""]
        keys = [k for k in scale if k.startswith(("operator_", "kcm_", "sj_", "cj_", "load_"))]
        lines += _table(["measure", "value"], [[k, _load(scale[k]) if isinstance(scale[k], list) else scale[k]]
                                               for k in keys])  # fmt: skip
    lines += _cost(scen.get("cost", {}), scen.get("steady", {}))
    failover = scen.get("failover", {})
    if failover.get("cases"):
        lines += ["## failover: SIGKILL the Lease holder of 2 replicas", ""]
        rows = [[name, str(d.get("flags")), d.get("seconds_to_standby_first_job"),
                 d.get("seconds_since_last_job_of_old_leader"), d.get("new_token"), _load(d.get("load"))]
                for name, d in failover["cases"].items()]  # fmt: skip
        lines += _table(["settings", "flags", "kill -> standby's first Job (s)", "gap in Jobs (s)", "new token",
                         "load"], rows)  # fmt: skip
    neighbour = scen.get("neighbour", {})
    if neighbour.get("latest"):
        latest = neighbour["latest"]
        lines += [f"## neighbour: {latest['victims']} victims every 5 s, alone vs next to a hostile namespace", ""]
        rows = [[phase, d.get("runs"), d.get("missed"), d.get("p50_s"), d.get("p99_s"), d.get("readyz_misses"),
                 _load(d.get("load", {}).get("after"))] for phase, d in (("alone", latest["alone"]),
                                                                        ("hostile", latest["hostile"]))]  # fmt: skip
        lines += _table(["phase", "runs", "missed", "p50 (s)", "p99 (s)", "/readyz misses", "load after"], rows)
        lines += [f"Goal {latest['goal']}: {'met' if latest['goal_met'] else 'NOT met'}.", ""]
    intake = scen.get("intake", {})
    if "largest" in intake:
        lines += [f"## intake: the operator's memory while it lists ({intake.get('object_bytes_as_served')} bytes "
                  "an object as served)", ""]  # fmt: skip
        rows = [[name, d.get("objects"), d.get("rss_peak_mb_at_ready"), d.get("ready_seconds"), d.get("rss_mb_idle"),
                 d.get("rss_peak_mb"), _load(d.get("load_at_start"))]
                for name, d in (("none", intake.get("none")), ("largest legal", intake.get("largest")),
                                ("ordinary", intake.get("ordinary_run"))) if d]  # fmt: skip
        lines += _table(["objects", "count", "peak RSS at ready (MB)", "ready (s)", "idle RSS (MB)",
                         "peak RSS in all (MB)", "load at start"], rows)  # fmt: skip
    lines += [f"![{image}]({image})" for image in images]
    return "\n".join(lines) + "\n"


def _herd_repetitions(herd: dict[str, Any]) -> list[str]:
    """Every repetition of every contender (in the order they ran) and each contender's medians."""
    if int(herd.get("repetitions") or 1) < 2:
        return []
    contenders = herd["contenders"]
    runs = [r for d in contenders.values() for r in d.get("repetitions", [])]
    processes = sorted({p for r in runs for p in r.get("cpu_seconds", {})})
    lines = [f"Interleaved: {herd['repetitions']} repetitions of each contender, in this order: "
             + ", ".join(f"{c} #{r + 1}" for r, c in herd.get("order", [])) + ". The row above is each one's median "
             "repetition (by time to the last Job); the medians:", ""]  # fmt: skip
    rows = []
    for name, d in contenders.items():
        for r in d.get("repetitions", []):
            cpu = r.get("cpu_seconds", {})
            rows.append([name, f"#{r.get('repetition', 0) + 1}", r.get("time_to_last_job"),
                         (r.get("lag") or {}).get("p99"), _load(r.get("load_at_nominal")),
                         *(cpu.get(p) for p in processes)])  # fmt: skip
        m = d.get("median", {})
        rows.append([f"**{name}**", "median", m.get("time_to_last_job"), (m.get("lag") or {}).get("p99"), "",
                     *(m.get("cpu_seconds", {}).get(p) for p in processes)])  # fmt: skip
    return lines + _table(["contender", "repetition", "last (s)", "p99 (s)", "load at nominal",
                           *(f"CPU s {p}" for p in processes)], rows)  # fmt: skip


def _herd_work(contenders: dict[str, Any]) -> list[str]:
    """CPU per run at the instant, and the API server's handler time by request kind, per contender."""
    lines = ["CPU per run: at the instant (1 s before the nominal time until the last Job) and, where the writes "
             "were waited for, in the whole window (object creation until the writes settled):", ""]  # fmt: skip
    rows = [[name, _cpu(d.get("instant", {}).get("cpu_ms_per_run", {})),
             _cpu(d.get("whole", {}).get("cpu_ms_per_run", {})) if d.get("settle_seconds") is not None else "-"]
            for name, d in contenders.items()]  # fmt: skip
    lines += _table(["contender", "CPU ms per run at the instant", "CPU ms per run in all"], rows)
    for name, d in contenders.items():
        server = d.get("instant", {}).get("apiserver", {})
        if not server.get("by_kind"):
            continue
        lines += [
            f"API server during {name}'s herd: {server['cpu_seconds']} CPU-s, {server['handler_seconds']} handler-s; "
            "CPU split by handler-time share (an approximation, see bench/apiserver.py):",
            "",
        ]
        rows = [[k.replace("|", " "), v["requests"], v["handler_s"], v["handler_ms_per_request"], v["cpu_share_s"]]
                for k, v in list(server["by_kind"].items())[:10]]  # fmt: skip
        lines += _table(["verb resource subresource", "requests", "handler s", "handler ms/request", "CPU share s"],
                        rows)  # fmt: skip
        profile = d.get("apiserver_profile", {})
        if profile.get("by_kind"):
            lines += [f"API server CPU profile during {name}'s herd (perf, {profile['samples']} samples at "
                      f"{profile['rate_hz']} Hz; bench/apiprofile.py):", ""]  # fmt: skip
            rows = [[k, v["samples"], f"{v['share']:.1%}", v["cpu_s"]] for k, v in profile["by_kind"].items()]
            lines += _table(["kind", "samples", "share", "CPU s"], rows)
    return lines


def _cost(first: dict[str, Any], steady: dict[str, Any]) -> list[str]:
    """Writes per first run (the cost scenario) and per recurring run (steady, over raw)."""
    lines: list[str] = []
    parts = [("first run of a new object", first.get("per_run"), first.get("n"))]
    if steady.get("contenders"):
        parts.append(("recurring run", cost.recurring_run(steady), steady.get("m")))
    for title, per_run, n in parts:
        if not per_run:
            continue
        lines += [f"## cost per {title} ({n} objects; API server requests over the raw client's)", ""]
        for name, d in per_run.items():
            if "requests_per_run" not in d:
                continue
            lines += [
                f"**{name}**: {d.get('writes')} writes per run (Leases excluded); without Events "
                f"{d.get('writes_without_events', '-')}, Events {d.get('events', '-')}, downstream "
                f"{d.get('downstream_writes', '-')}; CPU ms per run {_cpu(d.get('cpu_ms_per_run', {}))}",
                "",
            ]
            rows = [[k.replace("|", " "), v] for k, v in d["requests_per_run"].items()]
            lines += _table(["verb resource subresource", "per run"], rows)
            if d.get("operator_own_counters_per_run"):
                rows = [[k.replace("|", " "), v] for k, v in d["operator_own_counters_per_run"].items()]
                lines += ["Sundial's own counter (`sundial_api_requests_total`) per run:", ""]
                lines += _table(["verb resource", "per run"], rows)
    return lines


def _cpu(cpu: dict[str, float]) -> str:
    return ", ".join(f"{k} {v}" for k, v in cpu.items())


def render(results: dict[str, Any], out: Path) -> None:
    images = plots(results, out)
    (out / "report.md").write_text(markdown(results, images), encoding="utf-8")
