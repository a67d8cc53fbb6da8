"""ONE loop that sleeps until the earliest due time (or a change), then reconciles due keys.

Due keys go through a :class:`FairQueue` (round-robin across namespaces first, then ``spec.priority``
with ageing within a namespace) and run with bounded concurrency (a semaphore). The priority of a key is asked of
``priority_of`` (the store keeps it beside the deflated object, so nothing is decoded for it). A key is
never reconciled twice at once: a change that arrives while it is in flight marks it dirty, and it is
queued again as soon as the running pass ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sundial.kube import errors
from sundial.runtime.dispatch.dueindex import DueIndex
from sundial.runtime.dispatch.fairness import FairQueue
from sundial.runtime.fencing import NotActingError
from sundial.runtime.watch.store import Key

logger = logging.getLogger(__name__)

#: Longest single sleep, so a wall-clock jump is noticed within this long.
MAX_SLEEP = 30.0
#: Backoff after a failed pass (transient API trouble that outlived in-pass retries, a bug).
ERROR_BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)

ReconcileFn = Callable[[Key], Awaitable[datetime | None]]


class Dispatcher:
    def __init__(
        self,
        *,
        reconcile: ReconcileFn,
        max_concurrency: int,
        clock: Callable[[], datetime],
        on_index_size: Callable[[int], None] = lambda size: None,
        priority_of: Callable[[Key], int] = lambda key: 0,
    ) -> None:
        self._reconcile = reconcile
        self._clock = clock
        self._on_index_size = on_index_size
        self._priority_of = priority_of
        self.index: DueIndex[Key] = DueIndex()
        self.queue = FairQueue(clock=clock)
        self._slots = asyncio.Semaphore(max_concurrency)
        self._wakeup = asyncio.Event()
        self._inflight: set[Key] = set()
        self._dirty: set[Key] = set()
        self._failures: dict[Key, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # Signals from the informers and the leases ---------------------------------------------------

    def touch(self, key: Key) -> None:
        """Something about ``key`` changed: reconcile it as soon as possible."""
        if key in self._inflight:
            self._dirty.add(key)
        else:
            self.index.advance(key, self._clock())
        self._wakeup.set()

    def forget(self, key: Key) -> None:
        self.index.discard(key)
        self._failures.pop(key, None)

    # The loop --------------------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                self._wakeup.clear()
                for due in self.index.pop_due(self._clock()):
                    self.queue.push(due, priority=self._priority_of(due))
                while len(self.queue) and not self._slots.locked():
                    key = self.queue.pop()
                    if key is None:
                        break
                    if key in self._inflight:
                        self._dirty.add(key)
                        continue
                    await self._slots.acquire()
                    self._inflight.add(key)
                    task = asyncio.create_task(self._one(key), name=f"reconcile {key[0]}/{key[1]}")
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                self._on_index_size(len(self.index))
                await self._sleep(stopping)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _sleep(self, stopping: asyncio.Event) -> None:
        if len(self.queue):  # waiting for a free slot: a finishing pass sets the wakeup
            timeout = MAX_SLEEP
        else:
            due = self.index.next_due()
            timeout = MAX_SLEEP if due is None else (due - self._clock()).total_seconds()
            timeout = min(max(timeout, 0.0), MAX_SLEEP)
        if timeout <= 0:
            await asyncio.sleep(0)
            return
        waiter = asyncio.ensure_future(self._wakeup.wait())
        stopper = asyncio.ensure_future(stopping.wait())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        stopper.cancel()

    async def _one(self, key: Key) -> None:
        wake: datetime | None = None
        try:
            wake = await self._reconcile(key)
            self._failures.pop(key, None)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            delay = ERROR_BACKOFF[min(failures, len(ERROR_BACKOFF) - 1)]
            logger.warning(
                "reconcile %s/%s failed (retry in %.0fs): %s",
                key[0],
                key[1],
                delay,
                error,
                exc_info=not _is_expected(error),
            )
            wake = self._clock() + timedelta(seconds=delay)
        finally:
            self._inflight.discard(key)
            self._slots.release()
            self._wakeup.set()
        if key in self._dirty:
            self._dirty.discard(key)
            self.index.advance(key, self._clock())
        elif wake is not None:
            self.index.set(key, wake)
        else:
            self.index.discard(key)


def _is_expected(error: Exception) -> bool:
    """API trouble and lost leases are expected in operation: logged without a traceback."""
    return isinstance(error, errors.KubeError | NotActingError)
