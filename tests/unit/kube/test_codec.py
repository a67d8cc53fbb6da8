"""The JSON decoder gives the same plain values as the standard library."""

from __future__ import annotations

import json

import pytest

from sundial.kube import codec

DOCUMENTS = [
    '{"kind": "Job", "metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"parallelism": 1}}',
    '{"n": -12, "f": 1.5e3, "t": true, "z": null, "s": "caf\\u00e9 \\ud83d\\ude00", "l": [[], {}]}',
    "[]",
]


@pytest.mark.parametrize("text", DOCUMENTS)
def test_loads_equals_the_standard_library(text: str) -> None:
    assert codec.loads(text) == json.loads(text)
    assert codec.loads(text.encode()) == json.loads(text)


def test_invalid_json_raises_a_value_error() -> None:
    with pytest.raises(ValueError):
        codec.loads(b'{"a": ')
