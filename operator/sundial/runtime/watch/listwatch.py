"""The informer: LIST, then WATCH from the list's resourceVersion, every object handed to a :class:`Sink` inside
a guard (client-go's Reflector is the model). One informer per kind - ScheduledJobs, their Jobs,
ScheduleCalendars (:mod:`sundial.runtime.watch.kinds`) - each with one loop per scope (each ``--namespace``, or
the whole cluster). The contract (docs/design.md §7, "The intake"):

* **LIST** is paged (:mod:`sundial.runtime.watch.paging`: pages bounded in bytes) and each page is handed to the
  sink before the next is asked for, so a listing's peak memory is a small multiple of one page. A label
  selector, if the collection has one, is sent with every request (the Jobs: ``sundial.dev/scheduledjob``).
* **A relist replaces.** What the sink held in the scope before a listing and the listing did not return was
  deleted while nobody watched: the sink is told (:meth:`Sink.vanished`) exactly as of a ``DELETED`` event (a
  Job's run is then no longer active, a ScheduledJob's reserved run is not created).
* **WATCH** starts at the list's resourceVersion, asks for bookmarks and lasts :data:`WATCH_SECONDS`; the next one
  starts from the last resourceVersion seen (an event's or a bookmark's). A stream that breaks (connection, 5xx,
  no line for :data:`IDLE_SECONDS`) resumes from there, at once if it had delivered events, else after a pause.
  410 ``Expired``, a line that cannot be decoded or is over the size any API server sends, lists again.
* ``synced`` is set (and ``on_synced`` called) once every scope was listed the first time: readiness.
* **Quarantine, never a crash.** Each object is handed on inside a guard: an exception raised while the sink
  reads it puts the object in quarantine (:meth:`Sink.quarantine`, :mod:`sundial.runtime.watch.quarantine`) and
  the informer goes on with the next. Anything unexpected in the informer itself is counted, logged, and
  followed by a relist; every failure pauses by the one retry policy (:class:`~.backoff.Backoff`: jittered
  exponential). The task ends only when cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from sundial.kube import errors
from sundial.kube.watches import Collection, LineTooLongError, Watches, decode
from sundial.runtime.watch.backoff import Backoff
from sundial.runtime.watch.paging import Paging
from sundial.runtime.watch.quarantine import identity_of, metadata_of

logger = logging.getLogger(__name__)

#: How long one watch request lasts (the API server ends it; the next one starts at once).
WATCH_SECONDS = 300
#: A watch with no line at all for this long (the API server sends a bookmark about every minute) is broken.
IDLE_SECONDS = 90.0
#: Listing errors after which the first page is read from the API server's watch cache (``resourceVersion=0``):
#: a ``continue`` page that waited for a lagging cache (504 ``ResourceVersionTooLarge``) or an expired token.
CACHE_FALLBACK_ERRORS = (errors.GatewayTimeoutError, errors.GoneError)


class Sink(Protocol):
    """One kind of object in the store (:mod:`sundial.runtime.watch.intake`)."""

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        """Keep (event None: listed; ``ADDED``, ``MODIFIED``) or forget (``DELETED``) the object. May raise."""

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        """The object could not be read: keep its stub instead (or drop it, for ``DELETED``)."""

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        """(namespace, name) of every object of the kind held from NAMESPACE (None: all), quarantined or not."""

    def vanished(self, identity: tuple[str, str]) -> None:
        """The object (namespace, name) is gone, seen by a relist: forget it as if deleted."""


class Observer(Protocol):
    def relisted(self, plural: str, reason: str) -> None: ...

    def failed(self, plural: str, reason: str) -> None: ...


class _Quiet:
    def relisted(self, plural: str, reason: str) -> None:
        pass

    def failed(self, plural: str, reason: str) -> None:
        pass


class RelistError(Exception):
    """The watch cannot go on from where it is: list again (REASON)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass
class _State:
    """Where one scope's loop is: the version to watch from ("" : list first) and its retry counts."""

    backoff: Backoff
    relists: Backoff
    version: str = ""
    any_version: bool = False


def _version_of(body: Any, default: str) -> str:
    value = metadata_of(body).get("resourceVersion")
    return value if isinstance(value, str) and value else default


