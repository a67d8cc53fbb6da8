"""JSON decoding for API responses and watch streams (orjson).

Every watch event of every ScheduledJob and Job (kopf decodes each line of the WATCH stream) and every
status-write response is decoded here. orjson decodes the same bytes several times faster than the standard
library's ``json`` and returns the same plain ``dict``/``list``/``str``/``int``/``float`` values (the profile
behind this choice is in docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

import orjson


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document (bytes or str) into plain Python values."""
    return orjson.loads(data)
