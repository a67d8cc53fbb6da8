"""The herd's interleaved repetitions (issue 31): every contender at least N times on one control plane, in a
rotating order, each contender's headline its median, every repetition kept."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from bench import repetitions

CONTENDERS = ["raw", "raw-shaped", "raw-cronjob-shaped", "sundial"]


def test_each_contender_runs_once_per_repetition_interleaved_not_in_blocks() -> None:
    order = repetitions.order(CONTENDERS, 3)
    assert Counter(c for _, c in order) == {c: 3 for c in CONTENDERS}
    # Blocks would be raw, raw, raw, ...: interleaved, every repetition holds every contender once.
    for rep in range(3):
        assert sorted(c for r, c in order if r == rep) == sorted(CONTENDERS)
    assert [r for r, _ in order] == sorted(r for r, _ in order)


def test_the_order_rotates_so_no_contender_always_runs_first() -> None:
    order = repetitions.order(CONTENDERS, 4)
    firsts = [c for i, (_, c) in enumerate(order) if i % len(CONTENDERS) == 0]
    assert firsts == CONTENDERS
    # ...nor always right after the same one: sundial follows raw-cronjob-shaped only in some repetitions.
    follows = {order[i - 1][1] for i in range(1, len(order)) if order[i][1] == "sundial"}
    assert len(follows) > 1


@pytest.mark.parametrize(("contenders", "reps", "field"), [(CONTENDERS, 0, "herd_reps"), ([], 3, "herd_contenders")])
def test_bad_parameters_are_refused_naming_the_parameter(contenders: list[str], reps: int, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        repetitions.order(contenders, reps)


def run(last: float, p99: float, cpu: dict[str, float], rep: int) -> dict[str, Any]:
    return {
        "repetition": rep,
        "time_to_last_job": last,
        "time_to_first_job": 0.1,
        "lag": {"p50": last / 2, "p90": p99, "p99": p99, "max": last},
        "cpu_seconds": cpu,
        "lags": [0.1] * 5,
    }


def test_medians_of_times_lags_and_the_cpu_of_every_process() -> None:
    runs = [
        run(3.0, 2.9, {"apiserver": 4.0, "etcd": 1.0, "operator": 2.0}, 0),
        run(9.0, 8.0, {"apiserver": 9.0, "etcd": 3.0, "operator": 1.0}, 1),
        run(4.0, 3.5, {"apiserver": 5.0, "etcd": 2.0, "operator": 3.0}, 2),
    ]
    m = repetitions.medians(runs)
    assert m["time_to_last_job"] == 4.0
    assert m["lag"]["p99"] == 3.5
    assert m["cpu_seconds"] == {"apiserver": 5.0, "etcd": 2.0, "operator": 2.0}
    assert m["cpu_seconds_total"] == 10.0  # the median of the totals 7, 13, 10
    assert m["repetitions"] == 3


def test_the_combined_entry_is_the_median_repetition_with_every_repetition_kept() -> None:
    runs = [run(3.0, 2.9, {"apiserver": 4.0}, 0), run(9.0, 8.0, {"apiserver": 9.0}, 1), run(4.0, 3.5, {}, 2)]
    combined = repetitions.combine(runs)
    assert combined["median_repetition"] == 2
    assert combined["time_to_last_job"] == 4.0
    assert combined["lags"] == [0.1] * 5  # the median repetition keeps its lags (the report's plots)
    assert [r["time_to_last_job"] for r in combined["repetitions"]] == [3.0, 9.0, 4.0]
    assert all("lags" not in r for r in combined["repetitions"])


def test_an_even_count_stands_for_itself_with_the_lower_median_repetition() -> None:
    runs = [run(5.0, 1, {}, 0), run(2.0, 1, {}, 1), run(7.0, 1, {}, 2), run(4.0, 1, {}, 3)]
    assert repetitions.median_index(runs) == 3  # 4.0 of 2, 4, 5, 7
    assert repetitions.medians(runs)["time_to_last_job"] == 4.5
