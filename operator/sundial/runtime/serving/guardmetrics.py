"""The metrics of the replica's checks on itself (DESIGN §12.2): its loop's lag, its clock, its withdrawals.
Part of :class:`sundial.runtime.serving.metrics.Metrics` (``metrics.guards``)."""

from __future__ import annotations

import dataclasses
from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENESS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class WithdrawReason(StrEnum):
    """Why the lease thread withdrew this replica from its shards (DESIGN §12.2)."""

    LOOP_LAG = "loop_lag"
    """The planning loop was behind its watchdog by more than ``--watchdog-withdraw-lag``."""
    CLOCK_SKEW = "clock_skew"
    """This replica's clock differs from the API server's by more than ``--max-clock-skew``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GuardMetrics:
    """The replica's checks on itself (DESIGN §12.2): its loop's lag, its clock, its withdrawals."""

    loop_lag: Gauge
    """``sundial_loop_lag_seconds``: how far the planning loop is behind its watchdog, computed when scraped
    (:class:`sundial.runtime.serving.watchdog.LoopWatchdog` sets its function)."""

    loop_lateness: Histogram
    """``sundial_loop_lateness_seconds``: how much later than asked the loop ran each watchdog beat."""

    clock_offset: Gauge
    """``sundial_clock_offset_seconds``: this replica's clock minus the API server's (its ``Date`` header)."""

    withdrawn: Gauge
    """``sundial_withdrawn`` by ``reason`` (:class:`WithdrawReason`): 1 while that reason keeps the replica
    away from every shard."""

    withdrawals: Counter
    """``sundial_withdrawals`` by ``reason``: times the replica gave up its shards on its own."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> GuardMetrics:
        made = cls(
            loop_lag=Gauge(
                "sundial_loop_lag_seconds",
                "How far the planning loop is behind its watchdog's beat right now (computed when scraped).",
                registry=r,
            ),
            loop_lateness=Histogram(
                "sundial_loop_lateness_seconds",
                "How much later than asked the planning loop ran each watchdog beat.",
                buckets=LATENESS_BUCKETS,
                registry=r,
            ),
            clock_offset=Gauge(
                "sundial_clock_offset_seconds",
                "This replica's clock minus the API server's (estimated from its Date header at each Lease LIST).",
                registry=r,
            ),
            withdrawn=Gauge(
                "sundial_withdrawn",
                "1 while the reason keeps this replica from holding any shard (it released them and left the "
                "member set): a planning loop behind its watchdog, or a clock away from the API server's.",
                ["reason"],
                registry=r,
            ),
            withdrawals=Counter(
                "sundial_withdrawals",
                "Times this replica released its shards on its own (by reason).",
                ["reason"],
                registry=r,
            ),
        )
        for reason in WithdrawReason:
            made.withdrawn.labels(reason=reason).set(0)
            made.withdrawals.labels(reason=reason)
        return made
