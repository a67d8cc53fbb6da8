"""Ready only once every object of the initial LIST has been indexed from the informers' events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sundial.kube import errors
from sundial.runtime.watch.readiness import InitialListing
from sundial.runtime.watch.store import Store


class Lister:
    """Pages of ``limit`` objects, as the API server hands them out with ``continue`` tokens."""

    def __init__(self, sjs: list[str], jobs: list[str], calendars: list[str] | None = None) -> None:
        self.sjs, self.jobs, self.calendars = sjs, jobs, calendars or []
        self.limits: list[int] = []
        self.kinds: set[str] = set()

    async def _pages(self, uids: list[str], limit: int) -> AsyncIterator[list[dict[str, Any]]]:
        self.limits.append(limit)
        for start in range(0, max(len(uids), 1), limit):
            yield [{"metadata": {"uid": uid}} for uid in uids[start : start + limit]]

    def scheduled_job_pages(
        self, *, namespace: str | None, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        self.kinds.add("scheduledjobs")
        return self._pages(self.sjs, limit)

    def job_pages(
        self, *, namespace: str | None, label_selector: str, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        self.kinds.add("jobs")
        return self._pages(self.jobs, limit)

    def schedule_calendar_pages(
        self, *, namespace: str | None, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        self.kinds.add("schedulecalendars")
        return self._pages(self.calendars, limit)


class LaggingCache(Lister):
    """A consistent first page, then 504 ResourceVersionTooLarge on every continue page (the watch cache lags
    etcd), as a loaded API server answered in CI; from the watch cache (``any_version``) the listing works."""

    def __init__(self, sjs: list[str]) -> None:
        super().__init__(sjs, [])
        self.versions: list[bool] = []

    def scheduled_job_pages(
        self, *, namespace: str | None, limit: int, any_version: bool = False
    ) -> AsyncIterator[list[dict[str, Any]]]:
        self.versions.append(any_version)
        return self._lagging(limit) if not any_version else self._pages(self.sjs, limit)

    async def _lagging(self, limit: int) -> AsyncIterator[list[dict[str, Any]]]:
        yield [{"metadata": {"uid": uid}} for uid in self.sjs[:limit]]
        message = "Timeout: Too large resource version: 62781, current: 62395"
        raise errors.GatewayTimeoutError(code=504, reason="Timeout", message=message)


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


async def test_the_listing_is_paged_and_every_page_counts() -> None:
    lister = Lister([f"sj-{i}" for i in range(1203)], [f"job-{i}" for i in range(7)])
    store = Store()
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(lister, (), recheck=0.01))
    await asyncio.sleep(0.02)
    assert listing.missing == 1210
    assert lister.limits and all(0 < limit <= 500 for limit in lister.limits)
    for i in range(1203):
        store.put_scheduled_job(_sj(f"sj-{i}"))
    listing.check()
    assert not listing.ready.is_set()
    for i in range(7):
        store.put_job({"metadata": {"name": f"job-{i}", "namespace": "ns", "uid": f"job-{i}"}})
    listing.check()
    assert listing.ready.is_set()
    await asyncio.wait_for(task, timeout=1)


async def test_once_ready_the_store_stops_remembering_uids() -> None:
    store = Store()
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(Lister(["a"], []), (), recheck=0.01))
    await asyncio.sleep(0.02)
    store.put_scheduled_job(_sj("a"))
    listing.check()
    await asyncio.wait_for(task, timeout=1)
    assert listing.ready.is_set()
    store.put_scheduled_job(_sj("later"))
    assert not store.has_seen("a") and not store.has_seen("later")


async def test_each_indexed_uid_is_looked_at_once_not_the_whole_expected_set_per_event() -> None:
    class CountingStore(Store):
        lookups = 0

        def has_seen(self, uid: str) -> bool:
            CountingStore.lookups += 1
            return super().has_seen(uid)

    n = 2000
    store = CountingStore()
    store.put_scheduled_job(_sj("sj-0"))  # indexed before our LIST came back
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(Lister([f"sj-{i}" for i in range(n)], []), (), recheck=0.01))
    await asyncio.sleep(0.02)
    assert listing.missing == n - 1
    CountingStore.lookups = 0
    for i in range(1, n):
        store.put_scheduled_job(_sj(f"sj-{i}"))
        listing.check()
    assert listing.ready.is_set()
    assert CountingStore.lookups == 0  # was n*(n-1)/2 with a full pass per event
    await asyncio.wait_for(task, timeout=1)


async def test_not_ready_until_the_listed_calendars_were_seen_too() -> None:
    store = Store()
    listing = InitialListing(store)
    task = asyncio.create_task(listing.load(Lister(["a"], [], ["holidays-uid"]), (), recheck=0.01))
    await asyncio.sleep(0.02)
    store.put_scheduled_job(_sj("a"))
    listing.check()
    assert not listing.ready.is_set()
    store.put_calendar({"metadata": {"name": "holidays", "namespace": "ns", "uid": "holidays-uid"}, "spec": {}})
    listing.check()
    assert listing.ready.is_set()
    await asyncio.wait_for(task, timeout=1)


async def test_a_listing_that_a_lagging_watch_cache_fails_is_done_again_from_the_cache() -> None:
    store = Store()
    for uid in ("a", "b", "c"):
        store.put_scheduled_job(_sj(uid))
    listing = InitialListing(store)
    lister = LaggingCache(["a", "b", "c"])
    await asyncio.wait_for(listing.load(lister, (), retry=0.01, recheck=0.01), timeout=1)
    assert listing.ready.is_set()
    assert lister.versions[:2] == [False, True]


class Informer:
    def __init__(self) -> None:
        self.synced = asyncio.Event()


async def test_with_own_informers_only_the_calendars_are_listed_and_each_informer_must_have_synced() -> None:
    """What the operator runs: the ScheduledJobs and Jobs come from informers that say when they have listed
    (runtime/watch/listwatch.py); only kopf's calendars are listed here and awaited by UID."""
    store = Store()
    lister = Lister(["sj-never-listed-here"], ["job-never-listed-here"], ["cal"])
    listing = InitialListing(store, listed={"schedulecalendars"})
    scheduled_jobs, jobs = Informer(), Informer()
    listing.wait_for(scheduled_jobs, jobs)
    task = asyncio.create_task(listing.load(lister, (), recheck=0.01))
    await asyncio.sleep(0.02)
    store.put_calendar({"metadata": {"name": "cal", "namespace": "ns", "uid": "cal"}, "spec": {}})
    listing.check()
    scheduled_jobs.synced.set()
    listing.check()
    assert not listing.ready.is_set(), "the Jobs' informer has not listed yet"
    jobs.synced.set()
    listing.check()
    assert listing.ready.is_set()
    await asyncio.wait_for(task, timeout=1)
    assert lister.kinds == {"schedulecalendars"}, "the informers list their own kinds"
