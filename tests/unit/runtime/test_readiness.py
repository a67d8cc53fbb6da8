"""Ready only once every object of the initial LIST has been indexed from the informers' events."""

from __future__ import annotations

import asyncio
from typing import Any

from sundial.runtime.readiness import InitialListing
from sundial.runtime.store import Store


class Lister:
    def __init__(self, sjs: list[str], jobs: list[str]) -> None:
        self.sjs, self.jobs = sjs, jobs

    async def list_scheduled_jobs(self, *, namespace: str | None) -> list[dict[str, Any]]:
        return [{"metadata": {"uid": uid}} for uid in self.sjs]

    async def list_jobs(self, *, namespace: str | None, label_selector: str) -> list[dict[str, Any]]:
        return [{"metadata": {"uid": uid}} for uid in self.jobs]


def _sj(uid: str) -> dict[str, Any]:
    return {"metadata": {"name": uid, "namespace": "ns", "uid": uid}}


async def test_nothing_to_index_is_ready_at_once() -> None:
    listing = InitialListing(Store())
    await asyncio.wait_for(listing.load(Lister([], []), ()), timeout=1)
    assert listing.ready.is_set()


async def test_ready_after_every_listed_object_was_seen() -> None:
    store = Store()
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(Lister(["a", "b"], []), (), recheck=0.01))
    await asyncio.sleep(0.02)
    store.put_scheduled_job(_sj("a"))
    listing.check()
    assert not listing.ready.is_set()
    store.put_scheduled_job(_sj("b"))
    listing.check()
    assert listing.ready.is_set()
    await asyncio.wait_for(task, timeout=1)


async def test_an_object_deleted_before_the_informers_listed_it_does_not_block_readiness() -> None:
    lister = Lister(["a", "gone"], [])
    store = Store()
    store.put_scheduled_job(_sj("a"))
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(lister, (), recheck=0.01))
    await asyncio.sleep(0.02)
    assert not listing.ready.is_set()
    lister.sjs = ["a"]
    await asyncio.wait_for(task, timeout=1)
    assert listing.ready.is_set()
