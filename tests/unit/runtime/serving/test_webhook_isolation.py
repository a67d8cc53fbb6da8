"""The webhook never waits on, or stalls, the main loop (DESIGN §12.2): it is served from a thread and loop of
its own, validates on worker threads with a bound on waiting requests, and refuses a flood at once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.unit.runtime.serving.admissionreviews import review
from tests.unit.runtime.serving.tlsfiles import issued, material

from sundial import model
from sundial.runtime.serving import admission, certrotators, offloop, probethread, webhookserver, webhooktls
from sundial.runtime.settings import WebhookSettings


def _valid() -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {
        "kind": "ScheduledJob",
        "metadata": {"name": "x"},
        "spec": {"schedule": "* * * * *", "jobTemplate": template},
    }


class Gate:
    """A check that waits for :meth:`open` (each call counted), so tests hold validation in flight."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.released = threading.Event()
        self.threads: list[threading.Thread] = []

    def __call__(self, body: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[model.SpecProblem]:
        self.threads.append(threading.current_thread())
        self.entered.release()
        self.released.wait(timeout=30)  # the test's deadline, not a measurement
        return []


def _gated(gate: Gate) -> webhookserver.Webhook:
    return webhookserver.Webhook(
        path=admission.WEBHOOK_PATH,
        resource="scheduledjobs",
        kind="ScheduledJob",
        check=gate,
        refusal=lambda body, found, kind: "",
    )


class Served:
    """A :class:`webhookserver.Server` on its own thread over TLS (certificate files in a temporary directory)."""

    def __init__(self, tmp_path: Path, server: webhookserver.Server) -> None:
        self.tls = issued(tmp_path)
        self.files = webhooktls.CertificateFiles(self.tls.certfile, self.tls.keyfile)
        self.thread = probethread.ProbeThread(
            server.app(), port=0, host="127.0.0.1", name="sundial-webhook", ssl_context=self.files.context
        )
        self.thread.start()

    def post(self, path: str, data: bytes, *, cadata: str | None = None) -> tuple[int, bytes]:
        """POST DATA over HTTPS, trusting CADATA (default: the served CA); (status, body)."""
        context = ssl.create_default_context(cadata=cadata or self.tls.cadata)
        request = urllib.request.Request(
            f"https://127.0.0.1:{self.thread.bound_port}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()


@pytest.fixture
def gate() -> Iterator[Gate]:
    made = Gate()
    yield made
    made.released.set()


def _review_bytes() -> bytes:
    return json.dumps(review(_valid())).encode()


async def test_a_review_is_answered_while_the_main_loop_is_blocked(tmp_path: Path) -> None:
    served = Served(tmp_path, webhookserver.Server([admission.scheduled_jobs()]))
    answered: list[tuple[int, bytes]] = []
    done = threading.Event()
    bad = _valid()
    bad["spec"]["schedule"] = "0 0 30 2 *"
    sent = review(bad, uid="uid-1")

    def client() -> None:  # the API server, calling while the main loop does not yield
        answered.append(served.post(admission.WEBHOOK_PATH, json.dumps(sent).encode()))
        done.set()

    caller = threading.Thread(target=client)
    events: list[str] = []
    try:
        asyncio.get_running_loop().call_soon(events.append, "main loop ran")
        caller.start()
        assert done.wait(timeout=30)  # blocks the main loop until the review was answered
        events.append("block ended")
        await asyncio.sleep(0)
        assert events == ["block ended", "main loop ran"]
        [(status, body)] = answered
        response = json.loads(body)["response"]
        assert (status, response["uid"], response["allowed"], response["status"]["code"]) == (200, "uid-1", False, 422)
        assert 'ScheduledJob.sundial.dev "x" is invalid: spec.schedule' in response["status"]["message"]
    finally:
        caller.join(timeout=30)
        assert served.thread.stop()


async def test_the_main_loop_runs_while_validation_is_in_flight(tmp_path: Path, gate: Gate) -> None:
    served = Served(tmp_path, webhookserver.Server([_gated(gate)]))
    answered: list[tuple[int, bytes]] = []
    caller = threading.Thread(target=lambda: answered.append(served.post(admission.WEBHOOK_PATH, _review_bytes())))
    try:
        caller.start()
        assert await asyncio.to_thread(gate.entered.acquire, timeout=30)
        ticks = 0
        for _ in range(3):  # timers on the main loop fire while the review waits in its check
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 3 and not answered
        assert gate.threads[0] not in (threading.current_thread(), served.thread._thread)
        gate.released.set()
        await asyncio.to_thread(caller.join, 30)
        assert answered[0][0] == 200 and json.loads(answered[0][1])["response"]["allowed"] is True
    finally:
        gate.released.set()
        assert served.thread.stop()


async def test_beyond_the_in_flight_bound_a_request_is_refused_before_its_body_is_read(
    tmp_path: Path, gate: Gate
) -> None:
    checks = offloop.Offloaded(workers=1, waiting=1)
    served = Served(tmp_path, webhookserver.Server([_gated(gate)], checks=checks, limit=2))
    answers: list[tuple[int, bytes]] = []
    callers = [
        threading.Thread(target=lambda: answers.append(served.post(admission.WEBHOOK_PATH, _review_bytes())))
        for _ in range(2)
    ]
    try:
        for caller in callers:
            caller.start()
        assert await asyncio.to_thread(gate.entered.acquire, timeout=30)
        while checks.admitted < 2:  # the second waits for the only worker
            await asyncio.sleep(0.01)
        status, body = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes())
        assert (status, body) == (429, b"the sundial webhook is busy: retry the request\n")
        assert len(gate.threads) == 1
        gate.released.set()
        for caller in callers:
            await asyncio.to_thread(caller.join, 30)
        assert sorted(status for status, _ in answers) == [200, 200]
        status, _ = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes())
        assert status == 200  # served again once the flood is over
    finally:
        gate.released.set()
        checks.shutdown()
        assert served.thread.stop()


