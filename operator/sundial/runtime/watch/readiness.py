"""Ready once every informer has listed once: the initial state of ScheduledJobs, their Jobs and the
ScheduleCalendars is in the store (no ScheduledJob is planned before the calendars it refers to and the Jobs it
owns are indexed). Each informer's ``synced`` is set after its first complete listing of every scope, and it
calls :meth:`Readiness.check` then (:mod:`.listwatch`). Readiness is set once and stays: a later relist replaces
the store in place and never makes the replica unready.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

logger = logging.getLogger(__name__)


class Synced(Protocol):
    synced: asyncio.Event

    @property
    def plural(self) -> str: ...


class Readiness:
    def __init__(self) -> None:
        self._informers: list[Synced] = []
        self.ready = asyncio.Event()

    def wait_for(self, informers: Sequence[Synced]) -> None:
        """Not ready until each of INFORMERS has synced."""
        self._informers += informers

    def check(self) -> None:
        """Call when an informer has synced; sets :attr:`ready` once all have."""
        if self.ready.is_set() or not self._informers:
            return
        if all(informer.synced.is_set() for informer in self._informers):
            logger.info("initial state indexed (%s): ready", ", ".join(i.plural for i in self._informers))
            self.ready.set()
