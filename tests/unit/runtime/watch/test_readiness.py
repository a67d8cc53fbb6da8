"""Ready once every informer has listed once (DESIGN §12.1), and never unready again."""

from __future__ import annotations

import asyncio

from sundial.runtime.watch.readiness import Readiness


class Informer:
    def __init__(self, plural: str) -> None:
        self.plural = plural
        self.synced = asyncio.Event()


async def test_ready_once_every_informer_has_synced_and_stays_ready() -> None:
    informers = [Informer("scheduledjobs"), Informer("jobs"), Informer("schedulecalendars")]
    readiness = Readiness()
    readiness.wait_for(informers)
    readiness.check()
    assert not readiness.ready.is_set()
    for informer in informers[:2]:
        informer.synced.set()
        readiness.check()
    assert not readiness.ready.is_set(), "the calendars have not listed yet"
    informers[2].synced.set()
    readiness.check()
    assert readiness.ready.is_set()
    informers[0].synced.clear()  # an informer never unsets it; even so readiness stays
    readiness.check()
    assert readiness.ready.is_set()


async def test_nothing_to_wait_for_is_not_ready() -> None:
    readiness = Readiness()
    readiness.check()
    assert not readiness.ready.is_set()
