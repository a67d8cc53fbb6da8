"""LIST pages and WATCH lines of one collection of objects: what an informer asks of the API.

:meth:`Watches.page` sends one LIST request (``limit`` objects from a ``continue`` token) and decodes it;
:meth:`Watches.lines` watches the collection from a resourceVersion and gives each line of the stream as the API
server sends it, undecoded (the informer decodes each inside its guard, :mod:`sundial.runtime.watch.listwatch`),
bookmarks included (``allowWatchBookmarks``). Requests are rate-limited and timed by the
:class:`~sundial.kube.requests.Requester` (a watch's time is the time to its headers) and sent by
:class:`~sundial.kube.wire.Wire`.

Sizes. Whatever the API server serves is read, up to what it can serve at all:

* an object is at most :data:`MAX_REQUEST_BYTES` as written (the API server's request limit, 3 MiB by default),
  and JSON may grow it up to :data:`ESCAPE_GROWTH` times when it is served: the API server writes ``<``, ``>``
  and ``&`` as ``\\u003c`` (6 bytes for 1). A watch line is one object with its event envelope, so a line is read
  up to :data:`MAX_LINE_BYTES` (18 MiB + 64 KiB) and only a longer one - which no API server with the default
  limit can send - fails the stream (:class:`LineTooLongError`: the informer lists again).
* a LIST page is read whole; its size is bounded by the number of objects the informer asks for
  (:mod:`sundial.runtime.watch.paging`).
* a document orjson refuses for its depth (more than 1,024 levels: a tenant may nest the unknown fields of a
  ScheduledJob's ``jobTemplate.metadata`` that deep) is decoded again by :func:`sundial.kube.codec.loads_deep`
  off the event loop; what still cannot be decoded fails the request as transient.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.http_exceptions import LineTooLong

from sundial.kube import codec, errors, requests, wire
from sundial.kube.objects import raise_for

#: The largest request body the API server accepts by default (``--max-request-bytes``): no object is larger as
#: written.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
#: How much larger an object may be as served: each ``<``, ``>`` and ``&`` becomes a 6-byte escape.
ESCAPE_GROWTH = 6
#: The longest watch line read: the largest object as served, and 64 KiB for the event's envelope.
MAX_LINE_BYTES = ESCAPE_GROWTH * MAX_REQUEST_BYTES + 64 * 1024
#: Seconds a LIST request may take (a page of the largest objects is tens of MiB).
LIST_TIMEOUT = 60.0


class LineTooLongError(errors.TransientError):
    """A watch line longer than :data:`MAX_LINE_BYTES`: the stream cannot be resumed past it (list again)."""


@dataclass(frozen=True)
class Collection:
    """One kind of object: its API group path (``apis/batch/v1``), its plural, and the label and field selectors
    sent to the API server with every LIST and WATCH ("" for none)."""

    group_version: tuple[str, ...]
    plural: str
    label_selector: str = ""
    field_selector: str = ""

    def path(self, namespace: str | None) -> str:
        if namespace is None:
            return wire.path(*self.group_version, self.plural)
        return wire.path(*self.group_version, "namespaces", namespace, self.plural)

    def query(self, **values: str) -> dict[str, str]:
        selector = {"labelSelector": self.label_selector} if self.label_selector else {}
        fields = {"fieldSelector": self.field_selector} if self.field_selector else {}
        return selector | fields | values


@dataclass(frozen=True)
class Page:
    """One LIST answer: its objects (plain dicts), the list's resourceVersion, the ``continue`` token of the
    next page (None: the last), and its size in bytes as received."""

    items: list[Any]
    version: str
    token: str | None
    size: int


async def decode(data: bytes) -> Any:
    """DATA decoded: orjson, else (a document nested beyond orjson's limit) the deep decoder off the loop. A
    document neither decodes raises :class:`errors.TransientError` (reason ``Undecodable``)."""
    try:
        return await codec.decode(data)
    except ValueError as error:
        raise errors.TransientError(code=0, reason="Undecodable", message=str(error)[:200]) from None


class Watches:
    """LIST pages and WATCH streams of a :class:`Collection`."""

    def __init__(self, *, api_client: Any, requester: requests.Requester) -> None:
        self._wire = wire.Wire(api_client)
        self._req = requester

    async def page(
        self,
        collection: Collection,
        *,
        namespace: str | None,
        limit: int,
        token: str | None = None,
        any_version: bool = False,
    ) -> Page:
        """One page of at most LIMIT objects, from TOKEN (None: the first page). A list's first page is a
        consistent read (a watch from its version misses nothing after it); with ANY_VERSION it is served from the
        API server's watch cache as it is (``resourceVersion=0``: no wait for a lagging cache, which makes
        ``continue`` pages fail with 504)."""
        query = collection.query(limit=str(limit))
        if token:
            query["continue"] = token
        elif any_version:
            query["resourceVersion"] = "0"

        async def fetch() -> bytes:
            response = await self._wire.send("GET", collection.path(namespace), timeout=LIST_TIMEOUT, query=query)
            try:
                data = await response.read()
            finally:
                response.release()
            raise_for(response, data)
            return data

        data = await self._req.call(verb="list", resource=collection.plural, request=fetch)
        body = await decode(data)
        meta = (body.get("metadata") if isinstance(body, dict) else None) or {}
        items = body.get("items") if isinstance(body, dict) else None
        return Page(
            items=items if isinstance(items, list) else [],
            version=str(meta.get("resourceVersion") or ""),
            token=str(meta["continue"]) if meta.get("continue") else None,
            size=len(data),
        )

    async def lines(
        self, collection: Collection, *, namespace: str | None, resource_version: str, seconds: int, idle: float
    ) -> AsyncGenerator[bytes, None]:
        """The lines of a watch from ``resource_version`` (each one JSON event), for at most ``seconds`` (the API
        server ends the watch then); a stream silent for ``idle`` seconds (not even a bookmark) fails as
        transient, a line over :data:`MAX_LINE_BYTES` with :class:`LineTooLongError`."""
        query = collection.query(
            watch="true", resourceVersion=resource_version, allowWatchBookmarks="true", timeoutSeconds=str(seconds)
        )
        timeout = aiohttp.ClientTimeout(total=None, connect=requests.REQUEST_TIMEOUT, sock_read=idle)
        opened = functools.partial(self._open, collection.path(namespace), query, timeout)
        response = await self._req.call(verb="watch", resource=collection.plural, request=opened)
        try:
            while True:
                try:
                    line = await response.content.readline(max_line_length=MAX_LINE_BYTES)
                except LineTooLong:
                    raise LineTooLongError(
                        code=0, reason="LineTooLong", message=f"a watch line over {MAX_LINE_BYTES} bytes"
                    ) from None
                if not line:
                    return
                if line.strip():
                    yield line
        except (aiohttp.ClientError, TimeoutError) as error:
            classified = errors.classify(error)
            raise classified or error from None
        finally:
            response.release()

    async def _open(self, api_path: str, query: dict[str, str], timeout: aiohttp.ClientTimeout) -> Any:
        response = await self._wire.send("GET", api_path, timeout=timeout, query=query)
        if not 200 <= response.status <= 299:
            try:
                raise_for(response, await response.read())
            finally:
                response.release()
        return response
