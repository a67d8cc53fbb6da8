"""Give freed heap memory back to the OS now and then (glibc ``malloc_trim``).

CPython allocates every object over 512 bytes (dict key tables, lists, long strings, the store's JSON
blobs, HTTP bodies) with the C library's ``malloc``. glibc returns memory to the OS only from the top of
its heap; a burst (the initial listing, the first status write of every object, a herd) leaves free holes
under long-lived allocations, and RSS stays at the burst's high-water mark. ``malloc_trim(0)`` releases
every whole free page, wherever it is; the trim runs off the event loop. (What it saves, measured with
``python -m bench.memory``: docs/benchmarks.md.)

Other C libraries (musl) have no ``malloc_trim``: then this does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: Seconds between trims: cheap (milliseconds, on a worker thread), and bursts are rarely closer.
INTERVAL = 60.0


def _load_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    return trim


_TRIM = _load_trim()


def available() -> bool:
    return _TRIM is not None


def trim() -> bool:
    """Release free heap pages now (blocking; milliseconds). False if the C library cannot."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


async def trim_periodically(stopping: asyncio.Event, *, interval: float = INTERVAL) -> None:
    """Until ``stopping``: every ``interval`` seconds, :func:`trim` on a worker thread."""
    if not available():
        logger.debug("malloc_trim is not available: freed heap memory is not returned early")
        return
    while not stopping.is_set():
        try:
            await asyncio.wait_for(stopping.wait(), timeout=interval)
        except TimeoutError:
            await asyncio.to_thread(trim)
