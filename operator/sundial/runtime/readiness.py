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

    async def load(self, api: Lister, namespaces: Sequence[str], *, retry: float = 2.0) -> None:
        scopes: Sequence[str | None] = list(namespaces) or [None]
        while True:
            try:
                expected: set[str] = set()
                for scope in scopes:
                    for body in await api.list_scheduled_jobs(namespace=scope):
                        expected.add(str(body["metadata"]["uid"]))
                    for body in await api.list_jobs(namespace=scope, label_selector=names.SCHEDULED_JOB_LABEL):
                        expected.add(str(body["metadata"]["uid"]))
            except errors.KubeError as error:
                logger.warning("initial listing failed (retrying): %s", error)
                await asyncio.sleep(retry)
                continue
            self._expected = expected
            logger.info("initial listing: %d objects to index", len(expected))
            self.check()
            return

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
