"""Events off the critical path: recorded by the reconciler, sent in the background, aggregated into series.

:meth:`EventRecorder.record` is synchronous and never blocks or raises: the reconciler calls it (only while
it holds the object's shard, see ``Reconciler._event``) and goes on with its pass. One background task
(:meth:`EventRecorder.run`) sends the Events through a token bucket of its own (``--event-qps`` /
``--event-burst``, :func:`events_api`), so Events never spend the ``--qps`` budget of claims and Job creates.

**Series** (like client-go's recorders; ``kubectl describe`` shows "(x12 over 2m)"): occurrences with the
same (namespace, involved UID, type, reason) are one core/v1 Event. The first occurrence creates it (with
every occurrence recorded before the create is sent: ``count`` may already be > 1); later ones only count
up in memory and keep the latest message. A series with a pending count is written as one merge PATCH of
``count``, ``lastTimestamp`` and ``message`` at most once per ``--event-series-interval`` (right away when
its last write is older than that). A PATCH answered 404 (the API server's Event TTL, 1 h by default)
creates a new Event for the series.

**Priority:** a Warning series' create is sent before queued Normal ones; PATCHes come after creates.

**Bounds:** at most :data:`MAX_QUEUE` series wait for their create; an occurrence of a new series beyond
that is dropped (``sundial_events_total{result="dropped"}``, a rate-limited log line). At most
:data:`MAX_SERIES` created series are remembered, least recently recorded evicted first. An evicted series'
pending count is **dropped** (counted, not flushed): flushing on eviction would turn cache pressure (more
series than the cache, i.e. the busiest moments) into extra writes; the cache is sized well above the
series of a large installation (three reasons per busy object), so that only happens under churn. The next
occurrence of an evicted series creates a new Event.

**Best effort:** an API error is counted (``result="failed"``), logged at INFO (rate-limited) and never
retried in a loop: a failed create forgets the series (its next occurrence tries again), a failed PATCH
keeps the count for the next interval. Nothing here raises into the reconciler.

**Fenced like every other write:** ``record(..., guard=...)`` takes the reconciler's "do I still hold the
shard?" check; it is set as :data:`sundial.kube.requests.SEND_GUARD` around the create or PATCH, so it runs
right before the request is sent (after the Event rate limiter's wait). A replica that lost the shard (a
SIGSTOPped zombie that resumes with Events queued) drops them (``result="dropped"``) instead of writing.

**Shutdown:** :meth:`run` flushes what is pending (creates, then every pending count) for at most
:data:`SHUTDOWN_FLUSH` seconds, then returns; whatever is left is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from sundial import model
from sundial.kube import objects, ratelimits, requests, results
from sundial.planner.actions import EventType
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import EventResult, Metrics
from sundial.runtime.settings import Settings

logger = logging.getLogger(__name__)

#: Series waiting for their first write (their create); beyond that, occurrences of new series are dropped.
MAX_QUEUE = 10_000
#: Created series remembered for aggregation (LRU).
MAX_SERIES = 16_384
#: Seconds the flush at shutdown may take.
SHUTDOWN_FLUSH = 2.0
#: Seconds between two log lines about dropped or failed Events.
LOG_EVERY = 30.0

#: (namespace, involved object's UID, type, reason)
SeriesKey = tuple[str, str, str, str]


class EventsApi(Protocol):
    """The calls of :class:`sundial.kube.objects.ObjectsApi` the recorder needs (faked in tests)."""

    async def create_event(
        self,
        *,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        first: datetime,
        last: datetime,
        count: int,
        instance: str,
    ) -> str: ...

    async def patch_event(
        self, *, namespace: str, name: str, count: int, last_timestamp: datetime, message: str
    ) -> results.PatchResult: ...


def events_api(*, api_client: Any, settings: Settings, metrics: Metrics) -> objects.ObjectsApi:
    """The API for Events: its own token bucket (``--event-qps``/``--event-burst``), requests still observed
    in ``sundial_api_requests_total``."""
    bucket = ratelimits.TokenBucket(rate=settings.event_qps, burst=settings.event_burst)
    return objects.ObjectsApi(api_client=api_client, requester=requests.Requester(bucket=bucket, observer=metrics))


@dataclass(slots=True)
class _Series:
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


class _Throttled:
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


class EventRecorder:
    def __init__(
        self,
        *,
        api: EventsApi,
        metrics: Metrics,
        identity: str,
        series_interval: float,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        max_queue: int = MAX_QUEUE,
        max_series: int = MAX_SERIES,
    ) -> None:
        self._api = api
        self._results = metrics.events
        self._identity = identity
        self._interval = series_interval
        self._clock = clock
        self._monotonic = monotonic
        self._max_queue = max_queue
        self._max_series = max_series
        self._unsent: dict[SeriesKey, _Series] = {}
        self._creates: dict[bool, deque[SeriesKey]] = {True: deque(), False: deque()}  # by "is a Warning"
        self._sent: OrderedDict[SeriesKey, _Series] = OrderedDict()
        self._due: list[tuple[float, int, SeriesKey]] = []  # series with a pending count (lazy heap)
        self._pushes = 0
        self._wakeup = asyncio.Event()
        self._dropped_log = _Throttled(logging.WARNING, monotonic)
        self._failed_log = _Throttled(logging.INFO, monotonic)

    # Recording (synchronous) ------------------------------------------------------------------------

    def record(
        self,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        guard: Callable[[], None] | None = None,
    ) -> None:
        """Count one occurrence; never blocks, never raises. ``guard`` runs right before the write is sent."""
        try:
            self._record(involved, type_, reason, message, guard)
        except Exception:  # pragma: no cover - a bug here must not fail a reconcile pass
            logger.exception("could not record Event %s", reason)

    def _record(
        self, involved: model.ObjectMeta, type_: str, reason: str, message: str, guard: Callable[[], None] | None
    ) -> None:
        key = (involved.namespace, involved.uid, type_, reason)
        now = self._clock()
        series = self._sent.get(key)
        if series is not None:
            self._sent.move_to_end(key)
        else:
            series = self._unsent.get(key)
        if series is not None:
            series.guard = guard
            self._results.labels(result=EventResult.AGGREGATED).inc()
            self._occur(series, message, now)
            if key in self._sent and series.pending == 1:
                self._schedule(key, series)
            return
        if len(self._unsent) >= self._max_queue:
            self._results.labels(result=EventResult.DROPPED).inc()
            self._dropped_log.log(
                "Event queue full (%d series waiting): dropped %s %s on %s/%s",
                len(self._unsent),
                type_,
                reason,
                involved.namespace,
                involved.name,
            )
            return
        series = _Series(involved=involved, type_=type_, reason=reason, message=message, last=now, guard=guard)
        self._occur(series, message, now)
        self._unsent[key] = series
        self._creates[type_ == EventType.WARNING].append(key)
        self._wakeup.set()

    @staticmethod
    def _occur(series: _Series, message: str, now: datetime) -> None:
        if series.pending == 0:
            series.first = now
        series.pending += 1
        series.message = message
        series.last = now

    def _schedule(self, key: SeriesKey, series: _Series) -> None:
        self._pushes += 1
        heapq.heappush(self._due, (series.due, self._pushes, key))
        self._wakeup.set()

    @property
    def queued(self) -> int:
        """Series waiting for their create."""
        return len(self._unsent)

    # Sending (the background task) -----------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        """Send until STOPPING is set, then flush for at most :data:`SHUTDOWN_FLUSH` seconds."""
        sender = asyncio.create_task(self._send_forever(), name="events sender")
        try:
            await stopping.wait()
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sender
            await self.flush(SHUTDOWN_FLUSH)

    async def _send_forever(self) -> None:
        while True:
            self._wakeup.clear()
            delay = await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), delay)

    async def step(self) -> float | None:
        """Send every queued create (Warnings first) and every due PATCH (creates queued meanwhile go
        first). Returns the seconds until the next PATCH is due (None: nothing is pending)."""
        await self._send_creates()
        now = self._monotonic()
        while self._due and self._due[0][0] <= now:
            _, _, key = heapq.heappop(self._due)
            series = self._sent.get(key)
            if series is None or series.pending == 0:
                continue
            if series.due > now:  # written since this entry was pushed
                self._schedule(key, series)
                continue
            await self._patch(key, series)
            await self._send_creates()
            now = self._monotonic()
        return max(0.0, self._due[0][0] - now) if self._due else None

    async def flush(self, timeout: float) -> None:
        """Send everything pending, intervals ignored, for at most TIMEOUT seconds."""
        try:
            await asyncio.wait_for(self._flush_all(), timeout)
        except TimeoutError:
            left = self.queued + sum(1 for series in self._sent.values() if series.pending)
            logger.info("%d Event series not sent at shutdown (flush took more than %.1fs)", left, timeout)

    async def _flush_all(self) -> None:
        await self._send_creates()
        for key, series in list(self._sent.items()):
            if series.pending:
                await self._patch(key, series)
        await self._send_creates()  # after a PATCH found its Event gone

    async def _send_creates(self) -> None:
        while True:
            queue = self._creates[True] or self._creates[False]
            if not queue:
                return
            key = queue.popleft()
            series = self._unsent.get(key)
            if series is not None:
                await self._create(key, series)

    async def _create(self, key: SeriesKey, series: _Series) -> None:
        count, first = series.pending, series.first or series.last
        series.pending, series.first = 0, None
        fence = requests.SEND_GUARD.set(series.guard)
        try:
            name = await self._api.create_event(
                involved=series.involved,
                type_=series.type_,
                reason=series.reason,
                message=series.message,
                first=first,
                last=series.last,
                count=count,
                instance=self._identity,
            )
        except NotActingError:
            self._results.labels(result=EventResult.DROPPED).inc(count)  # the shard moved on: not ours to write
            return
        except Exception as error:
            self._failed(series, "create", error)
            return
        finally:  # a failed (or cancelled) create forgets the series: its next occurrence starts a new one
            requests.SEND_GUARD.reset(fence)
            self._unsent.pop(key, None)
        self._results.labels(result=EventResult.CREATED).inc()
        series.name, series.count, series.due = name, count, self._monotonic() + self._interval
        self._sent[key] = series
        self._sent.move_to_end(key)
        if series.pending:  # recorded while the create was in flight
            self._schedule(key, series)
        while len(self._sent) > self._max_series:
            _, evicted = self._sent.popitem(last=False)
            if evicted.pending:
                self._results.labels(result=EventResult.DROPPED).inc(evicted.pending)
                self._dropped_log.log(
                    "Event series cache full (%d): dropped %d pending occurrence(s) of %s on %s/%s",
                    self._max_series,
                    evicted.pending,
                    evicted.reason,
                    evicted.involved.namespace,
                    evicted.involved.name,
                )

    async def _patch(self, key: SeriesKey, series: _Series) -> None:
        count, first = series.pending, series.first
        series.pending, series.first = 0, None
        series.due = self._monotonic() + self._interval
        fence = requests.SEND_GUARD.set(series.guard)
        try:
            patched = await self._api.patch_event(
                namespace=series.involved.namespace,
                name=series.name,
                count=series.count + count,
                last_timestamp=series.last,
                message=series.message,
            )
        except asyncio.CancelledError:
            self._restore(series, count, first)  # ``count`` is absolute: sending it again is harmless
            raise
        except NotActingError:
            self._results.labels(result=EventResult.DROPPED).inc(count)  # the shard moved on: not ours to write
            return
        except Exception as error:
            self._restore(series, count, first)  # kept for the next interval, never retried right away
            self._schedule(key, series)
            self._failed(series, "patch", error)
            return
        finally:
            requests.SEND_GUARD.reset(fence)
        if isinstance(patched, results.Gone):  # the Event expired: a new one carries the count on
            self._sent.pop(key, None)
            self._restore(series, count, first)
            series.name, series.count = "", 0
            self._unsent[key] = series
            self._creates[series.type_ == EventType.WARNING].appendleft(key)
            return
        self._results.labels(result=EventResult.PATCHED).inc()
        series.count += count

    @staticmethod
    def _restore(series: _Series, count: int, first: datetime | None) -> None:
        series.pending += count
        series.first = first or series.first

    def _failed(self, series: _Series, verb: str, error: Exception) -> None:
        self._results.labels(result=EventResult.FAILED).inc()
        self._failed_log.log(
            "could not %s Event %s on %s/%s: %s",
            verb,
            series.reason,
            series.involved.namespace,
            series.involved.name,
            error,
        )
