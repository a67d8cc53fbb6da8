"""Ready once the initial state is indexed: our own LIST says which UIDs exist; the store must see them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from sundial.kube import errors
from sundial.planner import names
from sundial.runtime.store import Store

logger = logging.getLogger(__name__)


class Lister(Protocol):
    async def list_scheduled_jobs(self, *, namespace: str | None) -> list[dict[str, Any]]: ...

    async def list_jobs(self, *, namespace: str | None, label_selector: str) -> list[dict[str, Any]]: ...


class InitialListing:
    """The set of UIDs that existed at startup; ready when the informers have indexed each of them."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._expected: set[str] | None = None
        self.ready = asyncio.Event()

    async def load(self, api: Lister, namespaces: Sequence[str], *, retry: float = 2.0, recheck: float = 5.0) -> None:
        """List once; while not ready, re-list every ``recheck`` seconds and stop expecting UIDs that are
        gone (an object deleted between our LIST and the informers' LIST never sends an event)."""
        while not self.ready.is_set():
            try:
                current = await self._list(api, namespaces)
            except errors.KubeError as error:
                logger.warning("initial listing failed (retrying): %s", error)
                await asyncio.sleep(retry)
                continue
            if self._expected is None:
                self._expected = current
                logger.info("initial listing: %d objects to index", len(current))
            else:
                self._expected &= current
            self.check()
            if not self.ready.is_set():
                await asyncio.sleep(recheck)

    @staticmethod
    async def _list(api: Lister, namespaces: Sequence[str]) -> set[str]:
        uids: set[str] = set()
        scopes: list[str | None] = [*namespaces] or [None]
        for scope in scopes:
            for body in await api.list_scheduled_jobs(namespace=scope):
                uids.add(str(body["metadata"]["uid"]))
            for body in await api.list_jobs(namespace=scope, label_selector=names.SCHEDULED_JOB_LABEL):
                uids.add(str(body["metadata"]["uid"]))
        return uids

    @property
    def missing(self) -> int:
        if self._expected is None:
            return -1
        return sum(1 for uid in self._expected if not self._store.has_seen(uid))

    def check(self) -> None:
        """Call after indexing an event; sets :attr:`ready` once nothing from the listing is missing."""
        if self.ready.is_set() or self._expected is None:
            return
        self._expected = {uid for uid in self._expected if not self._store.has_seen(uid)}
        if not self._expected:
            logger.info("initial state indexed: ready")
            self.ready.set()
