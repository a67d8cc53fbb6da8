"""Lease renewals on a thread of their own, so that a busy operator never renews late.

Everything else in the operator shares one event loop: watch events, planning, claims, Job creates. Under a
herd (or on a starved 2-core machine) a renewal task waited its turn behind hundreds of ready callbacks, came
after the renew deadline, and the replica stopped acting on its shards for a moment (safe, but late runs and
runs counted missed). :class:`LeaseThread` runs :class:`sundial.runtime.coordination.leadership.Leadership` on its own
thread with its own event loop and its own API client; the thread gets the interpreter within the GIL's
switch interval (5 ms) whenever its socket is ready, whatever the main loop is doing.

What crosses threads, and why it is safe:

* ``Leadership.acting()`` / ``check()`` / ``fencing_token()`` are read by the main loop: they read each
  elector's :class:`~sundial.runtime.coordination.decisions.Tenure`, an immutable dataclass replaced by one
  assignment.
* ``on_change(shard, held)`` is delivered to the main loop with ``call_soon_threadsafe``.
* A handoff's drain ("wait until no pass of this shard is in flight") runs on the main loop, where the
  in-flight counts live (:func:`on_loop`).
* Metrics are prometheus-client objects (thread-safe); logging is thread-safe.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sundial.kube import leases

logger = logging.getLogger(__name__)
T = TypeVar("T")


class DeferredLeaseApi:
    """A :class:`sundial.kube.leases.LeaseListApi` built on first use, i.e. on the loop that uses it.

    The API client's HTTP session belongs to the event loop it is created on; the lease thread's loop
    exists only once the thread runs.
    """

    def __init__(self, factory: Callable[[], leases.KubeLeaseApi]) -> None:
        self._factory = factory
        self._api: leases.KubeLeaseApi | None = None

    def _get(self) -> leases.KubeLeaseApi:
        if self._api is None:
            self._api = self._factory()
        return self._api

    async def get(self, *, namespace: str, name: str) -> leases.LeaseRecord | None:
        return await self._get().get(namespace=namespace, name=name)

    async def create(self, *, namespace: str, name: str, record: leases.LeaseRecord) -> Any:
        return await self._get().create(namespace=namespace, name=name, record=record)

    async def replace(self, *, namespace: str, name: str, record: leases.LeaseRecord) -> Any:
        return await self._get().replace(namespace=namespace, name=name, record=record)

    async def list(self, *, namespace: str) -> dict[str, leases.LeaseRecord]:
        return await self._get().list(namespace=namespace)

    async def delete(self, *, namespace: str, name: str, resource_version: str) -> None:
        await self._get().delete(namespace=namespace, name=name, resource_version=resource_version)

    async def probe_fencing(self, *, namespace: str, name: str, shard: int, transitions: int) -> bool:
        return await self._get().probe_fencing(namespace=namespace, name=name, shard=shard, transitions=transitions)

    async def warn(self, *, namespace: str, name: str, reason: str, message: str) -> None:
        await self._get().warn(namespace=namespace, name=name, reason=reason, message=message)

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()


def on_loop(loop: asyncio.AbstractEventLoop, function: Callable[[int], Awaitable[T]]) -> Callable[[int], Awaitable[T]]:
    """``function(shard)`` run on ``loop`` (the main one), awaitable from another loop; cancelling the
    awaiting side cancels it there too."""

    async def bridged(shard: int) -> T:
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(_call(function, shard), loop)
        try:
            return await asyncio.wrap_future(future)
        finally:
            future.cancel()

    return bridged


async def _call(function: Callable[[int], Awaitable[T]], shard: int) -> T:
    return await function(shard)


def to_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[int, bool], None]) -> Callable[[int, bool], None]:
    """``callback(shard, held)`` delivered on ``loop`` (the main one), in call order."""

    def deliver(shard: int, held: bool) -> None:
        loop.call_soon_threadsafe(callback, shard, held)

    return deliver


class LeaseThread:
    """Runs ``leadership.run`` on a daemon thread with its own event loop; :meth:`stop` releases the Leases."""

    def __init__(
        self,
        leadership: Any,
        *,
        loop_factory: Callable[[], asyncio.AbstractEventLoop] = asyncio.new_event_loop,
        close: Callable[[], Awaitable[None]] | None = None,
        name: str = "sundial-leases",
    ) -> None:
        self._leadership = leadership
        self._loop_factory = loop_factory
        self._close = close
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._done: asyncio.Future[None] | None = None
        self._caller: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start the thread; call from the main loop (its end is reported there, see :meth:`wait`)."""
        self._caller = asyncio.get_running_loop()
        self._done = self._caller.create_future()
        self._thread.start()
        self._started.wait()

    async def wait(self) -> None:
        """Return when the thread's work ends; raise what ended it, if anything did."""
        assert self._done is not None, "start() first"
        await asyncio.shield(self._done)

    def stop(self) -> None:
        """Ask the thread to stop: it stops acting, releases its Leases and ends (see :meth:`join`)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(stopping.set)

    async def join(self, timeout: float) -> bool:
        """Wait (without blocking the calling loop) up to ``timeout`` seconds; True if the thread ended."""
        await asyncio.to_thread(self._thread.join, timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        loop = self._loop_factory()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._stopping = asyncio.Event()
        self._started.set()
        error: BaseException | None = None
        try:
            loop.run_until_complete(self._run(self._stopping))
        except BaseException as exc:  # reported to the main loop, which decides
            error = exc
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            self._report(error)

    async def _run(self, stopping: asyncio.Event) -> None:
        try:
            await self._leadership.run(stopping)
        finally:
            try:
                await self._leadership.release()
            finally:
                if self._close is not None:
                    await self._close()

    def _report(self, error: BaseException | None) -> None:
        caller, done = self._caller, self._done
        if caller is None or done is None or caller.is_closed():
            if error is not None:
                logger.error("lease thread failed", exc_info=error)
            return

        def settle() -> None:
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        with contextlib.suppress(RuntimeError):  # the main loop is closed already
            caller.call_soon_threadsafe(settle)
