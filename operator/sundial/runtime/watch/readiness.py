"""Ready once the initial state is indexed: every informer has listed, and for what kopf watches our own LIST
says which UIDs exist and the store must see them.

The ScheduledJobs and Jobs have their own informers (:mod:`sundial.runtime.watch.listwatch`), which know when
their first listing is indexed (``synced``); kopf's ScheduleCalendar informer does not say, so the calendars are
listed here (``listed``) and their UIDs awaited: no ScheduledJob is planned before the calendars it refers to
are indexed (it would be reported ``CalendarNotFound`` for a moment at every start).

The LIST is paged (:data:`PAGE_SIZE` objects per request) and only UIDs are kept from each page: a single
LIST of every ScheduledJob would decode into all their bodies as Python objects at once, and that peak
would stay the process's high-water mark (RSS) long after it is dropped. A listing whose ``continue`` pages
fail because the API server's watch cache lags (504) is done again from the cache (``resourceVersion=0``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Collection, Sequence
from typing import Any, Protocol

from sundial.kube import errors
from sundial.model import names
from sundial.runtime.watch.store import Store

logger = logging.getLogger(__name__)


#: Objects per LIST request (``limit``; the API server hands out ``continue`` tokens for the rest).
PAGE_SIZE = 500


#: A listing that fails with one of these (504 ``ResourceVersionTooLarge``: a continue page waited for a
#: lagging watch cache; 410: a continue token expired) is done again from the watch cache (``any_version``).
CACHE_FALLBACK_ERRORS = (errors.GatewayTimeoutError, errors.GoneError)


class Lister(Protocol):
    def scheduled_job_pages(
        self, *, namespace: str | None, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]: ...

    def job_pages(
        self, *, namespace: str | None, label_selector: str, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]: ...

    def schedule_calendar_pages(
        self, *, namespace: str | None, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]: ...


#: What :class:`InitialListing` can list: ScheduledJobs, their Jobs, ScheduleCalendars.
KINDS = frozenset({"scheduledjobs", "jobs", "schedulecalendars"})


class Synced(Protocol):
    synced: asyncio.Event


class InitialListing:
    """The set of UIDs of the ``listed`` kinds that existed at startup; ready when the informers have indexed each
    of them and every one of ``informers`` has ``synced``."""

    def __init__(self, store: Store, *, listed: Collection[str] = KINDS) -> None:
        self._store = store
        self._expected: set[str] | None = None
        self._kinds = frozenset(listed)
        self._informers: list[Synced] = []
        self.ready = asyncio.Event()

    def wait_for(self, *informers: Synced) -> None:
        """Not ready until each of INFORMERS has synced too (each calls :meth:`check` once it has)."""
        self._informers += informers

    async def load(self, api: Lister, namespaces: Sequence[str], *, retry: float = 2.0, recheck: float = 5.0) -> None:
        """List once; while not ready, re-list every ``recheck`` seconds and stop expecting UIDs that are
        gone (an object deleted between our LIST and the informers' LIST never sends an event)."""
        any_version = False
        while not self.ready.is_set():
            try:
                current = await self._list(api, namespaces, kinds=self._kinds, any_version=any_version)
            except errors.KubeError as error:
                if isinstance(error, CACHE_FALLBACK_ERRORS) and not any_version:
                    any_version = True
                    logger.warning("initial listing failed (retrying from the watch cache): %s", error)
                else:
                    logger.warning("initial listing failed (retrying): %s", error)
                await asyncio.sleep(retry)
                continue
            if self._expected is None:
                # Once, in full: what the informers indexed before this LIST came back.
                self._expected = {uid for uid in current if not self._store.has_seen(uid)}
                logger.info("initial listing: %d objects to index", len(current))
            else:
                self._expected &= current
            self.check()
            if not self.ready.is_set():
                await asyncio.sleep(recheck)

    @staticmethod
    async def _list(
        api: Lister, namespaces: Sequence[str], *, kinds: frozenset[str], any_version: bool = False
    ) -> set[str]:
        uids: set[str] = set()
        scopes: list[str | None] = [*namespaces] or [None]
        paging: dict[str, Any] = {"limit": PAGE_SIZE, "any_version": any_version}
        for scope in scopes:
            if "scheduledjobs" in kinds:
                async for page in api.scheduled_job_pages(namespace=scope, **paging):
                    uids.update(str(body["metadata"]["uid"]) for body in page)
            if "jobs" in kinds:
                selector = names.SCHEDULED_JOB_LABEL
                async for page in api.job_pages(namespace=scope, label_selector=selector, **paging):
                    uids.update(str(body["metadata"]["uid"]) for body in page)
            if "schedulecalendars" in kinds:
                async for page in api.schedule_calendar_pages(namespace=scope, **paging):
                    uids.update(str(body["metadata"]["uid"]) for body in page)
        return uids

    @property
    def missing(self) -> int:
        if self._expected is None:
            return -1
        return sum(1 for uid in self._expected if not self._store.has_seen(uid))

    def check(self) -> None:
        """Call after indexing an event; sets :attr:`ready` once nothing from the listing is missing.

        Only the UIDs indexed since the last call are looked at (:meth:`Store.take_seen`): a full pass over
        the expected set on every event would be quadratic in the number of objects (docs/benchmarks.md)."""
        if self.ready.is_set() or self._expected is None:
            return
        self._expected.difference_update(self._store.take_seen())
        if not self._expected and all(informer.synced.is_set() for informer in self._informers):
            logger.info("initial state indexed: ready")
            self._store.stop_tracking_uids()
            self.ready.set()
