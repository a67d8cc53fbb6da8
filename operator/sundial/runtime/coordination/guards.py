"""When this replica must hold no shard (DESIGN §12.2): :class:`Guards` answers the lease thread's question
before every round (:attr:`sundial.runtime.coordination.leadership.Sharding.guard`).

* **Loop lag** — the planning loop is behind its watchdog (:class:`sundial.runtime.serving.watchdog.LoopWatchdog`)
  by more than ``withdraw_lag``; the replica stays withdrawn until the lag is back under ``unready_lag`` (the
  readiness bound), so a loop that hovers around one bound does not flap its shards.
* **Clock skew** — the replica's clock is off the API server's by more than ``max_skew`` for certain
  (:class:`sundial.runtime.coordination.clocks.ServerClock`), or not measured yet: a replica that never got an
  answer from the API server can hold nothing anyway, and one that did not compare its clock yet must not plan
  with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from sundial.runtime.coordination import clocks
from sundial.runtime.coordination.clocks import ServerClock
from sundial.runtime.serving.guardmetrics import GuardMetrics, WithdrawReason
from sundial.runtime.serving.watchdog import LoopWatchdog
from sundial.runtime.settings import GuardSettings, Settings


class Guards:
    """Why this replica must hold nothing right now, if it must (called on the lease thread)."""

    def __init__(
        self,
        *,
        settings: GuardSettings,
        lag: Callable[[], float],
        clock: ServerClock | None = None,
        metrics: GuardMetrics | None = None,
    ) -> None:
        self._settings = settings
        self._lag = lag
        self._clock = clock
        self._metrics = metrics
        self._lock = threading.Lock()
        self._lagging = False

    def lagging(self) -> bool:
        """True from the moment the loop lag passes ``withdraw_lag`` until it is under ``unready_lag`` again."""
        lag = self._lag()
        with self._lock:
            if lag > self._settings.withdraw_lag:
                self._lagging = True
            elif lag < self._settings.unready_lag:
                self._lagging = False
            return self._lagging

    def skewed(self) -> bool:
        """True while the clock is off the API server's beyond ``max_skew``, or not compared yet."""
        return self._clock is not None and (self._clock.offset is None or self._clock.skewed())

    def reason(self) -> WithdrawReason | None:
        """The reason to hold nothing now (the loop's lag first), or None."""
        found = {WithdrawReason.LOOP_LAG: self.lagging(), WithdrawReason.CLOCK_SKEW: self.skewed()}
        if self._metrics is not None:
            for reason, on in found.items():
                self._metrics.withdrawn.labels(reason=reason).set(1 if on else 0)
        return next((reason for reason, on in found.items() if on), None)


def self_checks(
    settings: Settings, metrics: GuardMetrics
) -> tuple[Callable[[], datetime], tuple[ServerClock, Guards], LoopWatchdog]:
    """The replica's checks on itself (DESIGN §12.2): its wall clock (moved only by the test hook
    ``SUNDIAL_TEST_CLOCK_OFFSET``), that clock against the API server's, the loop's watchdog, and the guards
    that withdraw the replica from its shards when either is off."""
    wall = clocks.shifted(settings.test_clock_offset)
    server_clock = ServerClock(max_skew=settings.guards.max_clock_skew, wallclock=wall, metrics=metrics)
    loop_watchdog = LoopWatchdog(metrics=metrics)
    guards = Guards(settings=settings.guards, lag=loop_watchdog.lag, clock=server_clock, metrics=metrics)
    return wall, (server_clock, guards), loop_watchdog
