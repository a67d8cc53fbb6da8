"""Prometheus metrics (prefix ``sundial_``), in a registry of their own; no per-object labels (those come from
kube-state-metrics with config/kube-state-metrics)."""

from __future__ import annotations

import platform
from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

import sundial
from sundial.model.status import StatusCounter

LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900, 3600)
HANDOFF_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120)
API_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class EventResult(StrEnum):
    """Values of the ``result`` label of ``sundial_events_total``."""

    CREATED = "created"
    """An Event created (the first occurrence of a series)."""
    PATCHED = "patched"
    """An Event's count and last time patched (later occurrences)."""
    AGGREGATED = "aggregated"
    """An occurrence counted into an existing series, to be written with its next patch."""
    DROPPED = "dropped"
    """An occurrence lost to a full queue or cache, or to a shard this replica no longer acts for."""
    FAILED = "failed"
    """An API write that failed (Events are best effort: never retried)."""


class FencedKind(StrEnum):
    """Values of the ``kind`` label of ``sundial_fenced_writes_total``: which write the fencing policy refused."""

    JOB_CREATE = "job_create"
    JOB_DELETE = "job_delete"
    STATUS = "status"
    EVENT = "event"


class PassOutcome(StrEnum):
    """How one reconcile pass ended: the ``outcome`` label of ``sundial_reconciles_total``."""

    CLAIMED = "claimed"
    """A status claim was written in the pass (and the plan's actions ran)."""
    UNCHANGED = "unchanged"
    """The plan changed nothing in the status, so nothing was claimed (its actions, if any, ran)."""
    CONTENDED = "contended"
    """Still conflicting after the re-plan budget; the key is tried again soon."""
    GONE = "gone"
    """The ScheduledJob was gone (from the cache, or from the API during the pass)."""
    NOT_ACTING = "not_acting"
    """This replica does not act for the object's shard: nothing was planned."""
    FAILED = "failed"
    """The pass raised (an API error after the in-pass retries, or the shard was lost mid-pass)."""


class Metrics:
    """All of the operator's metrics. Also the API request observer of :mod:`sundial.kube.requests`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.build_info = Gauge(
            "sundial_build_info",
            "Always 1; the labels say which Sundial and which Python this replica runs.",
            ["version", "python_version"],
            registry=r,
        )
        self.build_info.labels(version=sundial.__version__, python_version=platform.python_version()).set(1)
        self.schedule_lag = Histogram(
            "sundial_schedule_lag_seconds",
            "From a run's nominal time to the creation of its first Job.",
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.runs_started = Counter("sundial_runs_started", "Runs whose first Job was created.", registry=r)
        self.attempts = Counter("sundial_attempts", "Jobs created (all attempts).", registry=r)
        self.missed = Counter("sundial_runs_missed", "Runs missed (past the catch-up window).", registry=r)
        self.skipped = Counter("sundial_runs_skipped", "Runs skipped (concurrencyPolicy Forbid).", registry=r)
        self.dead_lettered = Counter("sundial_runs_dead_lettered", "Runs dead-lettered.", registry=r)
        self.succeeded = Counter("sundial_runs_succeeded", "Runs whose Job succeeded.", registry=r)
        self.attempts_failed = Counter(
            "sundial_attempts_failed", "Attempts whose Job failed or was lost (each may be retried).", registry=r
        )
        self.retried = Counter("sundial_attempts_retried", "Retry attempts started (attempt 2 on).", registry=r)
        self.excluded = Counter("sundial_runs_excluded", "Nominal times not run: excluded (spec.exclude).", registry=r)
        self.buffered = Counter("sundial_runs_buffered", "Runs that waited for an active run to end.", registry=r)
        #: Each ``status.counters`` field and the metric that counts its increases.
        self.by_status_counter = self._by_status_counter()
        self.active_runs = Gauge("sundial_active_runs", "Runs with an active attempt.", registry=r)
        self.leases_held = Gauge("sundial_leases_held", "Shard Leases this replica holds.", registry=r)
        self.shards_assigned = Gauge(
            "sundial_shards_assigned", "Shards the balanced assignment gives this replica.", registry=r
        )
        self.shard_members = Gauge("sundial_shard_members", "Live replicas this replica sees.", registry=r)
        self.shard_rebalances = Counter(
            "sundial_shard_rebalances", "Changes of the shard assignment seen by this replica.", registry=r
        )
        self.shard_handoff = Histogram(
            "sundial_shard_handoff_seconds",
            "Shard handoff time: phase=release from deciding to give a shard up until its Lease is released; "
            "phase=acquire from a shard being assigned to this replica until its Lease is held.",
            ["phase"],
            buckets=HANDOFF_BUCKETS,
            registry=r,
        )
        self.due_index_size = Gauge("sundial_due_index_size", "ScheduledJobs with a pending wake-up.", registry=r)
        self.reconciles = Counter(
            "sundial_reconciles", "Reconcile passes by outcome (PassOutcome).", ["outcome"], registry=r
        )
        for outcome in PassOutcome:
            self.reconciles.labels(outcome=outcome.value)
        self.events = Counter(
            "sundial_events",
            "Events by result: created and patched (API writes), aggregated (occurrences counted into an "
            "existing series), dropped (occurrences lost to a full queue or cache), failed (API writes that failed).",
            ["result"],
            registry=r,
        )
        for result in EventResult:
            self.events.labels(result=result)
        self._fencing(r)
        self.api_requests = Counter(
            "sundial_api_requests", "Kubernetes API requests.", ["verb", "resource", "code"], registry=r
        )
        self.api_latency = Histogram(
            "sundial_api_request_duration_seconds",
            "Kubernetes API request latency.",
            ["verb", "resource"],
            buckets=API_BUCKETS,
            registry=r,
        )

    def _by_status_counter(self) -> dict[StatusCounter, Counter]:
        return {
            StatusCounter.MISSED: self.missed,
            StatusCounter.SKIPPED: self.skipped,
            StatusCounter.DEAD_LETTERED: self.dead_lettered,
            StatusCounter.SUCCEEDED: self.succeeded,
            StatusCounter.FAILED: self.attempts_failed,
            StatusCounter.RETRIED: self.retried,
            StatusCounter.EXCLUDED: self.excluded,
            StatusCounter.BUFFERED: self.buffered,
        }

    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        self.api_requests.labels(verb=verb, resource=resource, code=code).inc()
        self.api_latency.labels(verb=verb, resource=resource).observe(seconds)

    def _fencing(self, r: CollectorRegistry) -> None:
        """Counters of writes the API server refused or found squatted (DESIGN §10.3)."""
        self.unexpected_jobs = Counter(
            "sundial_unexpected_jobs",
            "Job creates that found a Job not controlled by the ScheduledJob at the attempt's name (the attempt "
            "ends as UnexpectedJob, the run continues under the next attempt's name).",
            registry=r,
        )
        self.fenced_writes = Counter(
            "sundial_fenced_writes",
            "Writes the API server's fencing policy refused (403: the token is older than the shard Lease), by kind. "
            "Each one made this replica stop acting on the shard until it holds the Lease again.",
            ["kind"],
            registry=r,
        )
        for kind in FencedKind:
            self.fenced_writes.labels(kind=kind)
