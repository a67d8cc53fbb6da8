"""``python -m bench run [--scenario herd|steady|scale|cost|failover|neighbour|intake|calendar-edit|all]
[--size smoke|small|full] [--set KEY=VALUE] [--out DIR] [--latest docs/benchmarks/latest.json | --no-latest]``,
``python -m bench report DIR`` (re-render report.md and the plots), ``python -m bench record DIR [--latest F]``
(merge a results folder's headline numbers into the results file).

Each scenario's headline numbers are merged into ``--latest`` (``bench/latest.py``); a full-size run writes
``docs/benchmarks/latest.json`` unless ``--no-latest``, a smaller one only when ``--latest`` is given."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import env, latest, report, scenarios

SCENARIOS = ("herd", "steady", "scale", "cost", "failover", "neighbour", "intake", "calendar-edit")
LATEST = env.REPO / "docs" / "benchmarks" / "latest.json"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run scenarios, each on its own fresh sandbox")
    run.add_argument("--scenario", choices=[*SCENARIOS, "all"], action="append", help="repeatable; default all")
    run.add_argument("--size", choices=sorted(scenarios.SIZES), default="full")
    run.add_argument("--out", type=Path, default=None, help="results folder (default bench/results/<UTC time>)")
    run.add_argument("--profile", action="store_true", help="py-spy record the operator during the herd")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a size parameter")
    run.add_argument(
        "--max-load", type=float, default=0.0, help="wait (up to --load-wait s) until the 1-minute load is below this"
    )
    run.add_argument("--load-wait", type=float, default=900.0)
    run.add_argument(
        "--latest",
        type=Path,
        default=None,
        help=f"merge each scenario's headline numbers into this JSON file (default with --size full: {LATEST})",
    )
    run.add_argument("--no-latest", action="store_true", help="write no results file, whatever the size")
    sub.add_parser("report", help="re-render report.md and plots of a results folder").add_argument("folder", type=Path)
    record = sub.add_parser("record", help="merge a results folder's headline numbers into the results file")
    record.add_argument("folder", type=Path)
    record.add_argument("--latest", type=Path, default=LATEST)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # Background shells ignore SIGINT; make SIGINT and SIGTERM unwind (operators, watchers, sandboxes stopped).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.command == "report":
        results = json.loads((args.folder / "results.json").read_text(encoding="utf-8"))
        report.render(results, args.folder)
        return 0
    if args.command == "record":
        results = json.loads((args.folder / "results.json").read_text(encoding="utf-8"))
        for name, result in results["scenarios"].items():
            written = latest.record(args.latest, name, result, _label(results, result))
            print(f"{args.latest}: {', '.join(written) or 'nothing'} from {name}", flush=True)
        return 0
    picked: list[str] = args.scenario or ["all"]
    chosen = list(SCENARIOS) if "all" in picked else [s for s in SCENARIOS if s in picked]
    out: Path = args.out or Path("bench/results") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    params = dict(scenarios.SIZES[args.size])
    for item in args.set:
        key, value = item.split("=", 1)
        params[key] = type(params[key])(value) if key in params else value
    results_path = out / "results.json"
    results: dict[str, Any] = (
        json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {"scenarios": {}}
    )
    command = " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])])
    results.update({"machine": env.machine(), "size": args.size, "params": params, "set": args.set})
    results["command"] = command
    for name in chosen:
        waited = _wait_for_load(args.max_load, args.load_wait) if args.max_load else 0.0
        print(f"== {name} (size {args.size}) load={env.load()}", flush=True)
        started = time.time()
        try:
            result = scenarios.run(name, out, params, profile=args.profile)
            result["ok"] = True
        except Exception as error:  # a scenario's failure is recorded; the others still run
            result = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            print(f"!! {name} failed: {error}", file=sys.stderr, flush=True)
        result.update(
            {
                "started": datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds"),
                "wall_seconds": round(time.time() - started, 1),
                "load_waited_seconds": round(waited, 1),
                "load_end": env.load(),
            }
        )
        results["scenarios"][name] = result
        results_path.write_text(json.dumps(results, indent=1), encoding="utf-8")
        latest_path = args.latest if args.latest is not None else (LATEST if args.size == "full" else None)
        if latest_path is not None and not args.no_latest:
            label = _label(results, result)
            written = latest.record(latest_path, name, result, label)
            if written:
                print(f"{latest_path}: {', '.join(written)} from {name}", flush=True)
        report.render(results, out)
    print(f"results: {out}", flush=True)
    return 0


def _label(results: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """What a results-file section says about the run it came from (RESULTS: the folder's results.json)."""
    return {
        "size": results.get("size"),
        "set": results.get("set", []),
        "params": results.get("params", {}),
        "started": result.get("started"),
        "wall_seconds": result.get("wall_seconds"),
        "loadavg_end": result.get("load_end"),
        "machine": results.get("machine", {}),
        "command": results.get("command"),
    }


def _wait_for_load(limit: float, wait: float) -> float:
    start = time.monotonic()
    while env.load()[0] >= limit and time.monotonic() - start < wait:
        time.sleep(15)
    return time.monotonic() - start


if __name__ == "__main__":
    sys.exit(main())
