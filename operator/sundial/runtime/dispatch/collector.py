"""CPython's cyclic garbage collector, kept off a crowded instant (issue 31; docs/benchmarks.md).

The collector runs when allocations outnumber frees by a threshold, and a full collection walks every object it
tracks while the event loop waits. In a herd (2,000 runs due at once, full size) the passes planned ahead and the
instant's passes allocate enough for two full collections inside the instant's first 4 seconds: 243 and 149 ms
in which no Job POST was sent, 0.53 of the operator's 1.50 CPU-s there, and two more of 160 ms each while
planning ahead (measured with a ``gc.callbacks`` probe, 2026-12-06).

* :meth:`Collector.pause`: from planning ahead for an instant at which many keys are due until that instant's due
  passes are done (the dispatcher decides), the collector does not run; objects freed by reference counting (nearly
  all) are freed as ever, only reference cycles wait. Never longer than :data:`MAX_PAUSE`, so what waits is bounded
  by what the operator allocates in that long.
* :meth:`Collector.resume`: the collector runs again, unless the process had it disabled before the pause, and at
  once collects the young generations - everything allocated during the pause, nothing older - so what waited is
  reclaimed at each pause's end, however often crowded instants (a tenant's choice) come.
* :func:`settle`: once the initial listing is indexed, one full collection, then everything still alive (modules,
  classes, the store) moves to the permanent generation (``gc.freeze``), which later full collections do not
  walk: they walk only what was allocated since. A reference cycle among those frozen objects that becomes garbage
  later is not collected; at that point the process holds only long-lived state.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

logger = logging.getLogger(__name__)

#: A pause ends this long after it began, whatever the dispatcher says.
MAX_PAUSE = timedelta(seconds=30)


class Collector:
    """Pauses and resumes the cyclic garbage collector (the functions are the ``gc`` module's unless given)."""

    def __init__(
        self,
        *,
        enabled: Callable[[], bool] = gc.isenabled,
        disable: Callable[[], None] = gc.disable,
        enable: Callable[[], None] = gc.enable,
        collect: Callable[[int], object] = gc.collect,
    ) -> None:
        self._enabled, self._disable, self._enable, self._collect = enabled, disable, enable, collect
        self._since: datetime | None = None
        self.until: datetime | None = None
        """The instant whose due passes the pause is for (None: not paused)."""

    @property
    def paused(self) -> bool:
        return self._since is not None

    def pause(self, now: datetime, *, until: datetime) -> None:
        """Pause (or extend the pause to) the instant UNTIL. A collector the process disabled is left alone."""
        if self._since is None:
            if not self._enabled():
                return
            self._disable()
            self._since = now
        self.until = until if self.until is None else max(self.until, until)

    def overdue(self, now: datetime) -> bool:
        return self._since is not None and now - self._since >= MAX_PAUSE

    def resume(self) -> None:
        if self._since is None:
            return
        self._since = self.until = None
        self._enable()
        self._collect(1)  # what the pause allocated is all in the young generations


def settle() -> None:
    """One full collection, then everything alive is left out of later ones (``gc.freeze``): see the module."""
    gc.collect()
    gc.freeze()
    logger.debug("garbage collector: %d objects frozen after the initial listing", gc.get_freeze_count())
