"""CPU-heavy calls off the main event loop, on a small thread pool with a bound on waiting calls (DESIGN §11.1).

The admission webhook is served by kopf on the operator's main loop, next to the watches and the planning
passes. Validating a spec (pydantic, cron expressions, up to a thousand dates per exclude list) takes
milliseconds to tenths of a second; run on the loop it would stall every other tenant's work, and a peer
posting AdmissionReviews in a loop could stall it for good. :class:`Offloaded` runs such a call on one of
``workers`` threads (the main loop gets the interpreter back within the GIL's switch interval), admits at
most ``waiting`` more calls in its queue, and refuses any beyond at once with :class:`BusyError` - a flood
costs its sender an error, never the operator unbounded work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Threads validating at once, and calls admitted to wait for one (the webhook's defaults).
DEFAULT_WORKERS = 2
DEFAULT_WAITING = 8


class BusyError(Exception):
    """Every worker is busy and the queue is full: the call was refused, nothing was run."""


class Offloaded:
    def __init__(
        self, *, workers: int = DEFAULT_WORKERS, waiting: int = DEFAULT_WAITING, name: str = "offloop"
    ) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._limit = workers + waiting
        self._lock = threading.Lock()
        self._admitted = 0

    @property
    def admitted(self) -> int:
        """Calls running or waiting now."""
        with self._lock:
            return self._admitted

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` on a worker thread; :class:`BusyError` at once when the bound is reached.
        A call whose caller is cancelled still counts until it has finished on its thread."""
        with self._lock:
            if self._admitted >= self._limit:
                raise BusyError(f"{self._limit} calls are running or waiting already")
            self._admitted += 1
        try:
            future = self._pool.submit(functools.partial(function, *args, **kwargs))
        except BaseException:
            self._release(None)
            raise
        future.add_done_callback(self._release)
        return await asyncio.wrap_future(future)

    def _release(self, _: object) -> None:
        with self._lock:
            self._admitted -= 1

    def shutdown(self) -> None:
        """Stop the threads once the calls already admitted have ended (new calls are refused)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
