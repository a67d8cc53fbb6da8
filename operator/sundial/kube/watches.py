"""LIST and WATCH of one collection of objects as plain dicts (orjson): what an informer asks of the API.

:meth:`Watches.pages` lists a collection page by page and gives each page with the list's resourceVersion;
:meth:`Watches.events` watches it from a resourceVersion and gives each event as the API server sends it
(``{"type": ..., "object": ...}``), bookmarks included (``allowWatchBookmarks``). A watch that ends with an
``ERROR`` event raises the error its Status names (410 ``Expired``: :class:`sundial.kube.errors.GoneError`, the
caller lists again); a watch that ends on its own (``timeoutSeconds``) just ends. Requests are rate-limited
and timed by the :class:`~sundial.kube.requests.Requester` (a watch's time is the time to its headers) and
sent by :class:`~sundial.kube.wire.Wire`.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from sundial.kube import codec, errors, requests, wire
from sundial.kube.objects import raise_for, raw_json


@dataclass(frozen=True)
class Collection:
    """One kind of object: its API group path (``apis/batch/v1``), its plural, and the label selector sent to
    the API server with every LIST and WATCH ("" for none)."""

    group_version: tuple[str, ...]
    plural: str
    label_selector: str = ""

    def path(self, namespace: str | None) -> str:
        if namespace is None:
            return wire.path(*self.group_version, self.plural)
        return wire.path(*self.group_version, "namespaces", namespace, self.plural)

    def query(self, **values: str) -> dict[str, str]:
        selector = {"labelSelector": self.label_selector} if self.label_selector else {}
        return selector | values


async def _json(send: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    return await raw_json(send())


class Watches:
    """LIST pages and WATCH streams of a :class:`Collection`."""

    def __init__(self, *, api_client: Any, requester: requests.Requester) -> None:
        self._wire = wire.Wire(api_client)
        self._req = requester

    async def pages(
        self, collection: Collection, *, namespace: str | None, limit: int
    ) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """Each page's items, with the resourceVersion of the list (a consistent read: a watch from it misses
        nothing that happened after the list)."""
        token: str | None = None
        version = ""
        while True:
            query = collection.query(limit=str(limit)) | ({"continue": token} if token else {})
            send = functools.partial(self._wire.send, "GET", collection.path(namespace), timeout=60.0, query=query)
            page = await self._req.call(verb="list", resource=collection.plural, request=functools.partial(_json, send))
            meta = page.get("metadata") or {}
            version = version or str(meta.get("resourceVersion") or "")
            token = meta.get("continue") or None
            yield list(page.get("items") or ()), version
            if token is None:
                return

    async def events(
        self, collection: Collection, *, namespace: str | None, resource_version: str, seconds: int, idle: float
    ) -> AsyncIterator[dict[str, Any]]:
        """The events after ``resource_version``, for at most ``seconds`` (the API server ends the watch then);
        a stream silent for ``idle`` seconds (not even a bookmark) fails as transient."""
        query = collection.query(
            watch="true", resourceVersion=resource_version, allowWatchBookmarks="true", timeoutSeconds=str(seconds)
        )
        timeout = aiohttp.ClientTimeout(total=None, connect=requests.REQUEST_TIMEOUT, sock_read=idle)

        async def opened() -> aiohttp.ClientResponse:
            response = await self._wire.send("GET", collection.path(namespace), timeout=timeout, query=query)
            if not 200 <= response.status <= 299:
                try:
                    raise_for(response, await response.read())
                finally:
                    response.release()
            return response

        response = await self._req.call(verb="watch", resource=collection.plural, request=opened)
        try:
            async for line in response.content:
                if not line.strip():
                    continue
                try:
                    event: dict[str, Any] = codec.loads(line)
                except ValueError:
                    raise errors.TransientError(code=0, reason="BadWatchLine", message="undecodable") from None
                if event.get("type") == "ERROR":
                    raise errors.from_status(event.get("object") or {})
                yield event
        except (aiohttp.ClientError, TimeoutError) as error:
            classified = errors.classify(error)
            raise classified or error from None
        finally:
            response.release()
