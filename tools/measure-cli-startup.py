#!/usr/bin/env python3
"""Measure the CPU time (user + sys) that the command-line tools take to start, over N runs each.

    python tools/measure-cli-startup.py [--runs 10] [--markdown]

Runs ``sundial --help``, ``sundial preview``, ``kubectl-sundial --help``, ``kubectl-sundial preview`` and
``kubectl-sundial completion bash`` as separate processes with the interpreter running this script. The
plugin's kubectl is a stub on PATH that prints one ScheduledJob, so only the plugin's own CPU is counted.
The budget (issue 15) is 0.3 s for ``--help`` and ``preview``; this is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_SECONDS = 0.3
OBJECT = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": "nightly", "namespace": "default", "uid": "u-1", "generation": 1},
    "spec": {
        "schedule": "30 2 * * *",
        "timeZone": "Europe/Berlin",
        "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
    },
}
COMMANDS: dict[str, list[str]] = {
    "sundial --help": ["-m", "sundial.cli.commands.main", "--help"],
    "sundial preview": [
        "-m",
        "sundial.cli.commands.main",
        "preview",
        "--schedule",
        "30 2 * * *",
        "--time-zone",
        "Europe/Berlin",
    ],
    "kubectl-sundial --help": ["-m", "sundial.cli.kubectl.main", "--help"],
    "kubectl-sundial preview NAME": ["-m", "sundial.cli.kubectl.main", "preview", "nightly"],
    "kubectl-sundial completion bash": ["-m", "sundial.cli.kubectl.main", "completion", "bash"],
}


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    """user + sys CPU of one child process, from wait4's rusage."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        stderr = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}): {stderr}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as stub_dir:
        kubectl = Path(stub_dir) / "kubectl"
        (Path(stub_dir) / "object.json").write_text(json.dumps(OBJECT))
        kubectl.write_text(f'#!/bin/sh\nexec cat "{stub_dir}/object.json"\n')
        kubectl.chmod(0o755)
        env = {**os.environ, "PATH": f"{stub_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "operator"), env.get("PYTHONPATH")]))
        baseline = statistics.median(cpu_seconds([sys.executable, "-c", "pass"], env) for _ in range(args.runs))
        rows = []
        for name, argv in COMMANDS.items():
            samples = [cpu_seconds([sys.executable, *argv], env) for _ in range(args.runs)]
            rows.append((name, statistics.median(samples), max(samples)))
    if args.markdown:
        print(f"| command ({args.runs} runs) | median CPU s | max CPU s | within {BUDGET_SECONDS} s |")
        print("|---|---|---|---|")
        for name, median, worst in rows:
            print(f"| `{name}` | {median:.3f} | {worst:.3f} | {'yes' if worst <= BUDGET_SECONDS else 'NO'} |")
        print(f"| `python -c pass` (interpreter alone) | {baseline:.3f} | | |")
    else:
        for name, median, worst in rows:
            print(f"{name:34} median {median:.3f} s  max {worst:.3f} s")
        print(f"{'python -c pass':34} median {baseline:.3f} s")
    return 0 if all(worst <= BUDGET_SECONDS for _, _, worst in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
