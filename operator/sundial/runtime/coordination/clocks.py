"""This replica's clock against the API server's (DESIGN §12.2).

The planner trusts the replica's wall clock: a replica an hour ahead would create the next hour's runs now and
move their cursors. :class:`ServerClock` estimates the offset from the ``Date`` header of every Lease LIST the
lease thread sends anyway (every retry period): the server stamped the answer at some instant in
``[Date, Date + 1 s)`` (the header has whole seconds), which this replica saw between sending the request and
reading the answer, so the offset lies in ``[sent - Date - 1 s, received - Date]``.

* :meth:`ServerClock.skewed` is True only when that whole interval lies beyond ``max_skew``: a slow answer
  widens the interval and never condemns a good clock. A skewed replica holds no shard
  (:meth:`sundial.runtime.coordination.leadership.Leadership.step` withdraws it), so it plans nothing.
* :meth:`ServerClock.now` is the server's time as this replica estimates it (its own clock less the offset):
  the Lease times it writes and the member cleanup, which compares another replica's ``renewTime``, use it, so
  replicas whose clocks differ never delete each other's live member Leases.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from sundial.runtime.serving.metrics import GuardMetrics
from sundial.schedule import utcnow

logger = logging.getLogger(__name__)

#: The ``Date`` header's resolution (RFC 9110: whole seconds).
DATE_RESOLUTION = timedelta(seconds=1)


class ServerClock:
    """The offset of WALLCLOCK from the API server's clock, as the ``Date`` headers tell it."""

    def __init__(
        self,
        *,
        max_skew: float,
        wallclock: Callable[[], datetime] = utcnow,
        metrics: GuardMetrics | None = None,
    ) -> None:
        self._max_skew = max_skew
        self._wall = wallclock
        self._metrics = metrics
        self._lock = threading.Lock()
        self._bounds: tuple[float, float] | None = None  # (low, high) of the offset, seconds
        self._skewed = False

    def wallclock(self) -> datetime:
        """This replica's own clock (what :meth:`observe`'s SENT and RECEIVED are read from)."""
        return self._wall()

    def observe(self, *, sent: datetime, received: datetime, date: datetime) -> None:
        """A request sent at SENT (this replica's clock) was answered with ``Date: DATE``, read at RECEIVED."""
        low = (sent - date - DATE_RESOLUTION).total_seconds()
        high = (received - date).total_seconds()
        skewed = low > self._max_skew or high < -self._max_skew
        with self._lock:
            was = self._skewed
            self._bounds = (low, high)
            self._skewed = skewed
        if self._metrics is not None:
            self._metrics.clock_offset.set((low + high) / 2)
        if skewed and not was:
            logger.error(
                "this replica's clock is %.1f s (between %.1f and %.1f) off the API server's, more than "
                "--max-clock-skew %.1f s: it plans nothing until the clocks agree (fix its node's time sync)",
                (low + high) / 2,
                low,
                high,
                self._max_skew,
            )
        elif was and not skewed:
            logger.warning("this replica's clock agrees with the API server's again (offset %.1f s)", (low + high) / 2)

    @property
    def offset(self) -> float | None:
        """Seconds this replica's clock is ahead of the server's (the middle of the estimate); None: unknown."""
        with self._lock:
            bounds = self._bounds
        return None if bounds is None else (bounds[0] + bounds[1]) / 2

    def skewed(self) -> bool:
        """True while the last estimate puts the offset beyond ``max_skew`` for certain."""
        with self._lock:
            return self._skewed

    def now(self) -> datetime:
        """The API server's time as this replica estimates it (its own clock while nothing was observed)."""
        offset = self.offset
        wall = self._wall()
        return wall if offset is None else wall - timedelta(seconds=offset)


def shifted(offset: float, clock: Callable[[], datetime] = utcnow) -> Callable[[], datetime]:
    """CLOCK moved by OFFSET seconds (TEST ONLY ``SUNDIAL_TEST_CLOCK_OFFSET``; 0: CLOCK itself)."""
    if not offset:
        return clock
    delta = timedelta(seconds=offset)

    def moved() -> datetime:
        return clock() + delta

    return moved
