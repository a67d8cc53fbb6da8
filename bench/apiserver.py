"""What the API server did in a window, from its own ``/metrics`` and ``/proc``.

* **requests** by ``verb|group/resource|subresource``: ``apiserver_request_total`` after - before.
* **handler seconds** by the same key: ``apiserver_request_duration_seconds_sum`` after - before — the wall
  time requests of that kind spent inside the API server (admission, validation, encoding, the etcd round
  trip, and waiting for a core when both are busy). Long-running WATCH and CONNECT requests are left out:
  their duration is the watch's lifetime, and the CPU of sending watch events to every watcher is in no
  request's handler time.
* **process CPU**: utime+stime of the kube-apiserver process over the window (``/proc/<pid>/stat``).

The metric has no user-agent label and the CPU no request label, so **CPU per request kind is an
approximation**: :func:`window`'s ``cpu_share_s`` splits the measured process CPU by each kind's share of the
handler seconds. It assumes a handler second costs the same CPU whatever the kind, and it spreads the watch
fan-out over the kinds in proportion to their handler time; it is what the bench can measure without a
profiler in the API server (the sandbox runs it with ``--profiling=false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bench import env

Key = tuple[str, str, str]
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE")
LONG_RUNNING = ("WATCH", "CONNECT", "WATCHLIST")
#: What an operator (Sundial, the CronJob controller, the raw client) writes itself: the ScheduledJob or
#: CronJob and its status, the Job (create, delete, label patch), Events. Everything else a run causes (the Job
#: controller's pod and Job-status writes, the scheduler's bindings, kwok's pod status, the garbage collector's
#: pod deletes) is downstream of the Job and shown apart.
OWN_RESOURCES = ("sundial.dev/scheduledjobs", "batch/cronjobs", "batch/jobs", "events", "events.k8s.io/events")
EVENT_RESOURCES = ("events", "events.k8s.io/events")


class MetricsSource(Protocol):
    async def text(self, path: str) -> str: ...


@dataclass(frozen=True)
class Sample:
    requests: dict[Key, float]
    handler_seconds: dict[Key, float]
    cpu_seconds: float


async def sample(api: MetricsSource, pid: int) -> Sample:
    text = await api.text("/metrics")
    return Sample(
        env.parse_requests(text),
        env.parse_requests(text, "apiserver_request_duration_seconds_sum"),
        env.cpu_seconds(pid),
    )


def window(before: Sample, after: Sample) -> dict[str, Any]:
    """The window's requests, handler seconds and CPU, and the CPU split by handler-time share, by kind."""
    requests = env.delta(after.requests, before.requests)
    handler = {
        k: v for k, v in env.delta(after.handler_seconds, before.handler_seconds).items() if k[0] not in LONG_RUNNING
    }
    cpu = after.cpu_seconds - before.cpu_seconds
    total = sum(handler.values()) or 1.0
    by_kind = {
        "|".join(key): {
            "requests": round(requests.get(key, 0.0)),
            "handler_s": round(seconds, 3),
            "handler_ms_per_request": round(1000 * seconds / max(1.0, requests.get(key, 0.0)), 2),
            "cpu_share_s": round(cpu * seconds / total, 2),
        }
        for key, seconds in sorted(handler.items(), key=lambda item: -item[1])
        if seconds >= 0.005
    }
    return {
        "requests": {"|".join(k): v for k, v in sorted(requests.items())},
        "cpu_seconds": round(cpu, 2),
        "handler_seconds": round(sum(handler.values()), 2),
        "by_kind": by_kind,
    }


def is_write(key: str) -> bool:
    return key.split("|", maxsplit=1)[0] in WRITE_VERBS


def own_write(key: str) -> bool:
    """A write of the kind an operator makes itself (:data:`OWN_RESOURCES`), Leases and Job status apart."""
    verb, resource, subresource = [*key.split("|"), "", ""][:3]
    if verb not in WRITE_VERBS or resource not in OWN_RESOURCES:
        return False
    return not (resource == "batch/jobs" and subresource == "status")  # the Job controller's


def is_event(key: str) -> bool:
    return key.split("|")[1] in EVENT_RESOURCES if key.count("|") >= 1 else False


def per_run_over(
    deltas: dict[str, float], baseline: dict[str, float], runs: int, baseline_runs: int
) -> dict[str, float]:
    """Requests per run of a contender over what a raw Job costs: ``deltas/runs - baseline/baseline_runs``, plus
    the contender's own Job POST (which the baseline's per-run Job POST took away), rounded; |x| < 0.005 and
    WATCHes (counted when they start, not per event) dropped."""
    keys = set(deltas) | set(baseline)
    per_run = {
        k: deltas.get(k, 0.0) / max(1, runs) - baseline.get(k, 0.0) / max(1, baseline_runs) for k in sorted(keys)
    }
    per_run["POST|batch/jobs|"] = per_run.get("POST|batch/jobs|", 0.0) + 1.0
    return {k: round(v, 3) for k, v in per_run.items() if abs(v) >= 0.005 and k.split("|")[0] not in LONG_RUNNING}


def writes_summary(per_run: dict[str, float]) -> dict[str, float]:
    """From requests per run over raw: the contender's own writes (Events apart, Events, total) and the writes
    downstream of its Jobs that raw's Jobs did not cause (e.g. the garbage collector deleting pruned Jobs' pods)."""
    own = {k: v for k, v in per_run.items() if own_write(k)}
    events = sum(v for k, v in own.items() if is_event(k))
    total = sum(own.values())
    downstream = sum(v for k, v in per_run.items() if is_write(k) and not own_write(k) and "leases" not in k)
    return {
        "writes": round(total, 2),
        "writes_without_events": round(total - events, 2),
        "events": round(events, 2),
        "downstream_writes": round(downstream, 2),
    }
