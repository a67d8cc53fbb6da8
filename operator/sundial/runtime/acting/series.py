"""Event series: repeats of one Event (same namespace, involved UID, type and reason) aggregated into one
core/v1 Event whose ``count`` grows (like client-go's recorders; ``kubectl describe`` shows "(x12 over 2m)").

:class:`SeriesBook` is the bookkeeping, with no I/O: :meth:`SeriesBook.record` counts an occurrence
(synchronous, never blocks); :mod:`sundial.runtime.acting.sender` takes the writes it owes from it and tells
it how they went.

The first occurrence of a series queues its create (with every occurrence recorded before the create is
sent: ``count`` may already be > 1); later ones only count up in memory and keep the latest message. A
series with a pending count is due for one merge PATCH at most once per series interval (right away when its
last write is older than that).

**Priority:** a Warning series' create is taken before queued Normal ones.

**Bounds:** at most :data:`MAX_QUEUE` series wait for their create; an occurrence of a new series beyond
that is dropped (``sundial_events_total{result="dropped"}``, a rate-limited log line). At most
:data:`MAX_SERIES` created series are remembered, least recently recorded evicted first. An evicted series'
pending count is **dropped** (counted, not flushed): flushing on eviction would turn cache pressure (more
series than the cache, i.e. the busiest moments) into extra writes; the cache is sized well above the
series of a large installation (three reasons per busy object), so that only happens under churn. The next
occurrence of an evicted series creates a new Event.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial import model
from sundial.planner.actions import EventType
from sundial.runtime.serving.metrics import EventResult

logger = logging.getLogger(__name__)

#: Series waiting for their first write (their create); beyond that, occurrences of new series are dropped.
MAX_QUEUE = 10_000
#: Created series remembered for aggregation (LRU).
MAX_SERIES = 16_384
#: Seconds between two log lines about dropped or failed Events.
LOG_EVERY = 30.0

#: (namespace, involved object's UID, type, reason)
SeriesKey = tuple[str, str, str, str]


@dataclass(slots=True)
class Series:
    involved: model.ObjectMeta
    type_: str
    reason: str
    message: str
    """The latest occurrence's message."""
    last: datetime
    """The latest occurrence."""
    first: datetime | None = None
    """The earliest occurrence not written yet (the ``firstTimestamp`` of a create)."""
    pending: int = 0
    """Occurrences not written yet."""
    name: str = ""
    """The Event, once created."""
    count: int = 0
    """The Event's ``count`` as written."""
    due: float = 0.0
    """Monotonic time from which the series may be written again."""
    guard: Callable[[], None] | None = None
    """The latest occurrence's send guard (raises if this replica may no longer write for the object)."""
    token: str = ""
    """The latest occurrence's fencing token (annotated on the Event, checked by the fencing policy)."""


class Throttled:
    """One log line per :data:`LOG_EVERY` seconds, with the number of lines held back meanwhile."""

    def __init__(self, level: int, monotonic: Callable[[], float]) -> None:
        self._level = level
        self._monotonic = monotonic
        self._last: float | None = None
        self._held = 0

    def log(self, message: str, *args: object) -> None:
        now = self._monotonic()
        if self._last is not None and now - self._last < LOG_EVERY:
            self._held += 1
            return
        if self._held:
            message += f" ({self._held} similar held back)"
        logger.log(self._level, message, *args)
        self._last, self._held = now, 0