async def test_a_body_over_the_size_bound_is_refused_413_and_never_checked(tmp_path: Path, gate: Gate) -> None:
    gate.released.set()
    served = Served(tmp_path, webhookserver.Server([_gated(gate)], max_bytes=4096))
    try:
        over = json.dumps(review({**_valid(), "pad": "y" * 4096})).encode()
        status, body = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, over)
        assert (status, body) == (413, b"request body: over 4096 bytes\n")
        assert gate.threads == []
        status, _ = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes())
        assert status == 200 and len(gate.threads) == 1
    finally:
        assert served.thread.stop()


async def test_malformed_deep_and_misrouted_requests_are_refused_naming_the_problem(tmp_path: Path) -> None:
    served = Served(tmp_path, webhookserver.Server([admission.scheduled_jobs()]))
    deep = review(_valid())
    deep["request"]["object"]["metadata"]["annotations"] = {"a": json.loads("[" * 70 + "]" * 70)}
    no_uid = review(_valid())
    del no_uid["request"]["uid"]
    cases = [
        (admission.WEBHOOK_PATH, b"{not: json}", 400, "request body: not JSON"),
        (admission.WEBHOOK_PATH, b'{"a": [}', 400, "request body: unbalanced brackets"),
        (admission.WEBHOOK_PATH, json.dumps(deep).encode(), 400, "JSON nested deeper than 64 levels"),
        (admission.WEBHOOK_PATH, json.dumps(no_uid).encode(), 400, "request.uid: must be a string, got NoneType"),
        (admission.WEBHOOK_PATH, b"[]", 400, "request body: must be an AdmissionReview object, got list"),
        ("/validate-anything-else", _review_bytes(), 404, "Not Found"),
    ]
    try:
        for path, data, status, message in cases:
            got, body = await asyncio.to_thread(served.post, path, data)
            assert (got, message in body.decode()) == (status, True), (path, body)
    finally:
        assert served.thread.stop()


async def test_new_connections_get_a_renewed_certificate_file_and_the_server_never_stops(tmp_path: Path) -> None:
    served = Served(tmp_path, webhookserver.Server([admission.scheduled_jobs()]))
    try:
        old_ca = served.tls.cadata
        renewed = issued(tmp_path, "renewed")
        served.tls.certfile.write_bytes(renewed.certfile.read_bytes())
        served.tls.keyfile.write_bytes(renewed.keyfile.read_bytes())
        assert served.files.reload_if_changed()
        assert not served.files.reload_if_changed()  # unchanged since
        status, _ = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes(), cadata=renewed.cadata)
        assert status == 200
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes(), cadata=old_ca)
        served.tls.keyfile.write_bytes(b"half-written")  # a pair that does not load keeps the served one
        assert not served.files.reload_if_changed()
        status, _ = await asyncio.to_thread(served.post, admission.WEBHOOK_PATH, _review_bytes(), cadata=renewed.cadata)
        assert status == 200
    finally:
        assert served.thread.stop()


async def test_a_rotated_managed_certificate_is_served_to_new_connections(tmp_path: Path) -> None:
    tls = certrotators.ServingTLS(tmp_path)
    first, second = material(datetime.now(UTC)), material(datetime.now(UTC))
    tls.load(first)
    app = webhookserver.Server([admission.scheduled_jobs()]).app()
    thread = probethread.ProbeThread(app, port=0, host="127.0.0.1", ssl_context=tls.context)
    thread.start()

    def post(cadata: bytes) -> int:
        context = ssl.create_default_context(cadata=cadata.decode())
        url = f"https://127.0.0.1:{thread.bound_port}{admission.WEBHOOK_PATH}"
        request = urllib.request.Request(url, data=_review_bytes())
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            return int(response.status)

    try:
        assert await asyncio.to_thread(post, first.bundle_pem()) == 200
        assert tls.load(second)  # on the main loop, as the rotator does, while the server runs on its thread
        assert await asyncio.to_thread(post, second.bundle_pem()) == 200
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            await asyncio.to_thread(post, first.bundle_pem())
    finally:
        assert thread.stop()


async def test_the_operators_webhook_decodes_and_validates_in_worker_processes(tmp_path: Path) -> None:
    tls = issued(tmp_path)
    settings = WebhookSettings(port=1, addr="127.0.0.1", cert_file=tls.certfile, key_file=tls.keyfile)
    checks = admission.worker_processes()
    try:
        assert await checks.run(os.getpid) != os.getpid()
        bad = _valid()
        bad["spec"]["schedule"] = "61 * * * *"
        answer = await checks.run(
            webhookserver.answer_review, admission.scheduled_jobs(), json.dumps(review(bad)).encode()
        )
        assert answer.status == 200 and 'ScheduledJob.sundial.dev "x" is invalid: spec.schedule' in answer.refused
    finally:
        checks.shutdown()
    server = admission.server(settings, now=datetime.now(UTC))
    assert server is not None and server.port == 1  # not started: port 1 is only checked, never bound here


async def test_a_worker_process_that_dies_is_replaced(tmp_path: Path) -> None:
    checks = offloop.Offloaded(workers=1, waiting=0, processes=True)
    try:
        first = await checks.run(os.getpid)
        os.kill(first, signal.SIGKILL)
        with pytest.raises(offloop.BusyError, match="worker process ended"):
            await checks.run(os.getpid)
        second = await checks.run(os.getpid)
        assert second not in (first, os.getpid())
        assert checks.admitted == 0
    finally:
        checks.shutdown()
