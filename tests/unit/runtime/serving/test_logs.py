"""Log records as JSON lines, and the root logger's configuration."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from sundial.runtime.serving.logs import JsonFormatter, configure
from sundial.runtime.settings import LogFormat


def record(level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("sundial.runtime.acting.reconciler", level, __file__, 1, msg, (), None)


def test_json_lines_carry_the_extras_as_fields() -> None:
    line = record(logging.INFO, "claimed run")
    line.shard = 3
    line.object = "team-a/nightly"
    line._private = "left out"
    line.detail = {"not": "a scalar"}
    payload = json.loads(JsonFormatter().format(line))
    assert payload == {
        "time": payload["time"],
        "level": "info",
        "logger": "sundial.runtime.acting.reconciler",
        "message": "claimed run",
        "shard": 3,
        "object": "team-a/nightly",
        "detail": "{'not': 'a scalar'}",
    }
    assert payload["time"].endswith("+00:00")


@pytest.fixture
def restored_root() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    access = logging.getLogger("aiohttp.access").level
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(access)


def test_configure_sets_one_handler_the_level_and_quiets_the_access_log(restored_root: logging.Logger) -> None:
    configure(fmt=LogFormat.JSON, level="debug")
    assert len(restored_root.handlers) == 1
    assert isinstance(restored_root.handlers[0].formatter, JsonFormatter)
    assert restored_root.level == logging.DEBUG
    assert logging.getLogger("aiohttp.access").level == logging.WARNING
