"""Paged LISTs (the initial listing): ``limit`` per request, ``continue`` tokens followed, one page at a time."""

from __future__ import annotations

import json
from typing import Any

from sundial.kube import objects, ratelimits, requests
from sundial.model import names


class _Response:
    def __init__(self, body: dict[str, Any]) -> None:
        self.status, self.reason, self.headers = 200, "OK", {}
        self._body = json.dumps(body).encode()

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        return None


class _Pager:
    """Hands out UIDs ``limit`` at a time with a continue token, as the API server does."""

    def __init__(self, uids: list[str]) -> None:
        self.uids = uids
        self.requests: list[dict[str, Any]] = []

    async def _page(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Response:
        self.requests.append({"args": args, **kwargs})
        start = int(kwargs.get("_continue") or 0)
        stop = start + kwargs["limit"]
        items = [{"metadata": {"uid": uid}} for uid in self.uids[start:stop]]
        more = str(stop) if stop < len(self.uids) else ""
        return _Response({"kind": "List", "metadata": {"continue": more}, "items": items})

    def list_cluster_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        return self._page(args, kwargs)

    def list_namespaced_custom_object(self, *args: Any, **kwargs: Any) -> Any:
        return self._page(args, kwargs)

    def list_job_for_all_namespaces(self, *args: Any, **kwargs: Any) -> Any:
        return self._page(args, kwargs)

    def list_namespaced_job(self, *args: Any, **kwargs: Any) -> Any:
        return self._page(args, kwargs)


def _api(pager: _Pager) -> objects.ObjectsApi:
    api = objects.ObjectsApi(
        api_client=object(), requester=requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    )
    api._custom = pager
    api._batch = pager
    return api


async def test_scheduled_jobs_are_listed_page_by_page() -> None:
    pager = _Pager([f"u{i}" for i in range(7)])
    pages = [page async for page in _api(pager).scheduled_job_pages(namespace=None, limit=3)]
    assert [[item["metadata"]["uid"] for item in page] for page in pages] == [
        ["u0", "u1", "u2"],
        ["u3", "u4", "u5"],
        ["u6"],
    ]
    assert [r.get("_continue") for r in pager.requests] == [None, "3", "6"]
    assert all(r["limit"] == 3 and r["_preload_content"] is False for r in pager.requests)
    assert pager.requests[0]["args"] == ("sundial.dev", "v1alpha1", "scheduledjobs")


async def test_a_namespace_lists_only_there_and_an_empty_list_is_one_empty_page() -> None:
    pager = _Pager([])
    pages = [page async for page in _api(pager).scheduled_job_pages(namespace="team-a", limit=500)]
    assert pages == [[]]
    assert pager.requests[0]["args"] == ("sundial.dev", "v1alpha1", "team-a", "scheduledjobs")


async def test_jobs_are_listed_page_by_page_with_the_label_selector() -> None:
    pager = _Pager(["j0", "j1", "j2"])
    api = _api(pager)
    pages = [page async for page in api.job_pages(namespace="ns", label_selector=names.SCHEDULED_JOB_LABEL, limit=2)]
    assert [len(page) for page in pages] == [2, 1]
    assert {r["label_selector"] for r in pager.requests} == {names.SCHEDULED_JOB_LABEL}
    assert pager.requests[0]["args"] == ("ns",)


async def test_any_version_asks_the_watch_cache_for_the_first_page_only() -> None:
    """``resourceVersion=0`` on the first page, and only when asked (after a listing failed on a lagging
    watch cache): the API server refuses a resourceVersion beside a continue token, and servers before 1.34
    ignore ``limit`` for a cache read."""
    pager = _Pager([f"u{i}" for i in range(5)])
    async for _ in _api(pager).scheduled_job_pages(namespace=None, limit=2):
        pass
    async for _ in _api(pager).job_pages(
        namespace="ns", label_selector=names.SCHEDULED_JOB_LABEL, limit=4, any_version=True
    ):
        pass
    versions = [(r.get("resource_version"), r.get("_continue")) for r in pager.requests]
    assert versions == [(None, None), (None, "2"), (None, "4"), ("0", None), (None, "4")]
