"""What keeps the operator's memory flat at scale: kopf settings, no per-object kopf memories, heap trims."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import kopf
import pytest

from sundial.runtime import heap, informers


def body(uid: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "ns"}}


def test_kopf_lists_in_pages_and_idle_workers_exit_soon() -> None:
    settings = informers.operator_settings()
    assert settings.watching.chunk_size == 500
    assert settings.queueing.idle_timeout <= 1.0


async def test_kopf_remembers_nothing_per_object() -> None:
    memories = informers.resource_memories()
    first = await memories.recall(body("a"), noticed_by_listing=True)
    again = await memories.recall(raw_body=body("a"), memobase=kopf.Memo())
    assert first is not again
    assert list(memories.iter_all_memories()) == []
    await memories.forget(body("a"))  # a DELETED event: nothing to forget, no error


def test_kopf_operator_takes_the_memories() -> None:
    assert "memories" in inspect.signature(kopf.operator).parameters


def test_trim_works_on_this_c_library() -> None:
    if not heap.available():
        pytest.skip("no malloc_trim in this C library")
    assert heap.trim() is True


async def test_trims_run_periodically_until_stopping(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def fake_trim(pad: int) -> int:
        calls.append(pad)
        return 1

    monkeypatch.setattr(heap, "_TRIM", fake_trim)
    stopping = asyncio.Event()
    task = asyncio.create_task(heap.trim_periodically(stopping, interval=0.01))
    await asyncio.sleep(0.1)
    stopping.set()
    await asyncio.wait_for(task, timeout=1)
    assert len(calls) >= 2 and set(calls) == {0}


async def test_without_malloc_trim_nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_TRIM", None)
    assert heap.trim() is False
    await asyncio.wait_for(heap.trim_periodically(asyncio.Event(), interval=0.01), timeout=1)
