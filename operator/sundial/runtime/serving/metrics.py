"""Prometheus metrics (prefix ``sundial_``), in a registry of their own; no per-object labels (those come from
kube-state-metrics with config/kube-state-metrics).

:class:`Metrics` holds them in small frozen groups, one per concern (runs, reconcile passes, shard Leases,
fencing, Events, API requests), each made with the registry and each field documented.

The registry follows Prometheus' conventions: the ``process_*`` metrics of the operator's process (memory,
CPU, open files; on Linux) are in it, and counters and histograms expose no ``<name>_created`` series (their
creation time, a Unix timestamp under a name that reads like a count) unless asked for (``sundial run
--metrics-created-series``).
"""

from __future__ import annotations

import dataclasses
import platform
from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector

import sundial
from sundial.model.status import StatusCounter
from sundial.runtime.serving.guardmetrics import GuardMetrics, WithdrawReason
from sundial.runtime.serving.intakemetrics import IntakeMetrics
from sundial.runtime.serving.registry import SeriesRegistry

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
    PREPARED = "prepared"
    """A prepared run's instant (DESIGN §7.5): its Job was created under its reservation, without a status
    write first; the write that records it follows in the low-priority lane."""
    CONTENDED = "contended"
    """Still conflicting after the re-plan budget; the key is tried again soon."""
    GONE = "gone"
    """The ScheduledJob was gone (from the cache, or from the API during the pass)."""
    NOT_ACTING = "not_acting"
    """This replica does not act for the object's shard: nothing was planned."""
    DEFERRED = "deferred"
    """A calendar the object names changed and the recompile budget is spent: the pass ends before planning
    and the key comes back once the budget has refilled (DESIGN §12.2)."""
    FAILED = "failed"
    """The pass raised (an API error after the in-pass retries, or the shard was lost mid-pass)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunMetrics:
    """Runs and their attempts (Jobs), as the reconciler creates and observes them."""

    schedule_lag: Histogram
    """``sundial_schedule_lag_seconds``: from a run's nominal time to the creation of its first Job."""

    started: Counter
    """``sundial_runs_started``: runs whose first Job was created."""

    attempts: Counter
    """``sundial_attempts``: Jobs created (all attempts)."""

    active: Gauge
    """``sundial_active_runs``: runs with an active attempt."""

    by_status_counter: dict[StatusCounter, Counter]
    """Each ``status.counters`` field and the counter of its increases (``sundial_runs_missed`` and friends)."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> RunMetrics:
        return cls(
            schedule_lag=Histogram(
                "sundial_schedule_lag_seconds",
                "From a run's nominal time to the creation of its first Job.",
                buckets=LAG_BUCKETS,
                registry=r,
            ),
            started=Counter("sundial_runs_started", "Runs whose first Job was created.", registry=r),
            attempts=Counter("sundial_attempts", "Jobs created (all attempts).", registry=r),
            by_status_counter={
                StatusCounter.MISSED: Counter(
                    "sundial_runs_missed", "Runs missed (past the catch-up window).", registry=r
                ),
                StatusCounter.SKIPPED: Counter(
                    "sundial_runs_skipped", "Runs skipped (concurrencyPolicy Forbid).", registry=r
                ),
                StatusCounter.DEAD_LETTERED: Counter("sundial_runs_dead_lettered", "Runs dead-lettered.", registry=r),
                StatusCounter.SUCCEEDED: Counter("sundial_runs_succeeded", "Runs whose Job succeeded.", registry=r),
                StatusCounter.FAILED: Counter(
                    "sundial_attempts_failed",
                    "Attempts whose Job failed or was lost (each may be retried).",
                    registry=r,
                ),
                StatusCounter.RETRIED: Counter(
                    "sundial_attempts_retried", "Retry attempts started (attempt 2 on).", registry=r
                ),
                StatusCounter.EXCLUDED: Counter(
                    "sundial_runs_excluded", "Nominal times not run: excluded (spec.exclude).", registry=r
                ),
                StatusCounter.BUFFERED: Counter(
                    "sundial_runs_buffered", "Runs that waited for an active run to end.", registry=r
                ),
            },
            active=Gauge("sundial_active_runs", "Runs with an active attempt.", registry=r),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class PassMetrics:
    """Reconcile passes and the dispatcher's index of pending wake-ups."""

    reconciles: Counter
    """``sundial_reconciles``: passes by ``outcome`` (:class:`PassOutcome`, every label made at start)."""

    due_index_size: Gauge
    """``sundial_due_index_size``: ScheduledJobs with a pending wake-up."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> PassMetrics:
        made = cls(
            due_index_size=Gauge("sundial_due_index_size", "ScheduledJobs with a pending wake-up.", registry=r),
            reconciles=Counter(
                "sundial_reconciles", "Reconcile passes by outcome (PassOutcome).", ["outcome"], registry=r
            ),
        )
        for outcome in PassOutcome:
            made.reconciles.labels(outcome=outcome.value)
        return made


@dataclasses.dataclass(frozen=True, kw_only=True)
class LeaseMetrics:
    """The shard Leases this replica holds and the balanced assignment it sees."""

    held: Gauge
    """``sundial_leases_held``: shard Leases this replica holds."""

    assigned: Gauge
    """``sundial_shards_assigned``: shards the balanced assignment gives this replica."""

    members: Gauge
    """``sundial_shard_members``: live replicas this replica sees."""

    rebalances: Counter
    """``sundial_shard_rebalances``: changes of the shard assignment seen by this replica."""

    handoff: Histogram
    """``sundial_shard_handoff_seconds`` by ``phase`` (``release``, ``acquire``)."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> LeaseMetrics:
        return cls(
            held=Gauge("sundial_leases_held", "Shard Leases this replica holds.", registry=r),
            assigned=Gauge("sundial_shards_assigned", "Shards the balanced assignment gives this replica.", registry=r),
            members=Gauge("sundial_shard_members", "Live replicas this replica sees.", registry=r),
            rebalances=Counter(
                "sundial_shard_rebalances", "Changes of the shard assignment seen by this replica.", registry=r
            ),
            handoff=Histogram(
                "sundial_shard_handoff_seconds",
                "Shard handoff time: phase=release from deciding to give a shard up until its Lease is released; "
                "phase=acquire from a shard being assigned to this replica until its Lease is held.",
                ["phase"],
                buckets=HANDOFF_BUCKETS,
                registry=r,
            ),
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class EventMetrics:
    """Kubernetes Events (:mod:`sundial.runtime.acting.sender`)."""

    results: Counter
    """``sundial_events`` by ``result`` (:class:`EventResult`, every label made at start)."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> EventMetrics:
        made = cls(
            results=Counter(
                "sundial_events",
                "Events by result: created and patched (API writes), aggregated (occurrences counted into an "
                "existing series), dropped (occurrences lost to a full queue or cache), failed (API writes that "
                "failed).",
                ["result"],
                registry=r,
            )
        )
        for result in EventResult:
            made.results.labels(result=result)
        return made


@dataclasses.dataclass(frozen=True, kw_only=True)
class FencingMetrics:
    """Writes the API server refused or found squatted (DESIGN §7.1, §7.3)."""

    unexpected_jobs: Counter
    """``sundial_unexpected_jobs``: Job creates that found a Job not controlled by the ScheduledJob."""

    fenced_writes: Counter
    """``sundial_fenced_writes`` by ``kind`` (:class:`FencedKind`, every label made at start)."""

    unconfirmed: Counter
    """``sundial_fenced_unconfirmed``: refusals after which a fresh read showed the Lease still ours."""

    enforced: Gauge
    """``sundial_fencing_enforced`` by ``shard``: 1 when the last dry-run probe (at acquire, then periodic) was
    refused."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> FencingMetrics:
        made = cls(
            unexpected_jobs=Counter(
                "sundial_unexpected_jobs",
                "Job creates that found a Job not controlled by the ScheduledJob at the attempt's name (the attempt "
                "ends as UnexpectedJob, the run continues under the next attempt's name).",
                registry=r,
            ),
            fenced_writes=Counter(
                "sundial_fenced_writes",
                "Writes the API server's fencing policy refused (403: the token is older than the shard Lease), "
                "by kind. Each one made this replica stop acting on the shard until it holds the Lease again.",
                ["kind"],
                registry=r,
            ),
            unconfirmed=Counter(
                "sundial_fenced_unconfirmed",
                "Refused writes after which the shard Lease, re-read from the API server, was still this "
                "replica's (holder, leaseTransitions and UID unchanged): the shard is kept and the write retried "
                "after a backoff. Rising steadily: a tenant relabels Jobs, or the API server serves a stale Lease.",
                registry=r,
            ),
            enforced=Gauge(
                "sundial_fencing_enforced",
                "1 when the fencing policy refused this shard's dry-run probe write at the last probe (at each acquire "
                "and every --fencing-probe-period while held), 0 when the API server admitted it (fencing is not "
                "enforced for this replica: see its Warning Event).",
                ["shard"],
                registry=r,
            ),
        )
        for kind in FencedKind:
            made.fenced_writes.labels(kind=kind)
        return made


@dataclasses.dataclass(frozen=True, kw_only=True)
class ApiMetrics:
    """The operator's own Kubernetes API requests (every client: main loop, Events, Leases)."""

    requests: Counter
    """``sundial_api_requests`` by ``verb``, ``resource`` and ``code`` (``fenced``: refused by the fencing policy,
    including the enforcement probe of every acquire; ``error``: no HTTP answer)."""

    latency: Histogram
    """``sundial_api_request_duration_seconds`` by ``verb`` and ``resource``."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> ApiMetrics:
        return cls(
            requests=Counter(
                "sundial_api_requests", "Kubernetes API requests.", ["verb", "resource", "code"], registry=r
            ),
            latency=Histogram(
                "sundial_api_request_duration_seconds",
                "Kubernetes API request latency.",
                ["verb", "resource"],
                buckets=API_BUCKETS,
                registry=r,
            ),
        )


__all__ = ["GuardMetrics", "IntakeMetrics", "Metrics", "WithdrawReason"]


class Metrics:
    """All of the operator's metrics, one group per concern, and the process' own (``process_*``). Also the API
    request observer of :mod:`sundial.kube.requests`."""

    def __init__(self, registry: CollectorRegistry | None = None, *, created_series: bool = False) -> None:
        self.registry = registry if registry is not None else SeriesRegistry(created_series=created_series)
        """The registry ``/metrics`` serves."""
        r = self.registry
        ProcessCollector(registry=r)
        self.build_info = Gauge(
            "sundial_build_info",
            "Always 1; the labels say which Sundial and which Python this replica runs.",
            ["version", "python_version"],
            registry=r,
        )
        """``sundial_build_info``: always 1, labelled with the versions."""
        self.build_info.labels(version=sundial.__version__, python_version=platform.python_version()).set(1)
        self.runs = RunMetrics.create(r)
        """Runs and attempts."""
        self.leases = LeaseMetrics.create(r)
        """Shard Leases and the assignment."""
        self.passes = PassMetrics.create(r)
        """Reconcile passes and the due index."""
        self.events = EventMetrics.create(r)
        """Kubernetes Events."""
        self.fencing = FencingMetrics.create(r)
        """Refused and squatted writes."""
        self.api = ApiMetrics.create(r)
        """API requests."""
        self.guards = GuardMetrics.create(r)
        """The replica's checks on itself: loop lag, clock offset, withdrawals."""
        self.intake = IntakeMetrics.create(r)
        """Informers and quarantine."""

    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        self.api.requests.labels(verb=verb, resource=resource, code=code).inc()
        self.api.latency.labels(verb=verb, resource=resource).observe(seconds)
