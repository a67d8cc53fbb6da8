"""Events off the critical path: recorded by the reconciler, sent by one background task on a budget of
their own.

:meth:`EventRecorder.record` is synchronous and never blocks or raises: the reconciler calls it (only while
it holds the object's shard, see ``Reconciler._event``) and goes on with its pass; repeats are aggregated
into series (:mod:`sundial.runtime.acting.series`). One background task (:meth:`EventRecorder.run`) sends
the Events through a token bucket of its own (``--event-qps`` / ``--event-burst``, :func:`events_api`), so
Events never spend the ``--qps`` budget of claims and Job creates.

A series is created on its first write; a later write is one merge PATCH of ``count``, ``lastTimestamp``
and ``message``, at most once per ``--event-series-interval``. A PATCH answered 404 (the API server's Event
TTL, 1 h by default) creates a new Event for the series. PATCHes come after creates.

**Best effort:** an API error is counted (``result="failed"``), logged at INFO (rate-limited) and never
retried in a loop: a failed create forgets the series (its next occurrence tries again), a failed PATCH
keeps the count for the next interval. Nothing here raises into the reconciler.

**Fenced like every other write:** ``record(..., guard=...)`` takes the reconciler's "do I still hold the
shard?" check; it is the :data:`sundial.kube.requests.SEND_GUARD` of the create or PATCH
(:func:`sundial.kube.requests.guarded`), so it runs right before the request is sent (after the Event rate
limiter's wait). A replica that lost the shard (a SIGSTOPped zombie that resumes with Events queued) drops
them (``result="dropped"``) instead of writing.

**Refused by the API server:** where the server-side fencing policy is installed, every Event carries the
writer's fencing token (annotation ``sundial.dev/fencing-token``, also on each PATCH); a 403 from the policy
drops the write, counts ``sundial_fenced_writes_total{kind="event"}`` and tells coordination the shard is lost
(``on_fenced``).

**Shutdown:** :meth:`EventRecorder.run` flushes what is pending (creates, then every pending count) for at
most :data:`SHUTDOWN_FLUSH` seconds, then returns; whatever is left is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from sundial import model
from sundial.kube import errors, objects, ratelimits, requests, results
from sundial.runtime.acting.series import MAX_QUEUE, MAX_SERIES, Series, SeriesBook, SeriesKey, Throttled
from sundial.runtime.fencing import NotActingError
from sundial.runtime.serving.metrics import EventResult, FencedKind, Metrics
from sundial.runtime.settings import EventSettings
from sundial.schedule import utcnow

logger = logging.getLogger(__name__)

#: Seconds the flush at shutdown may take.
SHUTDOWN_FLUSH = 2.0


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
        fencing_token: str,
    ) -> str: ...

    async def patch_event(
        self, *, namespace: str, name: str, count: int, last_timestamp: datetime, message: str, fencing_token: str
    ) -> results.PatchResult: ...


def events_api(*, api_client: Any, settings: EventSettings, metrics: Metrics) -> objects.ObjectsApi:
    """The API for Events: its own token bucket (``--event-qps``/``--event-burst``), requests still observed
    in ``sundial_api_requests_total``."""
    bucket = ratelimits.TokenBucket(rate=settings.qps, burst=settings.burst)
    return objects.ObjectsApi(api_client=api_client, requester=requests.Requester(bucket=bucket, observer=metrics))


class EventRecorder:
    def __init__(
        self,
        *,
        api: EventsApi,
        metrics: Metrics,
        identity: str,
        series_interval: float,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        max_queue: int = MAX_QUEUE,
        max_series: int = MAX_SERIES,
        on_fenced: Callable[[str], None] = lambda token: None,
    ) -> None:
        self._api = api
        self._results = metrics.events.results
        self._fenced = metrics.fencing.fenced_writes
        self._on_fenced = on_fenced
        self._identity = identity
        self._interval = series_interval
        self._monotonic = monotonic
        self._book = SeriesBook(
            results=metrics.events.results, clock=clock, monotonic=monotonic, max_queue=max_queue, max_series=max_series
        )
        self._failed_log = Throttled(logging.INFO, monotonic)

    # Recording (synchronous) ------------------------------------------------------------------------

    def record(
        self,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        *,
        guard: Callable[[], None] | None = None,
        token: str = "",
    ) -> None:
        """Count one occurrence; never blocks, never raises. ``guard`` runs right before the write is sent;
        ``token`` (the writer's fencing token) is annotated on the Event."""
        try:
            self._book.record(involved, type_, reason, message, guard=guard, token=token)
        except Exception:  # pragma: no cover - a bug here must not fail a reconcile pass
            logger.exception("could not record Event %s", reason)

    @property
    def queued(self) -> int:
        """Series waiting for their create."""
        return self._book.queued

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
            self._book.wakeup.clear()
            delay = await self.step()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._book.wakeup.wait(), delay)

    async def step(self) -> float | None:
        """Send every queued create (Warnings first) and every due PATCH (creates queued meanwhile go
        first). Returns the seconds until the next PATCH is due (None: nothing is pending)."""
        await self._send_creates()
        while (due := self._book.next_due(self._monotonic())) is not None:
            await self._patch(*due)
            await self._send_creates()
        return self._book.next_due_in(self._monotonic())

    async def flush(self, timeout: float) -> None:
        """Send everything pending, intervals ignored, for at most TIMEOUT seconds."""
        try:
            await asyncio.wait_for(self._flush_all(), timeout)
        except TimeoutError:
            left = self._book.left
            logger.info("%d Event series not sent at shutdown (flush took more than %.1fs)", left, timeout)

    async def _flush_all(self) -> None:
        await self._send_creates()
        for key, series in self._book.sent():
            if series.pending:
                await self._patch(key, series)
        await self._send_creates()  # after a PATCH found its Event gone

    async def _send_creates(self) -> None:
        while (create := self._book.next_create()) is not None:
            await self._create(*create)

    async def _create(self, key: SeriesKey, series: Series) -> None:
        count, first = series.pending, series.first or series.last
        series.pending, series.first = 0, None
        try:
            with requests.guarded(series.guard):
                name = await self._api.create_event(
                    involved=series.involved,
                    type_=series.type_,
                    reason=series.reason,
                    message=series.message,
                    first=first,
                    last=series.last,
                    count=count,
                    instance=self._identity,
                    fencing_token=series.token,
                )
        except NotActingError:
            self._results.labels(result=EventResult.DROPPED).inc(count)  # the shard moved on: not ours to write
            return
        except errors.FencedError:
            self._refused(series, count)
            return
        except Exception as error:
            self._failed(series, "create", error)
            return
        finally:  # a failed (or cancelled) create forgets the series: its next occurrence starts a new one
            self._book.unqueue(key)
        self._results.labels(result=EventResult.CREATED).inc()
        self._book.created(key, series, name=name, count=count, interval=self._interval)

    async def _patch(self, key: SeriesKey, series: Series) -> None:
        count, first = series.pending, series.first
        series.pending, series.first = 0, None
        series.due = self._monotonic() + self._interval
        try:
            with requests.guarded(series.guard):
                patched = await self._api.patch_event(
                    namespace=series.involved.namespace,
                    name=series.name,
                    count=series.count + count,
                    last_timestamp=series.last,
                    message=series.message,
                    fencing_token=series.token,
                )
        except asyncio.CancelledError:
            self._book.restore(series, count, first)  # ``count`` is absolute: sending it again is harmless
            raise
        except NotActingError:
            self._results.labels(result=EventResult.DROPPED).inc(count)  # the shard moved on: not ours to write
            return
        except errors.FencedError:
            self._refused(series, count)
            return
        except Exception as error:
            self._book.restore(series, count, first)  # kept for the next interval, never retried right away
            self._book.schedule(key, series)
            self._failed(series, "patch", error)
            return
        if isinstance(patched, results.Gone):  # the Event expired: a new one carries the count on
            self._book.restore(series, count, first)
            self._book.gone(key, series)
            return
        self._results.labels(result=EventResult.PATCHED).inc()
        series.count += count

    def _refused(self, series: Series, count: int) -> None:
        """The API server's fencing policy refused the write: the token is stale, the shard moved on."""
        self._results.labels(result=EventResult.DROPPED).inc(count)
        self._fenced.labels(kind=FencedKind.EVENT).inc()
        logger.warning(
            "Event %s refused by the fencing policy (token %s): the shard moved on", series.reason, series.token
        )
        self._on_fenced(series.token)

    def _failed(self, series: Series, verb: str, error: Exception) -> None:
        self._results.labels(result=EventResult.FAILED).inc()
        self._failed_log.log(
            "could not %s Event %s on %s/%s: %s",
            verb,
            series.reason,
            series.involved.namespace,
            series.involved.name,
            error,
        )
