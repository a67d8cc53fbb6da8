"""/healthz and /readyz answer while the main loop is blocked: they are served from a thread of their own."""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.request

from sundial.runtime.serving import probes, probethread


def _get(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.status, response.read().decode()


async def test_probes_answer_while_the_main_loop_is_blocked() -> None:
    indexed = asyncio.Event()  # read from the probe thread, as the operator's listing.ready is
    indexed.set()
    stopping = asyncio.Event()
    app = probes.health_app(alive=lambda: not stopping.is_set(), ready=indexed.is_set)
    server = probethread.ProbeThread(app, port=0, host="127.0.0.1")
    server.start()
    blocking = threading.Event()
    answers: list[tuple[int, str]] = []
    answered = threading.Event()

    def client() -> None:  # a kubelet: probes once the main loop is blocked
        blocking.wait(timeout=10)
        answers.extend([_get(server.bound_port, "/healthz"), _get(server.bound_port, "/readyz")])
        answered.set()

    prober = threading.Thread(target=client)
    prober.start()
    events: list[str] = []

    def busy() -> bool:  # a CPU-heavy pass on the main loop: it does not yield until the probes were answered
        blocking.set()
        done = answered.wait(timeout=10)  # the deadline of the test, not a measurement
        events.append("block ended")
        return done

    try:
        asyncio.get_running_loop().call_soon(events.append, "main loop ran")  # only after the block
        assert busy()  # the probes were answered while the main loop was blocked
        await asyncio.sleep(0)
        assert events == ["block ended", "main loop ran"]
        assert answers == [(200, "ok\n"), (200, "ready\n")]
        stopping.set()
        assert await asyncio.to_thread(_get_status, server.bound_port, "/healthz") == 503
    finally:
        prober.join(timeout=10)
        assert server.stop()


def _get_status(port: int, path: str) -> int:
    try:
        return _get(port, path)[0]
    except urllib.error.HTTPError as error:
        return error.code


async def test_a_taken_port_is_reported_by_start() -> None:
    first = probethread.ProbeThread(probes.health_app(alive=lambda: True, ready=lambda: True), port=0, host="127.0.0.1")
    first.start()
    try:
        again = probes.health_app(alive=lambda: True, ready=lambda: True)
        second = probethread.ProbeThread(again, port=first.bound_port, host="127.0.0.1")
        try:
            second.start()
        except OSError:
            pass
        else:
            raise AssertionError("a second server on the same port started")
    finally:
        assert first.stop()
