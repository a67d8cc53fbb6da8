"""Lease renewals on their own thread: callbacks and drains cross back to the main loop; stop releases."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sundial.runtime.coordination import leasethread


class _FakeLeadership:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.run_thread: int | None = None
        self.released_thread: int | None = None
        self.running = threading.Event()

    async def run(self, stopping: asyncio.Event) -> None:
        self.run_thread = threading.get_ident()
        self.running.set()
        if self.fail:
            raise RuntimeError("lease loop broke")
        await stopping.wait()

    async def release(self) -> None:
        self.released_thread = threading.get_ident()


async def test_runs_on_another_thread_and_releases_there_when_stopped() -> None:
    closed: list[int] = []

    async def close() -> None:
        closed.append(threading.get_ident())

    leadership = _FakeLeadership()
    runner = leasethread.LeaseThread(leadership, close=close)
    runner.start()
    assert await asyncio.to_thread(leadership.running.wait, 10)
    assert leadership.run_thread not in (None, threading.get_ident())
    runner.stop()
    assert await runner.join(timeout=10)
    await asyncio.wait_for(runner.wait(), timeout=10)
    assert leadership.released_thread == leadership.run_thread
    assert closed == [leadership.run_thread]


async def test_a_failure_in_the_thread_is_raised_on_the_main_loop() -> None:
    leadership = _FakeLeadership(fail=True)
    runner = leasethread.LeaseThread(leadership)
    runner.start()
    with pytest.raises(RuntimeError, match="lease loop broke"):
        await asyncio.wait_for(runner.wait(), timeout=10)
    assert leadership.released_thread == leadership.run_thread  # released even so
    assert await runner.join(timeout=10)


async def test_callbacks_reach_the_main_loop_in_order() -> None:
    main = asyncio.get_running_loop()
    seen: list[tuple[int, bool, int]] = []
    done = asyncio.Event()

    def on_change(shard: int, held: bool) -> None:
        seen.append((shard, held, threading.get_ident()))
        if len(seen) == 3:
            done.set()

    deliver = leasethread.to_loop(main, on_change)

    def from_thread() -> None:
        deliver(1, True)
        deliver(2, True)
        deliver(1, False)

    await asyncio.to_thread(from_thread)
    await asyncio.wait_for(done.wait(), timeout=10)
    assert [(s, h) for s, h, _ in seen] == [(1, True), (2, True), (1, False)]
    assert {t for _, _, t in seen} == {threading.get_ident()}


async def test_a_drain_runs_on_the_main_loop_and_is_cancelled_with_its_caller() -> None:
    main = asyncio.get_running_loop()
    quiet = asyncio.Event()
    ran_on: list[int] = []
    cancelled = asyncio.Event()

    async def drained(shard: int) -> int:
        ran_on.append(threading.get_ident())
        try:
            await quiet.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return shard

    bridged = leasethread.on_loop(main, drained)

    def in_other_loop(release: bool) -> object:
        async def go() -> object:
            if release:
                main.call_soon_threadsafe(quiet.set)
                return await asyncio.wait_for(bridged(7), timeout=10)
            try:
                return await asyncio.wait_for(bridged(3), timeout=0.05)
            except TimeoutError:
                return "timed out"

        return asyncio.run(go())

    assert await asyncio.to_thread(in_other_loop, False) == "timed out"
    await asyncio.wait_for(cancelled.wait(), timeout=10)  # the main-loop side was cancelled too
    assert await asyncio.to_thread(in_other_loop, True) == 7
    assert set(ran_on) == {threading.get_ident()}


async def test_the_deferred_api_is_built_on_first_use_and_closed_only_if_built() -> None:
    built: list[int] = []
    closed: list[bool] = []

    class _Api:
        async def list(self, *, namespace: str) -> dict[str, object]:
            return {"ns": namespace}

        async def close(self) -> None:
            closed.append(True)

    def factory() -> object:
        built.append(threading.get_ident())
        return _Api()

    api = leasethread.DeferredLeaseApi(factory)  # type: ignore[arg-type]
    await api.close()
    assert built == [] and closed == []
    assert await api.list(namespace="x") == {"ns": "x"}
    await api.list(namespace="y")
    assert len(built) == 1
    await api.close()
    assert closed == [True]
