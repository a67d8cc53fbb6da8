"""CPU-heavy calls off the main event loop, on a small pool with a bound on waiting calls (DESIGN §11.1, §12.2).

Decoding and validating an AdmissionReview (orjson over up to 3 MiB, pydantic, cron expressions, up to a
thousand dates per exclude list) takes milliseconds to tenths of a second. :class:`Offloaded` runs such a call
on one of ``workers`` workers, admits at most ``waiting`` more calls in its queue, and refuses any beyond at once
with :class:`BusyError` - a flood costs its sender an error, never the operator unbounded work.

Workers are threads by default. With ``processes=True`` they are processes (started from a ``forkserver`` that
imported ``preload`` once, on the first call): a thread still shares the interpreter lock with the main loop, and
one C-level call (orjson decoding 800 KiB: ~30-90 ms, the garbage collector walking what it made) holds the lock
for its whole length, while a process shares nothing but the bytes sent and the answer
(``docs/benchmarks/latest.json`` ``admission`` measures both). A worker process that dies (killed, out of memory)
is replaced: its call and those queued with it fail with :class:`BusyError`, the next ones run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: Workers running at once, and calls admitted to wait for one (the webhook's defaults).
DEFAULT_WORKERS = 2
DEFAULT_WAITING = 8


class BusyError(Exception):
    """Every worker is busy and the queue is full (or a worker process died): the call was refused."""


class Offloaded:
    def __init__(
        self,
        *,
        workers: int = DEFAULT_WORKERS,
        waiting: int = DEFAULT_WAITING,
        name: str = "offloop",
        processes: bool = False,
        preload: Sequence[str] = (),
    ) -> None:
        self._workers, self._name, self._processes, self._preload = workers, name, processes, tuple(preload)
        self._limit = workers + waiting
        self._lock = threading.Lock()
        self._admitted = 0
        self._pool = self._new_pool()

    def _new_pool(self) -> concurrent.futures.Executor:
        if not self._processes:
            return concurrent.futures.ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix=self._name)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(self._preload))
        return concurrent.futures.ProcessPoolExecutor(max_workers=self._workers, mp_context=context)

    @property
    def admitted(self) -> int:
        """Calls running or waiting now."""
        with self._lock:
            return self._admitted

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` on a worker; :class:`BusyError` at once when the bound is reached. A call
        whose caller is cancelled still counts until it has finished on its worker. With processes, FUNCTION and
        its arguments must pickle (module-level functions, :func:`functools.partial` of them, plain data)."""
        with self._lock:
            if self._admitted >= self._limit:
                raise BusyError(f"{self._limit} calls are running or waiting already")
            self._admitted += 1
        pool = self._pool
        try:
            future = pool.submit(functools.partial(function, *args, **kwargs))
        except BrokenProcessPool:
            self._release(None)
            self._replace(pool)
            raise BusyError("a worker process ended: its pool was replaced") from None
        except BaseException:
            self._release(None)
            raise
        future.add_done_callback(self._release)
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            self._replace(pool)
            raise BusyError("a worker process ended: its pool was replaced") from None

    def _replace(self, broken: concurrent.futures.Executor) -> None:
        with self._lock:
            if self._pool is not broken:
                return  # replaced already by another caller
            self._pool = self._new_pool()
        logger.warning("%s: a worker process ended; started a new pool", self._name)
        broken.shutdown(wait=False, cancel_futures=True)

    def _release(self, _: object) -> None:
        with self._lock:
            self._admitted -= 1

    def shutdown(self) -> None:
        """Stop the workers once the calls already admitted have ended (new calls are refused)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
