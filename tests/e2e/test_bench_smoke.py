"""The benchmark suite's smoke run (issue 6): a herd of 100 ScheduledJobs and a one-minute steady of 50, on a
sandbox of its own, through the same code as ``python -m bench run``. It records the numbers
(``bench-smoke.json`` in the test's temporary directory, path printed) and asserts only correctness - every
Job seen by the independent watch, none twice - never speed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]


@pytest.mark.skipif(
    bool(os.environ.get("SUNDIAL_E2E_KUBECONFIG") or os.environ.get("SUNDIAL_E2E_USE_KUBECONFIG")),
    reason="the bench smoke run needs its own sandbox (it restarts nothing, but measures a quiet cluster)",
)
def test_bench_smoke(tmp_path: Path) -> None:
    from bench.env import BenchCluster  # noqa: PLC0415
    from bench.herd import Herd  # noqa: PLC0415
    from bench.scenarios import operator_args  # noqa: PLC0415
    from bench.steady import Steady  # noqa: PLC0415

    out = tmp_path / "bench"
    cluster = BenchCluster("smoke")
    try:
        herd = Herd(
            out=out,
            n=100,
            namespaces=4,
            operator_args=operator_args(),
            kcm_raised=[],
            contenders=["sundial"],
            apiserver_profile=False,
        ).run(cluster)
        steady = Steady(out=out, m=50, minutes=1, namespaces=4, operator_args=operator_args()).run(
            ("sundial",), cluster
        )
    finally:
        cluster.close()
    numbers = {
        "herd": {k: v for k, v in herd["contenders"]["sundial"].items() if k != "lags"},
        "steady": {k: v for k, v in steady["contenders"]["sundial"].items() if k != "lags"},
    }
    record = out / "bench-smoke.json"
    record.write_text(json.dumps(numbers, indent=1), encoding="utf-8")
    print(
        f"bench smoke numbers: {record}\n{json.dumps(numbers['herd']['lag'])}\n{json.dumps(numbers['steady']['lag'])}"
    )

    h = numbers["herd"]
    assert h["missing"] == 0, h
    assert h["jobs_seen"] == 100, h  # one Job per object: nothing missed, nothing twice
    s = numbers["steady"]
    assert s["missed"] == 0, s
    assert s["duplicated"] == 0, s
    assert s["runs"] == s["expected"] == 50, s
