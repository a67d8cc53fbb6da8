"""The Jobs' informer against a loopback API server that lists in pages and scripts its watch streams: every
object reaches the intake once per event, the watch resumes from the last version it saw, a 410 lists again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client

from sundial.kube import ratelimits, requests
from sundial.kube.watches import Watches
from sundial.model import names
from sundial.runtime.watch.listwatch import SCHEDULED_JOBS, ListWatch


def job(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(version)}}


class FakeApi:
    """LIST answers ``items`` two per page at version ``listed_at``; each WATCH request takes the next script:
    a list of lines (dicts, or ``"drop"`` to break the connection), then the stream ends."""

    def __init__(self) -> None:
        self.items = [job("a", 1), job("b", 2), job("c", 3)]
        self.listed_at = 3
        self.scripts: list[list[Any]] = []
        self.lists: list[dict[str, str]] = []
        self.watches: list[dict[str, str]] = []
        self.all_watched = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        assert request.path == "/apis/batch/v1/namespaces/ns/jobs"
        if query.get("watch") != "true":
            self.lists.append(query)
            start = int(query.get("continue") or 0)
            page = self.items[start : start + int(query["limit"])]
            more = start + len(page) < len(self.items)
            meta = {"resourceVersion": str(self.listed_at)} | ({"continue": str(start + len(page))} if more else {})
            return web.json_response({"metadata": meta, "items": page})
        self.watches.append(query)
        if not self.scripts:
            self.all_watched.set()
            await asyncio.sleep(3600)
        script = self.scripts.pop(0)
        if script == ["gone"]:
            return web.json_response({"kind": "Status", "code": 410, "reason": "Expired"}, status=410)
        response = web.StreamResponse()
        await response.prepare(request)
        for line in script:
            if line == "drop":
                assert request.transport is not None
                request.transport.close()
                return response
            await response.write(orjson.dumps(line) + b"\n")
        return response


@pytest.fixture
async def informer() -> AsyncIterator[tuple[FakeApi, list[tuple[str | None, str]], Callable[[], ListWatch]]]:
    api = FakeApi()
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", api.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    api_client = client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
    seen: list[tuple[str | None, str]] = []
    watches = Watches(
        api_client=api_client, requester=requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    )

    def make() -> ListWatch:
        return ListWatch(
            watches=watches,
            on_event=lambda kind, body: seen.append((kind, body["metadata"]["name"])),
            namespaces=["ns"],
            backoffs=(0.01,),
            page_size=2,
        )

    try:
        yield api, seen, make
    finally:
        await api_client.close()
        await runner.cleanup()


async def _run_until_watching(api: FakeApi, informer: ListWatch) -> None:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(api.all_watched.wait(), timeout=5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_lists_in_pages_then_watches_from_the_lists_version_with_the_selector(informer: Any) -> None:
    api, seen, make = informer
    api.scripts = [
        [{"type": "ADDED", "object": job("d", 4)}, {"type": "MODIFIED", "object": job("a", 5)}],
        [{"type": "DELETED", "object": job("b", 6)}],
    ]
    await _run_until_watching(api, make())
    assert seen == [(None, "a"), (None, "b"), (None, "c"), ("ADDED", "d"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert [q.get("continue") for q in api.lists] == [None, "2"]
    assert {q["labelSelector"] for q in api.lists + api.watches} == {names.SCHEDULED_JOB_LABEL}
    assert [q["resourceVersion"] for q in api.watches] == ["3", "5", "6"], "each watch starts where the last ended"
    assert all(q["allowWatchBookmarks"] == "true" for q in api.watches)


async def test_a_bookmark_moves_the_version_and_reaches_nobody(informer: Any) -> None:
    api, seen, make = informer
    api.scripts = [[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "40"}}}]]
    await _run_until_watching(api, make())
    assert seen == [(None, "a"), (None, "b"), (None, "c")]
    assert [q["resourceVersion"] for q in api.watches] == ["3", "40"]


async def test_a_broken_watch_resumes_from_the_last_event_without_listing_again(informer: Any) -> None:
    api, seen, make = informer
    api.scripts = [
        [{"type": "ADDED", "object": job("d", 7)}, "drop"],
        ["drop"],
        [{"type": "ADDED", "object": job("e", 9)}],
    ]
    await _run_until_watching(api, make())
    assert seen[3:] == [("ADDED", "d"), ("ADDED", "e")]
    assert len(api.lists) == 2, "listed once (two pages)"
    assert [q["resourceVersion"] for q in api.watches] == ["3", "7", "7", "9"]


async def test_an_expired_version_lists_again(informer: Any) -> None:
    api, seen, make = informer
    api.scripts = [
        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}],
        ["gone"],
    ]
    await _run_until_watching(api, make())
    assert seen == [(None, "a"), (None, "b"), (None, "c")] * 3
    assert len(api.lists) == 6, "three listings of two pages"
    assert [q["resourceVersion"] for q in api.watches] == ["3", "3", "3"]


async def test_synced_once_every_scope_was_listed(informer: Any) -> None:
    api, seen, make = informer
    watcher = make()
    calls: list[int] = []
    watcher._on_synced = lambda: calls.append(len(seen))
    assert not watcher.synced.is_set()
    await _run_until_watching(api, watcher)
    assert watcher.synced.is_set()
    assert calls == [3], "called once, after the listed objects were handed on"


def test_the_scheduled_jobs_collection_is_unfiltered() -> None:
    assert SCHEDULED_JOBS.path("ns") == "/apis/sundial.dev/v1alpha1/namespaces/ns/scheduledjobs"
    assert SCHEDULED_JOBS.path(None) == "/apis/sundial.dev/v1alpha1/scheduledjobs"
    assert SCHEDULED_JOBS.query(watch="true") == {"watch": "true"}