class SeriesBook:
    """The series of one replica: queued creates, created series (LRU) and the PATCHes they are due for."""

    def __init__(
        self,
        *,
        results: Any,
        clock: Callable[[], datetime],
        monotonic: Callable[[], float],
        max_queue: int = MAX_QUEUE,
        max_series: int = MAX_SERIES,
    ) -> None:
        self._results = results
        self._clock = clock
        self._monotonic = monotonic
        self._max_queue = max_queue
        self._max_series = max_series
        self._unsent: dict[SeriesKey, Series] = {}
        self._creates: dict[bool, deque[SeriesKey]] = {True: deque(), False: deque()}  # by "is a Warning"
        self._sent: OrderedDict[SeriesKey, Series] = OrderedDict()
        self._due: list[tuple[float, int, SeriesKey]] = []  # series with a pending count (lazy heap)
        self._pushes = 0
        self.wakeup = asyncio.Event()
        """Set when there is something new to send."""
        self.dropped_log = Throttled(logging.WARNING, monotonic)

    def record(
        self,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        *,
        guard: Callable[[], None] | None,
        token: str = "",
    ) -> None:
        key = (involved.namespace, involved.uid, type_, reason)
        now = self._clock()
        series = self._sent.get(key)
        if series is not None:
            self._sent.move_to_end(key)
        else:
            series = self._unsent.get(key)
        if series is not None:
            series.guard, series.token = guard, token
            self._results.labels(result=EventResult.AGGREGATED).inc()
            self._occur(series, message, now)
            if key in self._sent and series.pending == 1:
                self.schedule(key, series)
            return
        if len(self._unsent) >= self._max_queue:
            self._results.labels(result=EventResult.DROPPED).inc()
            self.dropped_log.log(
                "Event queue full (%d series waiting): dropped %s %s on %s/%s",
                len(self._unsent),
                type_,
                reason,
                involved.namespace,
                involved.name,
            )
            return
        series = Series(
            involved=involved, type_=type_, reason=reason, message=message, last=now, guard=guard, token=token
        )
        self._occur(series, message, now)
        self._unsent[key] = series
        self._creates[type_ == EventType.WARNING].append(key)
        self.wakeup.set()

    @staticmethod
    def _occur(series: Series, message: str, now: datetime) -> None:
        if series.pending == 0:
            series.first = now
        series.pending += 1
        series.message = message
        series.last = now

    def schedule(self, key: SeriesKey, series: Series) -> None:
        self._pushes += 1
        heapq.heappush(self._due, (series.due, self._pushes, key))
        self.wakeup.set()

    @property
    def queued(self) -> int:
        """Series waiting for their create."""
        return len(self._unsent)

    @property
    def left(self) -> int:
        """Series with something not written yet."""
        return self.queued + sum(1 for series in self._sent.values() if series.pending)

    # What the sender takes ---------------------------------------------------------------------------

    def next_create(self) -> tuple[SeriesKey, Series] | None:
        """The next series waiting for its create (Warnings first), or None."""
        while True:
            queue = self._creates[True] or self._creates[False]
            if not queue:
                return None
            key = queue.popleft()
            series = self._unsent.get(key)
            if series is not None:
                return key, series

    def next_due(self, now: float) -> tuple[SeriesKey, Series] | None:
        """The next created series whose PATCH is due at monotonic ``now``, or None."""
        while self._due and self._due[0][0] <= now:
            _, _, key = heapq.heappop(self._due)
            series = self._sent.get(key)
            if series is None or series.pending == 0:
                continue
            if series.due > now:  # written since this entry was pushed
                self.schedule(key, series)
                continue
            return key, series
        return None

    def next_due_in(self, now: float) -> float | None:
        """Seconds until the next PATCH is due (None: nothing is pending)."""
        return max(0.0, self._due[0][0] - now) if self._due else None

    def sent(self) -> list[tuple[SeriesKey, Series]]:
        """Every created series (a snapshot)."""
        return list(self._sent.items())

    # What the sender reports -------------------------------------------------------------------------

    def unqueue(self, key: SeriesKey) -> None:
        """The create of ``key`` was sent (or failed: the next occurrence starts a new series)."""
        self._unsent.pop(key, None)

    def created(self, key: SeriesKey, series: Series, *, name: str, count: int, interval: float) -> None:
        series.name, series.count, series.due = name, count, self._monotonic() + interval
        self._sent[key] = series
        self._sent.move_to_end(key)
        if series.pending:  # recorded while the create was in flight
            self.schedule(key, series)
        while len(self._sent) > self._max_series:
            _, evicted = self._sent.popitem(last=False)
            if evicted.pending:
                self._results.labels(result=EventResult.DROPPED).inc(evicted.pending)
                self.dropped_log.log(
                    "Event series cache full (%d): dropped %d pending occurrence(s) of %s on %s/%s",
                    self._max_series,
                    evicted.pending,
                    evicted.reason,
                    evicted.involved.namespace,
                    evicted.involved.name,
                )

    def gone(self, key: SeriesKey, series: Series) -> None:
        """The series' Event expired: a new one, created before any other queued create, carries the count on."""
        self._sent.pop(key, None)
        series.name, series.count = "", 0
        self._unsent[key] = series
        self._creates[series.type_ == EventType.WARNING].appendleft(key)

    @staticmethod
    def restore(series: Series, count: int, first: datetime | None) -> None:
        """A write of ``count`` occurrences did not happen: they are pending again."""
        series.pending += count
        series.first = first or series.first
