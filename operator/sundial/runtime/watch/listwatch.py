"""The informers of ScheduledJobs and their Jobs: LIST, then WATCH from the list's resourceVersion, every event
handed on as it comes.

kopf processed each watch event as it processes any (a worker task and queue per object, body wrappers, a
logger, cause detection, handler selection and invocation). For Sundial's Jobs - a herd of 2,000 runs is 2,000
``ADDED`` events and several ``MODIFIED`` each within seconds - that was 23% of the operator's CPU, more than
its planning; for 100,000 ScheduledJobs listed at start-up, most of the time to ready (docs/benchmarks.md).
These informers do only what the intake needs: decode each line (orjson) and call ``on_event(type, body)``
with the arguments kopf's handlers got (type ``None`` for a listed object, then ``ADDED``/``MODIFIED``/
``DELETED``). kopf still watches the ScheduleCalendars and serves the admission webhook
(:mod:`sundial.runtime.watch.informers`).

* One loop per scope (each ``--namespace``, or the whole cluster); a label selector, if the collection has one,
  is sent to the API server (the Jobs: only those labelled ``sundial.dev/scheduledjob``).
* The list is paged (:data:`PAGE_SIZE` per request: one page of bodies is held at a time); ``synced`` is set
  (and ``on_synced`` called) once every scope was listed the first time. The watch starts at the list's
  resourceVersion, asks for bookmarks and lasts :data:`WATCH_SECONDS`; the next one starts where it ended.
* A watch that breaks (connection, 5xx, nothing at all for :data:`IDLE_SECONDS`) is started again from the last
  resourceVersion seen, at once if it had delivered events, else after a pause (:data:`BACKOFFS`); 410
  ``Expired`` (the version is older than the API server keeps) lists again. A failing LIST is retried with the
  same pauses, forever: the operator is not ready until every informer has listed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from sundial import model
from sundial.kube import errors
from sundial.kube.watches import Collection, Watches
from sundial.model import names
from sundial.runtime.watch.informers import EventFn

logger = logging.getLogger(__name__)

JOBS = Collection(("apis", "batch", "v1"), "jobs", label_selector=names.SCHEDULED_JOB_LABEL)
SCHEDULED_JOBS = Collection(("apis", model.resource.GROUP, model.resource.VERSION), model.resource.PLURAL)
#: Objects per LIST request.
PAGE_SIZE = 500
#: How long one watch request lasts (the API server ends it; the next one starts at once).
WATCH_SECONDS = 300
#: A watch with no line at all for this long (the API server sends a bookmark about every minute) is broken.
IDLE_SECONDS = 90.0
#: Pauses after consecutive failures (seconds); any event received resets them.
BACKOFFS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)


class ListWatch:
    """Lists and watches one :class:`Collection` in each scope, handing every object to ``on_event``."""

    def __init__(
        self,
        *,
        watches: Watches,
        on_event: EventFn,
        namespaces: Sequence[str] = (),
        collection: Collection = JOBS,
        backoffs: Sequence[float] = BACKOFFS,
        page_size: int = PAGE_SIZE,
        on_synced: Callable[[], None] = lambda: None,
    ) -> None:
        self._watches = watches
        self._on_event = on_event
        self._scopes: list[str | None] = [*namespaces] or [None]
        self._collection = collection
        self._backoffs = backoffs
        self._page_size = page_size
        self._on_synced = on_synced
        self._unlisted = set(self._scopes)
        self.synced = asyncio.Event()
        """Set once every scope was listed (its objects handed on) the first time."""

    @property
    def plural(self) -> str:
        return self._collection.plural

    async def run(self) -> None:
        """Run until cancelled."""
        await asyncio.gather(*(self._follow(scope) for scope in self._scopes))

    async def _follow(self, namespace: str | None) -> None:
        failures = 0
        version = ""  # none: list (first, or after 410)
        while True:
            try:
                if not version:
                    version = await self._list(namespace)
                    failures = 0
                version, progressed = await self._watch(namespace, version)
                failures = 0 if progressed else failures
            except errors.GoneError as error:
                logger.info("%s watch expired (%s): listing again", self._collection.plural, error.reason)
                version = ""
            except errors.KubeError as error:
                pause = self._backoffs[min(failures, len(self._backoffs) - 1)]
                failures += 1
                what = "watch" if version else "list"
                logger.warning("%s %s failed (again in %.1fs): %s", self._collection.plural, what, pause, error)
                await asyncio.sleep(pause)

    async def _list(self, namespace: str | None) -> str:
        listed = ""
        async for items, version in self._watches.pages(self._collection, namespace=namespace, limit=self._page_size):
            listed = version
            for body in items:
                self._on_event(None, body)
        self._unlisted.discard(namespace)
        if not self._unlisted and not self.synced.is_set():
            self.synced.set()
            self._on_synced()
        return listed

    async def _watch(self, namespace: str | None, version: str) -> tuple[str, bool]:
        """Follow one watch request from VERSION; the version to go on from, and whether any event came. A
        stream that breaks after some events is resumed at once from the last (the API server is answering); one
        that fails before any raises, and :meth:`_follow` pauses before the next."""
        progressed = False
        stream = self._watches.events(
            self._collection, namespace=namespace, resource_version=version, seconds=WATCH_SECONDS, idle=IDLE_SECONDS
        )
        try:
            async for event in stream:
                kind = event.get("type")
                body = event.get("object") or {}
                version = str((body.get("metadata") or {}).get("resourceVersion") or version)
                progressed = True
                if kind != "BOOKMARK":
                    self._on_event(kind, body)
        except errors.KubeError as error:
            if isinstance(error, errors.GoneError) or not progressed:
                raise
            # Broken after some events: go on from the last one at once (it is not a failing API server).
            logger.info("%s watch broke after events (resuming): %s", self._collection.plural, error)
        return version, progressed
