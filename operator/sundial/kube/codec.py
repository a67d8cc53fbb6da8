"""JSON decoding for API responses and watch streams (orjson; the standard library for what orjson refuses).

Every watch event of every ScheduledJob, Job and ScheduleCalendar and every
status-write response is decoded here. orjson decodes the same bytes several times faster than the standard
library's ``json`` and returns the same plain ``dict``/``list``/``str``/``int``/``float`` values (the profile
behind this choice is in docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

import orjson


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document (bytes or str) into plain Python values."""
    return orjson.loads(data)


#: Nesting the fallback decoder accepts: above the API server's own JSON decoder (it refuses documents nested
#: deeper than 10,000 levels), so whatever the API server serves decodes.
DEEP_LIMIT = 12_000
#: The fallback decoder's thread stack: the standard library's C scanner recurses once per level.
DEEP_STACK_BYTES = 256 * 1024 * 1024
_deep = threading.Lock()


def loads_deep(data: bytes | str) -> Any:
    """Decode a document orjson refuses for its depth alone (orjson stops at 1,024 levels; a ScheduledJob's
    ``jobTemplate.metadata`` keeps unknown fields, so a tenant may nest it far deeper). The standard library's
    decoder runs on a thread of its own with :data:`DEEP_STACK_BYTES` of stack while the interpreter's recursion
    limit is raised to :data:`DEEP_LIMIT`; blocking, so call it off the event loop (``asyncio.to_thread``).
    Raises ``ValueError`` (``RecursionError`` is one) for what still cannot be decoded. What it returns may be
    nested too deeply for other code: the caller reads only what it needs and keeps a stub (the intake's
    quarantine)."""
    outcome: dict[str, Any] = {}

    def decode() -> None:
        try:
            outcome["value"] = json.loads(data)
        except RecursionError as error:
            outcome["error"] = ValueError(f"nested deeper than {DEEP_LIMIT} levels: {error}")
        except ValueError as error:
            outcome["error"] = error

    with _deep:  # one at a time: the recursion limit and the stack size are the interpreter's
        stack = threading.stack_size(DEEP_STACK_BYTES)
        limit = sys.getrecursionlimit()
        try:
            worker = threading.Thread(target=decode, name="deep json", daemon=True)
            sys.setrecursionlimit(max(limit, DEEP_LIMIT))
            worker.start()
            worker.join()
        finally:
            sys.setrecursionlimit(limit)
            threading.stack_size(stack)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


async def decode(data: bytes | str) -> Any:
    """DATA decoded: orjson, else (a document nested beyond orjson's limit) :func:`loads_deep` on a worker
    thread. Raises ``ValueError`` for what neither decodes."""
    try:
        return loads(data)
    except ValueError:
        return await asyncio.to_thread(loads_deep, data)
