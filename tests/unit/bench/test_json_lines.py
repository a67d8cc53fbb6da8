"""The watcher's records are read incrementally and a half-written line is never taken for a record."""

from __future__ import annotations

from pathlib import Path

from bench.env import JsonLines


def test_only_complete_lines_are_read_and_each_once(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    lines = JsonLines(path)
    assert lines.read() == []
    path.write_text('{"name": "a"}\n{"name": "b"}\n{"name": "c', encoding="utf-8")
    assert [r["name"] for r in lines.read()] == ["a", "b"]
    with path.open("a", encoding="utf-8") as sink:
        sink.write('"}\n{"name": "d"}\n')
    assert [r["name"] for r in lines.read()] == ["a", "b", "c", "d"]
    assert [r["name"] for r in lines.read()] == ["a", "b", "c", "d"]


def test_a_line_that_is_not_json_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "jobs.jsonl"
    path.write_text('{"name": "a"}\nnot json\n{"name": "b"}\n', encoding="utf-8")
    assert [r["name"] for r in JsonLines(path).read()] == ["a", "b"]
