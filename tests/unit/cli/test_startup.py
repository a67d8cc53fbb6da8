"""Starting the command-line tools loads no Kubernetes client or pydantic unless a command needs it.

Not a timing test: it checks which modules a fresh interpreter imported. tools/measure-cli-startup.py
measures the CPU time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("kubernetes_asyncio", "aiohttp", "pydantic", "prometheus_client")

PROBE = """
import contextlib, io, json, sys
import sundial.cli.{module} as cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main({argv!r})
    except SystemExit:
        pass
print(json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
"""


def imported(module: str, argv: list[str]) -> set[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "operator"), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, argv=argv)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("commands.main", ["--help"]),
        ("commands.main", ["preview", "--schedule", "30 2 * * *", "--time-zone", "Europe/Berlin"]),
        ("commands.main", ["preview", "--help"]),
        ("kubectl.main", ["--help"]),
        ("kubectl.main", ["describe", "--help"]),
        ("kubectl.main", ["completion", "bash"]),
        ("kubectl.main", ["__complete", "desc"]),
        ("kubectl.main", ["version", "--client"]),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else value,
)
def test_starting_loads_nothing_heavy(module: str, argv: list[str]) -> None:
    assert not imported(module, argv) & set(HEAVY)
