"""What a run costs the API server, by difference from the raw client (``apiserver_request_total`` has no
user-agent label): a contender's requests per run over a window, minus what the raw client's run cost in the
same kind of window (its Job POST and everything downstream of a Job: the Job controller's pod and status
writes, the scheduler's binding, kwok's pod status, their Events), plus the contender's own Job POST.

* **first run of a new object** (the ``cost`` scenario: N objects created, each runs once): the window opens
  just before the objects are created and closes when the API server's writes have settled, so it holds the
  object's first status write, its run and its completion; the bench's own N creates are taken out.
* **recurring run** (the ``steady`` scenario, raw client beside it): the window opens at second 57 of the
  first minute and closes at second 57 of the last, the same phase of the minute, so it holds
  (minutes - 1) x M runs of objects that have run before, Events amortised over it (a series is written at most
  every 5 minutes: a short window holds a noisy share of them, shown apart).
"""

from __future__ import annotations

from typing import Any

from bench import apiserver


def _own_counters(requests: dict[str, float], runs: int) -> dict[str, float]:
    return {k: round(v / max(1, runs), 3) for k, v in sorted(requests.items()) if "leases" not in k}


def first_run(result: dict[str, Any]) -> dict[str, Any]:
    """The ``cost`` scenario's result with ``per_run`` added: per contender, requests per run (raw: absolute;
    the others: over raw) and :func:`apiserver.writes_summary` of them, CPU per run in the whole window."""
    contenders = result["contenders"]
    raw = contenders["raw"]
    raw_requests, raw_runs = raw["whole"]["apiserver"]["requests"], raw["jobs_seen"]
    per_run: dict[str, Any] = {}
    for contender, data in contenders.items():
        runs = max(1, data["jobs_seen"])
        requests = dict(data["whole"]["apiserver"]["requests"])
        for key, count in data.get("created", {}).items():  # the bench's creates, not the contender's
            requests[key] = requests.get(key, 0.0) - count
        if contender == "raw":
            requests_per_run = {
                k: round(v / runs, 3)
                for k, v in sorted(requests.items())
                if v / runs >= 0.005 and k.split("|", maxsplit=1)[0] not in apiserver.LONG_RUNNING
            }
            writes = round(
                sum(v for k, v in requests_per_run.items() if apiserver.is_write(k) and "leases" not in k), 2
            )
            per_run[contender] = {"requests_per_run": requests_per_run, "writes": writes}
        else:
            requests_per_run = apiserver.per_run_over(requests, raw_requests, runs, raw_runs)
            per_run[contender] = {"requests_per_run": requests_per_run, **apiserver.writes_summary(requests_per_run)}
        per_run[contender]["cpu_ms_per_run"] = data["whole"]["cpu_ms_per_run"]
        if data["whole"]["operator_requests"]:
            per_run[contender]["operator_own_counters_per_run"] = _own_counters(
                data["whole"]["operator_requests"], runs
            )
    result["per_run"] = per_run
    return result


def recurring_run(result: dict[str, Any]) -> dict[str, Any] | None:
    """From a ``steady`` result with a raw contender and a recurring window: per non-raw contender, requests and
    writes per recurring run over raw, CPU per recurring run; None without raw or without the window."""
    contenders = result["contenders"]
    raw = contenders.get("raw", {}).get("recurring")
    if raw is None:
        return None
    raw_requests, raw_runs = raw["apiserver"]["requests"], raw["runs"]
    per_run: dict[str, Any] = {"raw": {"cpu_ms_per_run": raw["cpu_ms_per_run"], "runs": raw_runs}}
    for contender, data in contenders.items():
        window = data.get("recurring")
        if contender == "raw" or window is None:
            continue
        requests_per_run = apiserver.per_run_over(
            window["apiserver"]["requests"], raw_requests, window["runs"], raw_runs
        )
        per_run[contender] = {
            "runs": window["runs"],
            "requests_per_run": requests_per_run,
            **apiserver.writes_summary(requests_per_run),
            "cpu_ms_per_run": window["cpu_ms_per_run"],
        }
        if window["operator_requests"]:
            per_run[contender]["operator_own_counters_per_run"] = _own_counters(
                window["operator_requests"], window["runs"]
            )
    return per_run