class ListWatch:
    """Lists and watches one :class:`Collection` in each scope, handing every object to ``sink``."""

    def __init__(
        self,
        *,
        watches: Watches,
        sink: Sink,
        collection: Collection,
        namespaces: Sequence[str] = (),
        paging: Paging | None = None,
        backoff: Callable[[], Backoff] = Backoff,
        on_synced: Callable[[], None] = lambda: None,
        observer: Observer | None = None,
    ) -> None:
        self._watches = watches
        self._sink = sink
        self._scopes: list[str | None] = [*namespaces] or [None]
        self._collection = collection
        self._paging = paging or Paging()
        self._backoff = backoff
        self._on_synced = on_synced
        self._observer = observer or _Quiet()
        self._unlisted = set(self._scopes)
        self.synced = asyncio.Event()
        """Set once every scope was listed (its objects handed on) the first time."""

    @property
    def plural(self) -> str:
        return self._collection.plural

    @property
    def sink(self) -> Sink:
        """What this informer feeds."""
        return self._sink

    async def run(self) -> None:
        """Run until cancelled."""
        await asyncio.gather(*(self._follow(scope) for scope in self._scopes))

    async def _follow(self, namespace: str | None) -> None:
        state = _State(backoff=self._backoff(), relists=self._backoff())
        while True:
            try:
                pause = await self._step(namespace, state)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("%s informer: unexpected error while handling a failure", self.plural)
                state.version, pause = "", self._backoff().cap
            if pause:
                await asyncio.sleep(pause)

    async def _step(self, namespace: str | None, state: _State) -> float:
        """List if needed, then follow one watch request; the pause before the next step."""
        plural = self._collection.plural
        try:
            if not state.version:
                state.version = await self._list(namespace, any_version=state.any_version)
                state.any_version = False
                state.backoff.reset()
            state.version, progressed = await self._watch(namespace, state.version)
            if progressed:
                state.backoff.reset()
                state.relists.reset()
            return 0.0
        except asyncio.CancelledError:
            raise
        except RelistError as relist:
            state.version = ""
            pause = state.relists.next() if state.relists.failures else 0.0  # the first at once, then paused
            state.relists.failures = max(state.relists.failures, 1)
            logger.info("%s: listing again (%s)", plural, relist.reason)
            self._observer.relisted(plural, relist.reason)
            return pause
        except errors.KubeError as error:
            listing = not state.version
            state.any_version = state.any_version or (listing and isinstance(error, CACHE_FALLBACK_ERRORS))
            pause = state.backoff.next()
            logger.warning("%s %s failed (again in %.1fs): %s", plural, "list" if listing else "watch", pause, error)
            self._observer.failed(plural, error.reason or type(error).__name__)
            return pause
        except Exception as error:
            state.version = ""
            pause = state.backoff.next()
            logger.exception("%s informer: unexpected %s (listing again in %.1fs)", plural, type(error).__name__,
                             pause)  # fmt: skip
            self._observer.failed(plural, type(error).__name__)
            return pause

    def _hand(self, event: str | None, body: Any) -> None:
        """Hand one object to the sink; what it cannot read goes into quarantine. Never raises."""
        try:
            if not isinstance(body, Mapping):
                raise TypeError(f"a {type(body).__name__} where an object belongs")
            self._sink.apply(event, body)
        except Exception as error:
            try:
                self._sink.quarantine(event, body, error)
            except Exception:
                logger.exception("%s: could not quarantine an unreadable object", self._collection.plural)

    async def _list(self, namespace: str | None, *, any_version: bool = False) -> str:
        """List the scope page by page into the sink, then tell it what vanished; the list's version."""
        held = self._sink.held(namespace)
        listed: set[tuple[str, str]] | None = set() if held else None
        token: str | None = None
        version = ""
        limit = self._paging.first
        while True:
            page = await self._watches.page(
                self._collection, namespace=namespace, limit=limit, token=token, any_version=any_version
            )
            version = version or page.version
            token, items, size = page.token, page.items, page.size
            del page
            for body in items:
                if listed is not None:
                    listed.add(identity_of(body))
                self._hand(None, body)
            limit = self._paging.next(objects=len(items), size=size)
            del items  # the page is released before the next is asked for
            if token is None:
                break
        if listed is not None:
            for identity in held - listed:
                try:
                    self._sink.vanished(identity)
                except Exception:
                    logger.exception("%s: could not forget %s", self._collection.plural, identity)
        self._unlisted.discard(namespace)
        if not self._unlisted and not self.synced.is_set():
            self.synced.set()
            self._on_synced()
        return version

    async def _watch(self, namespace: str | None, version: str) -> tuple[str, bool]:
        """Follow one watch request from VERSION; the version to go on from, and whether any event came. A
        stream that breaks after some events is resumed at once from the last (the API server is answering); one
        that fails before any raises, and :meth:`_follow` pauses before the next."""
        progressed = False
        stream = self._watches.lines(
            self._collection, namespace=namespace, resource_version=version, seconds=WATCH_SECONDS, idle=IDLE_SECONDS
        )
        try:
            async with contextlib.aclosing(stream):  # the response goes back to the pool whatever happens
                async for line in stream:
                    event = await decode(line)
                    kind = event.get("type") if isinstance(event, dict) else None
                    body = event.get("object") if isinstance(event, dict) else None
                    if kind == "ERROR":
                        raise errors.from_status(body if isinstance(body, dict) else {})
                    version = _version_of(body, version)
                    progressed = True
                    if kind != "BOOKMARK":
                        self._hand(kind if isinstance(kind, str) else None, body)
        except errors.GoneError as error:
            raise RelistError(f"{error.reason or 'Expired'}: the version is older than the API server keeps") from None
        except LineTooLongError:
            raise RelistError("LineTooLong") from None
        except errors.TransientError as error:
            if error.reason == "Undecodable":
                raise RelistError("Undecodable") from None
            if not progressed:
                raise
            # Broken after some events: go on from the last one at once (it is not a failing API server).
            logger.info("%s watch broke after events (resuming): %s", self._collection.plural, error)
        return version, progressed
