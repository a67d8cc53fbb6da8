"""The webhook validates off the main loop, with a bound on waiting requests, and reads bounded bodies
(DESIGN §11.1): a flood of AdmissionReviews costs its sender errors, never the operator's loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from typing import Any

import aiohttp
import kopf
import pytest

from sundial.runtime.serving import admission, offloop


def _spec() -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {"schedule": "* * * * *", "jobTemplate": template}


async def test_validation_runs_on_a_worker_thread_not_the_loop() -> None:
    checks = offloop.Offloaded(workers=1, waiting=0)
    seen: list[threading.Thread] = []

    def record(body: Any, **_: Any) -> list[Any]:
        seen.append(threading.current_thread())
        return []

    try:
        assert await checks.run(record, {}) == []
        assert seen and seen[0] is not threading.current_thread()
        handler = admission.validator(checks=checks)
        bad = {"metadata": {"name": "x"}, "spec": {**_spec(), "schedule": "nope"}}
        with pytest.raises(kopf.AdmissionError, match=r"spec\.schedule"):
            await handler(body=bad, operation="CREATE")
    finally:
        checks.shutdown()


async def test_beyond_the_bound_a_request_is_refused_at_once_and_later_ones_are_served() -> None:
    checks = offloop.Offloaded(workers=1, waiting=1)
    release = threading.Event()

    def blocked(body: Any, **_: Any) -> list[Any]:
        release.wait(timeout=30)
        return []

    handler = admission.validator(checks=checks)
    calendar_handler = admission.calendar_validator(checks=checks)
    try:
        running = [asyncio.ensure_future(checks.run(blocked, {})) for _ in range(2)]
        while checks.admitted < 2:
            await asyncio.sleep(0.01)
        with pytest.raises(kopf.AdmissionError) as refused:
            await handler(body={"metadata": {"name": "x"}, "spec": _spec()}, operation="CREATE")
        assert refused.value.code == admission.BUSY_CODE and "busy" in str(refused.value)
        with pytest.raises(kopf.AdmissionError) as also:
            await calendar_handler(body={"metadata": {"name": "c"}, "spec": {}}, operation="CREATE")
        assert also.value.code == admission.BUSY_CODE
        release.set()
        assert await asyncio.gather(*running) == [[], []]
        await handler(body={"metadata": {"name": "x"}, "spec": _spec()}, operation="CREATE")  # admitted
        assert checks.admitted == 0
    finally:
        release.set()
        checks.shutdown()


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_kopfs_webhook_server_refuses_a_body_over_the_limit_before_any_handler() -> None:
    calls: list[Any] = []

    async def fn(data: Any, **_: Any) -> dict[str, Any]:
        calls.append(data)
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {"allowed": True}}

    port = _free_port()
    server = kopf.WebhookServer(addr="127.0.0.1", port=port, insecure=True)
    serving = server(fn)
    await serving.__anext__()
    try:
        url = f"http://127.0.0.1:{port}{admission.WEBHOOK_PATH}"
        async with aiohttp.ClientSession() as session:
            big = json.dumps({"request": {"object": {"x": "y" * admission.MAX_REQUEST_BYTES}}})
            async with session.post(url, data=big) as response:
                assert response.status == 413
            assert calls == []
            async with session.post(url, data=json.dumps({"request": {"uid": "1"}})) as response:
                assert response.status == 200
            assert len(calls) == 1
    finally:
        await serving.aclose()
