""":class:`sundial.kube.wire.Wire` against a loopback HTTP server: what reaches the server is what the generated
client would have sent (method, path, credentials, content type, JSON body), and the answer is the raw response
that :func:`sundial.kube.objects.raw_json` reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client

from sundial.kube import errors, objects, ratelimits, requests, results, wire


class Recorder:
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.status = 201

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(
            {
                "method": request.method,
                "path": request.path,
                "authorization": request.headers.get("Authorization"),
                "content_type": request.headers.get("Content-Type"),
                "accept": request.headers.get("Accept"),
                "peer": request.transport.get_extra_info("peername") if request.transport else None,
                "body": orjson.loads(await request.read() or b"null"),
            }
        )
        if request.path == "/version":
            await asyncio.sleep(0.2)  # in flight together, as requests to a busy API server are
        answer = {"metadata": {"name": "j", "uid": "u-1", "resourceVersion": "9"}}
        if self.status >= 300:
            answer = {"kind": "Status", "code": self.status, "reason": "AlreadyExists" if self.status == 409 else "x"}
        return web.json_response(answer, status=self.status)


@pytest.fixture
async def served() -> AsyncIterator[tuple[Recorder, objects.ObjectsApi]]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    configuration = client.Configuration(host=f"http://127.0.0.1:{port}")
    configuration.api_key = {"BearerToken": "s3cret"}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    api_client = client.ApiClient(configuration)
    bucket = ratelimits.TokenBucket(rate=1000.0, burst=1000)
    try:
        yield recorder, objects.ObjectsApi(api_client=api_client, requester=requests.Requester(bucket=bucket))
    finally:
        await api_client.close()
        await runner.cleanup()


async def test_a_job_post_carries_the_manifest_and_the_bearer_token(
    served: tuple[Recorder, objects.ObjectsApi],
) -> None:
    recorder, api = served
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"sundial.dev/scheduled-time": "2026-03-01T02:30:00Z"}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    created = await api.create_job(namespace="team-a", manifest=manifest, owner_uid="sj")
    assert created == results.Created(body={"metadata": {"name": "j", "uid": "u-1", "resourceVersion": "9"}})
    [seen] = recorder.seen
    assert seen["method"] == "POST" and seen["path"] == "/apis/batch/v1/namespaces/team-a/jobs"
    assert seen["authorization"] == "Bearer s3cret"
    assert seen["content_type"] == "application/json" and seen["accept"] == "application/json"
    assert seen["body"] == manifest


async def test_a_status_write_is_a_merge_patch_and_a_conflict_is_typed(
    served: tuple[Recorder, objects.ObjectsApi],
) -> None:
    recorder, api = served
    recorder.status = 200
    status = {"lastScheduleTime": datetime(2026, 3, 1, 2, 30, tzinfo=UTC).isoformat()}
    written = await api.write_status(namespace="ns", name="sj", resource_version="7", status=status)
    assert isinstance(written, results.Written)
    [seen] = recorder.seen
    assert (seen["method"], seen["path"]) == (
        "PATCH",
        "/apis/sundial.dev/v1alpha1/namespaces/ns/scheduledjobs/sj/status",
    )
    assert seen["content_type"] == "application/merge-patch+json"
    assert seen["body"]["metadata"] == {"resourceVersion": "7"}
    assert seen["body"]["status"]["lastScheduleTime"] == status["lastScheduleTime"]
    recorder.status = 409
    assert isinstance(
        await api.write_status(namespace="ns", name="sj", resource_version="7", status={}), results.Conflict
    )
    recorder.status = 503
    with pytest.raises(errors.TransientError):
        await api.write_status(namespace="ns", name="sj", resource_version="7", status={})


def test_path_segments_are_quoted() -> None:
    assert wire.path("apis", "batch", "v1", "namespaces", "a/b", "jobs") == "/apis/batch/v1/namespaces/a%2Fb/jobs"


async def test_warming_opens_that_many_connections_at_once(served: tuple[Recorder, objects.ObjectsApi]) -> None:
    recorder, api = served
    recorder.status = 200
    await api.warm(5)
    assert [seen["path"] for seen in recorder.seen] == ["/version"] * 5
    assert len({seen["peer"] for seen in recorder.seen}) == 5, "one connection each"
    assert all(seen["authorization"] == "Bearer s3cret" for seen in recorder.seen)
