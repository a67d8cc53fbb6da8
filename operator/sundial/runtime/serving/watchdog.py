"""The planning loop's watchdog (DESIGN §12.2): how late the main event loop runs, read from any thread.

Planning, claims, Job creates, watch events and ``/metrics`` share one event loop; the Lease renewals and the
probes run on threads of their own (:mod:`sundial.runtime.coordination.leasethread`,
:mod:`sundial.runtime.serving.probethread`), so a saturated or wedged loop would otherwise keep its shards and
stay ready while nothing is planned. :class:`LoopWatchdog` beats on the main loop every :data:`BEAT` seconds;
its :meth:`~LoopWatchdog.lag` is how far the loop is behind that beat, measured *when asked* (from the probe
thread, the lease thread or a scrape), so a loop that stopped turning shows a growing lag even though it can
record nothing itself:

* past :attr:`~sundial.runtime.settings.WatchdogSettings.unready_lag` ``/readyz`` fails (the pod leaves the
  webhook Service; the kubelet does not restart it);
* past :attr:`~sundial.runtime.settings.WatchdogSettings.withdraw_lag` the lease thread withdraws the replica:
  it stops acting, releases its shard Leases and deletes its member Lease, so a standby takes the shards over
  at once (:meth:`sundial.runtime.coordination.leadership.Leadership.step`). Once the lag is back under the
  first bound the replica joins again like a new member (it recovers rather than exits: its store stays warm,
  and a transient flood does not turn into a restart loop).

What crosses threads: :attr:`LoopWatchdog._beat` is one float, written by the loop and read by the others (a
single attribute read under the GIL).

:func:`block_on_signal` is a TEST ONLY hook (``SUNDIAL_TEST_BLOCK_LOOP``) that blocks the loop on SIGUSR1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable

from sundial.runtime.serving.metrics import GuardMetrics

logger = logging.getLogger(__name__)

#: Seconds between two beats of the watchdog on the main loop.
BEAT = 0.25


class LoopWatchdog:
    """Beats on the event loop it runs on; :meth:`lag` says how far that loop is behind, from any thread."""

    def __init__(self, *, metrics: GuardMetrics | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._beat = clock()
        self._metrics = metrics
        if metrics is not None:
            metrics.loop_lag.set_function(self.lag)

    def lag(self) -> float:
        """Seconds the loop is behind: time since its last beat, less the beat interval (never negative)."""
        return max(0.0, self._clock() - self._beat - BEAT)

    def beat(self) -> None:
        """Note that the loop runs now (called on the loop by :meth:`run`; tests call it directly)."""
        now = self._clock()
        if self._metrics is not None:
            self._metrics.loop_lateness.observe(max(0.0, now - self._beat - BEAT))
        self._beat = now

    async def run(self, stopping: asyncio.Event) -> None:
        """Beat every :data:`BEAT` seconds until STOPPING is set."""
        self._beat = self._clock()
        while not stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=BEAT)
            self.beat()


def block_on_signal(seconds: float, *, signum: int = signal.SIGUSR1) -> None:
    """TEST ONLY (``SUNDIAL_TEST_BLOCK_LOOP``): from now on, SIGNUM blocks the running loop for SECONDS (a
    synchronous sleep on it: the "wedged loop" the watchdog must notice). Installed only when the setting is
    set; never in production."""
    loop = asyncio.get_running_loop()

    def block() -> None:
        logger.critical("test hook: blocking the event loop for %.1fs (SUNDIAL_TEST_BLOCK_LOOP)", seconds)
        time.sleep(seconds)  # the point: nothing else on this loop runs meanwhile
        logger.critical("test hook: the event loop runs again")

    loop.add_signal_handler(signum, block)
