"""The informer's contract (docs/design.md §7, "The intake") against a loopback API server that lists in pages and
scripts its watch streams: every object reaches the sink once per event, the watch resumes from the last version
it saw, 410 and unreadable lines list again, a relist replaces what the sink holds, an object the sink cannot
read is quarantined and the informer goes on, and nothing ends the informer but cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import orjson
import pytest
from aiohttp import web
from tests.unit.runtime.watch.loopback import loopback_watches

from sundial.kube import watches
from sundial.model import names
from sundial.runtime.watch.backoff import Backoff
from sundial.runtime.watch.kinds import JOBS, SCHEDULED_JOBS
from sundial.runtime.watch.listwatch import ListWatch
from sundial.runtime.watch.paging import Paging


def job(name: str, version: int, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(version)}} | extra


class FakeApi:
    """LIST answers ``items`` ``limit`` per page at version ``listed_at`` (``lists_of`` replaces ``items`` for each
    later listing, in turn); each WATCH request takes the next script: a list of lines (dicts, raw bytes, or
    ``"drop"`` to break the connection), then the stream ends. ``fail_continue`` answers that many ``continue``
    pages with 504."""

    def __init__(self) -> None:
        self.items = [job("a", 1), job("b", 2), job("c", 3)]
        self.lists_of: list[list[dict[str, Any]]] = []
        self.listed_at = 3
        self.scripts: list[list[Any]] = []
        self.lists: list[dict[str, str]] = []
        self.watches: list[dict[str, str]] = []
        self.all_watched = asyncio.Event()
        self.fail_continue = 0
        self.raw_page: bytes | None = None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        query = dict(request.query)
        assert request.path == "/apis/batch/v1/namespaces/ns/jobs"
        if query.get("watch") != "true":
            return self._list(query)
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
            await response.write((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n")
        return response

    def _list(self, query: dict[str, str]) -> web.Response:
        self.lists.append(query)
        start = int(query.get("continue") or 0)
        if start == 0 and len(self.lists) > 1 and self.lists_of:
            self.items = self.lists_of.pop(0)
        if start and self.fail_continue:
            self.fail_continue -= 1
            status = {"kind": "Status", "code": 504, "reason": "Timeout", "message": "Too large resource version"}
            return web.json_response(status, status=504)
        if self.raw_page is not None and start == 0:
            raw, self.raw_page = self.raw_page, None
            return web.Response(body=raw, content_type="application/json")
        page = self.items[start : start + int(query["limit"])]
        more = start + len(page) < len(self.items)
        meta = {"resourceVersion": str(self.listed_at)} | ({"continue": str(start + len(page))} if more else {})
        return web.json_response({"metadata": meta, "items": page})


class Sink:
    """Records what it is handed; ``poison`` names objects whose reading raises."""

    def __init__(self) -> None:
        self.seen: list[tuple[str | None, str]] = []
        self.kept: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.quarantined: list[tuple[str | None, str, str]] = []
        self.vanished_ids: list[tuple[str, str]] = []
        self.poison: set[str] = set()
        self.held_raises = 0

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        name = body["metadata"]["name"]
        if name in self.poison:
            raise OverflowError("date value out of range")
        self.seen.append((event, name))
        if event == "DELETED":
            self.kept.pop(("ns", name), None)
        else:
            self.kept[("ns", name)] = body

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        self.quarantined.append((event, body["metadata"]["name"], type(error).__name__))

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        if self.held_raises:
            self.held_raises -= 1
            raise RuntimeError("a bug in the sink")
        return set(self.kept)

    def vanished(self, identity: tuple[str, str]) -> None:
        self.vanished_ids.append(identity)
        self.kept.pop(identity, None)


class Relists:
    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.failures: list[str] = []

    def relisted(self, plural: str, reason: str) -> None:
        self.reasons.append(reason)

    def failed(self, plural: str, reason: str) -> None:
        self.failures.append(reason)


Make = Callable[..., ListWatch]


@pytest.fixture
async def informer() -> AsyncIterator[tuple[FakeApi, Sink, Relists, Make]]:
    api = FakeApi()
    sink, observer = Sink(), Relists()

    def make(**options: Any) -> ListWatch:
        settings: dict[str, Any] = {
            "watches": source,
            "sink": sink,
            "collection": JOBS,
            "namespaces": ["ns"],
            "backoff": lambda: Backoff(initial=0.01, cap=0.02, rand=lambda: 0.0),
            "paging": Paging(most=2, first=2),
            "observer": observer,
        }
        return ListWatch(**(settings | options))

    async with loopback_watches(api.handle) as source:
        yield api, sink, observer, make


async def _run_until_watching(api: FakeApi, informer: ListWatch) -> None:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(api.all_watched.wait(), timeout=5)
        assert not task.done(), "the informer ended"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_lists_in_pages_then_watches_from_the_lists_version_with_the_selector(informer: Any) -> None:
    api, sink, _, make = informer
    api.scripts = [
        [{"type": "ADDED", "object": job("d", 4)}, {"type": "MODIFIED", "object": job("a", 5)}],
        [{"type": "DELETED", "object": job("b", 6)}],
    ]
    await _run_until_watching(api, make())
    assert sink.seen == [(None, "a"), (None, "b"), (None, "c"), ("ADDED", "d"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert [q.get("continue") for q in api.lists] == [None, "2"]
    assert {q["labelSelector"] for q in api.lists + api.watches} == {names.SCHEDULED_JOB_LABEL}
    assert [q["resourceVersion"] for q in api.watches] == ["3", "5", "6"], "each watch starts where the last ended"
    assert all(q["allowWatchBookmarks"] == "true" for q in api.watches)


async def test_a_bookmark_moves_the_version_and_reaches_nobody(informer: Any) -> None:
    api, sink, _, make = informer
    api.scripts = [[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "40"}}}]]
    await _run_until_watching(api, make())
    assert sink.seen == [(None, "a"), (None, "b"), (None, "c")]
    assert [q["resourceVersion"] for q in api.watches] == ["3", "40"]


async def test_a_broken_watch_resumes_from_the_last_event_without_listing_again(informer: Any) -> None:
    api, sink, _, make = informer
    api.scripts = [
        [{"type": "ADDED", "object": job("d", 7)}, "drop"],
        ["drop"],
        [{"type": "ADDED", "object": job("e", 9)}],
    ]
    await _run_until_watching(api, make())
    assert sink.seen[3:] == [("ADDED", "d"), ("ADDED", "e")]
    assert len(api.lists) == 2, "listed once (two pages)"
    assert [q["resourceVersion"] for q in api.watches] == ["3", "7", "7", "9"]


async def test_an_expired_version_lists_again(informer: Any) -> None:
    api, sink, observer, make = informer
    api.scripts = [
        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}],
        ["gone"],
    ]
    await _run_until_watching(api, make())
    assert sink.seen == [(None, "a"), (None, "b"), (None, "c")] * 3
    assert len(api.lists) == 6, "three listings of two pages"
    assert [q["resourceVersion"] for q in api.watches] == ["3", "3", "3"]
    assert len(observer.reasons) == 2 and all(r.startswith("Expired") for r in observer.reasons)


async def test_a_relist_replaces_what_the_sink_held(informer: Any) -> None:
    """An object deleted while the watch was broken is absent from the relist: the sink is told it vanished."""
    api, sink, _, make = informer
    api.lists_of = [[job("a", 1), job("c", 3), job("e", 11)]]  # b deleted and e created during the gap
    api.scripts = [["gone"]]
    await _run_until_watching(api, make())
    assert sink.vanished_ids == [("ns", "b")]
    assert set(sink.kept) == {("ns", "a"), ("ns", "c"), ("ns", "e")}


async def test_an_object_the_sink_cannot_read_is_quarantined_and_the_others_go_on(informer: Any) -> None:
    api, sink, _, make = informer
    sink.poison = {"b", "p"}
    api.scripts = [
        [
            {"type": "ADDED", "object": job("p", 4)},
            {"type": "ADDED", "object": job("d", 5)},
            {"type": "MODIFIED", "object": ["not", "an", "object"]},
            {"type": "ADDED", "object": job("f", 6)},
        ]
    ]
    await _run_until_watching(api, make())
    assert sink.seen == [(None, "a"), (None, "c"), ("ADDED", "d"), ("ADDED", "f")]
    assert sink.quarantined == [(None, "b", "OverflowError"), ("ADDED", "p", "OverflowError")]


async def test_a_line_that_cannot_be_decoded_or_is_too_long_lists_again(
    informer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, sink, observer, make = informer
    monkeypatch.setattr(watches, "MAX_LINE_BYTES", 4096)
    api.scripts = [[b'{"type": "ADDED", "object": {'], [{"type": "ADDED", "object": job("big", 4, pad="<" * 5000)}]]
    await _run_until_watching(api, make())
    assert observer.reasons == ["Undecodable", "LineTooLong"]
    assert len(api.lists) == 6
    assert ("ADDED", "big") not in sink.seen


async def test_a_document_nested_beyond_orjsons_limit_is_decoded_off_the_loop(informer: Any) -> None:
    api, sink, _, make = informer
    deep: Any = "leaf"
    for _ in range(1500):
        deep = {"x": deep}
    page = {"metadata": {"resourceVersion": "3"}, "items": [job("deep", 2, spec=deep), job("z", 3)]}
    api.raw_page = orjson.dumps({"metadata": page["metadata"], "items": []}).replace(
        b'"items":[]', b'"items":[' + b",".join(_dumps_deep(item) for item in page["items"]) + b"]"
    )
    await _run_until_watching(api, make())
    assert (None, "deep") in sink.seen and (None, "z") in sink.seen


def _dumps_deep(value: Any) -> bytes:
    import json  # noqa: PLC0415 - orjson will not write it either

    import sundial.kube.codec as codec  # noqa: PLC0415

    del codec
    return json.dumps(value).encode() if _depth(value) < 900 else _deep_text(value).encode()


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, dict) and len(value) == 1 and "x" in value:
        value, depth = value["x"], depth + 1
    return depth if depth else (max((_depth(v) for v in value.values()), default=0) if isinstance(value, dict) else 0)


def _deep_text(item: dict[str, Any]) -> str:
    levels = _depth(item["spec"])
    head = orjson.dumps({k: v for k, v in item.items() if k != "spec"}).decode()[:-1]
    return head + ',"spec":' + '{"x":' * levels + '"leaf"' + "}" * levels + "}"


async def test_a_504_on_a_continue_page_lists_again_from_the_watch_cache(informer: Any) -> None:
    api, sink, observer, make = informer
    api.fail_continue = 1
    await _run_until_watching(api, make())
    assert [(q.get("continue"), q.get("resourceVersion")) for q in api.lists] == [
        (None, None), ("2", None), (None, "0"), ("2", None),
    ]  # fmt: skip
    assert observer.failures == ["Timeout"]
    assert sink.seen[-3:] == [(None, "a"), (None, "b"), (None, "c")]


async def test_an_unexpected_error_is_counted_and_followed_by_a_relist(informer: Any) -> None:
    api, sink, observer, make = informer
    api.scripts = [["gone"]]
    sink.held_raises = 2  # the relist fails twice inside the informer before it works
    await _run_until_watching(api, make())
    assert observer.failures == ["RuntimeError", "RuntimeError"]
    assert len(api.watches) == 2


async def test_pages_ask_for_what_fits_in_the_byte_target(informer: Any) -> None:
    api, _, _, make = informer
    api.items = [job(f"j{i}", i, pad="x" * 1000) for i in range(10)]
    await _run_until_watching(api, make(paging=Paging(most=100, first=1, target_bytes=3500)))
    assert [q["limit"] for q in api.lists][:3] == ["1", "3", "3"]


async def test_synced_once_every_scope_was_listed(informer: Any) -> None:
    api, sink, _, make = informer
    calls: list[int] = []
    watcher = make(on_synced=lambda: calls.append(len(sink.seen)))
    assert not watcher.synced.is_set()
    await _run_until_watching(api, watcher)
    assert watcher.synced.is_set()
    assert calls == [3], "called once, after the listed objects were handed on"


def test_the_scheduled_jobs_collection_is_unfiltered() -> None:
    assert SCHEDULED_JOBS.path("ns") == "/apis/sundial.dev/v1alpha1/namespaces/ns/scheduledjobs"
    assert SCHEDULED_JOBS.path(None) == "/apis/sundial.dev/v1alpha1/scheduledjobs"
    assert SCHEDULED_JOBS.query(watch="true") == {"watch": "true"}


def test_the_line_limit_follows_the_api_servers_request_limit_with_escaping() -> None:
    assert watches.MAX_LINE_BYTES == 6 * 3 * 1024 * 1024 + 64 * 1024


def test_the_backoff_is_exponential_capped_and_jittered() -> None:
    backoff = Backoff(initial=0.5, factor=2, cap=4, jitter=0.5, rand=lambda: 1.0)
    assert [backoff.next() for _ in range(5)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    backoff.reset()
    assert Backoff(rand=lambda: 0.0).next() == 0.5
