"""ObjectsApi request bodies (no API server: the generated client is replaced by a recorder)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from sundial import model
from sundial.kube import errors, objects, ratelimits, requests, results


class _Batch:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    async def delete_namespaced_job(self, name: str, namespace: str, *, body: dict[str, Any], **_: Any) -> None:
        self.calls.append((namespace, name, body))


def _api() -> tuple[objects.ObjectsApi, _Batch]:
    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    api = objects.ObjectsApi(api_client=object(), requester=requester)
    batch = _Batch()
    api._batch = batch
    return api, batch


async def test_delete_job_with_a_uid_carries_the_precondition() -> None:
    api, batch = _api()
    assert isinstance(await api.delete_job(namespace="ns", name="job", uid="u-1"), results.Done)
    assert batch.calls == [("ns", "job", {"propagationPolicy": "Background", "preconditions": {"uid": "u-1"}})]


async def test_a_job_is_never_deleted_by_name_alone() -> None:
    api, batch = _api()
    with pytest.raises(ValueError, match="needs its UID"):
        await api.delete_job(namespace="ns", name="job", uid="")
    assert batch.calls == []
    assert isinstance(await api.delete_job(namespace="ns", name="job", uid="u1"), results.Done)
    assert batch.calls == [("ns", "job", {"propagationPolicy": "Background", "preconditions": {"uid": "u1"}})]


# The relabel before a delete and the version preconditions: test_jobdeletes.py.


class _Response:
    """What the generated client returns with ``_preload_content=False`` (an aiohttp response)."""

    def __init__(self, status: int, body: bytes, reason: str = "") -> None:
        self.status, self._body, self.reason = status, body, reason
        self.headers = {"Content-Type": "application/json"}
        self.released = False

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        self.released = True


async def _returning(response: _Response) -> _Response:
    return response


class _Wire:
    """Records what :class:`sundial.kube.wire.Wire` is asked to send and answers with RESPONSE."""

    def __init__(self, response: _Response) -> None:
        self.response = response
        self.calls: list[tuple[str, str, Any, dict[str, Any]]] = []

    async def send(self, method: str, api_path: str, body: Any, **kwargs: Any) -> _Response:
        self.calls.append((method, api_path, body, kwargs))
        return self.response


async def test_raw_json_returns_plain_dicts_and_releases_the_response() -> None:
    response = _Response(201, b'{"kind": "Job", "metadata": {"name": "j", "uid": "u"}}')
    assert await objects.raw_json(_returning(response)) == {"kind": "Job", "metadata": {"name": "j", "uid": "u"}}
    assert response.released


async def test_raw_json_raises_the_generated_clients_exception_with_the_status_body() -> None:
    status = b'{"kind": "Status", "code": 409, "reason": "AlreadyExists", "message": "jobs \\"j\\" already exists"}'
    response = _Response(409, status, reason="Conflict")
    try:
        await objects.raw_json(_returning(response))
    except objects.ApiException as error:
        classified = errors.classify(error)
        assert classified is not None
        assert (classified.code, classified.reason, classified.message) == (
            409,
            "AlreadyExists",
            'jobs "j" already exists',
        )
    else:
        raise AssertionError("no exception")
    assert response.released


async def test_create_job_asks_for_the_raw_body_and_returns_it_unchanged() -> None:
    api, _ = _api()
    sent = _Wire(_Response(201, b'{"metadata": {"name": "j", "creationTimestamp": "2026-01-01T00:00:00Z"}}'))
    api._wire = sent
    created = await api.create_job(namespace="ns", manifest={"metadata": {"name": "j"}}, owner_uid="u")
    assert created == results.Created(body={"metadata": {"name": "j", "creationTimestamp": "2026-01-01T00:00:00Z"}})
    assert sent.calls == [("POST", "/apis/batch/v1/namespaces/ns/jobs", {"metadata": {"name": "j"}}, {"timeout": 10.0})]
    assert sent.response.released


async def test_create_job_maps_a_server_side_transient_error() -> None:
    api, _ = _api()
    api._wire = _Wire(_Response(503, b'{"kind": "Status", "code": 503, "reason": "ServiceUnavailable"}'))
    try:
        await api.create_job(namespace="ns", manifest={"metadata": {"name": "j"}}, owner_uid="u")
    except errors.TransientError as error:
        assert error.code == 503
    else:
        raise AssertionError("no exception")


class _Core:
    def __init__(self, response: _Response) -> None:
        self.response = response
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    async def create_namespaced_event(self, *args: Any, **kwargs: Any) -> _Response:
        self.calls.append(("create", args, kwargs))
        return self.response

    async def patch_namespaced_event(self, *args: Any, **kwargs: Any) -> _Response:
        self.calls.append(("patch", args, kwargs))
        return self.response


async def test_create_event_starts_a_series_and_returns_the_events_name() -> None:
    api, _ = _api()
    core = _Core(_Response(201, b'{"metadata": {"name": "nightly.17f3a", "namespace": "ns"}}'))
    api._core = core
    first, last = datetime(2026, 3, 1, 2, 30, tzinfo=UTC), datetime(2026, 3, 1, 2, 31, tzinfo=UTC)
    involved = model.ObjectMeta(name="nightly", namespace="ns", uid="u", resource_version="5")
    name = await api.create_event(involved=involved, type_="Warning", reason="MissedSchedule", message="x" * 2000,
                                  first=first, last=last, count=3, instance="replica-1")  # fmt: skip
    assert name == "nightly.17f3a"
    [(verb, (namespace, body), kwargs)] = core.calls
    assert (verb, namespace, kwargs["_preload_content"]) == ("create", "ns", False)
    assert body["count"] == 3
    assert (body["firstTimestamp"], body["lastTimestamp"]) == ("2026-03-01T02:30:00Z", "2026-03-01T02:31:00Z")
    assert body["involvedObject"]["uid"] == "u"
    assert len(body["message"]) == objects.MAX_EVENT_MESSAGE


async def test_patch_event_is_a_merge_patch_of_count_last_timestamp_and_message() -> None:
    api, _ = _api()
    core = _Core(_Response(200, b'{"metadata": {"name": "nightly.17f3a"}}'))
    api._core = core
    last = datetime(2026, 3, 1, 2, 40, tzinfo=UTC)
    patched = await api.patch_event(namespace="ns", name="nightly.17f3a", count=12, last_timestamp=last, message="m")
    assert patched == results.Done()
    [(verb, (name, namespace, body), kwargs)] = core.calls
    assert (verb, name, namespace) == ("patch", "nightly.17f3a", "ns")
    assert body == {"count": 12, "lastTimestamp": "2026-03-01T02:40:00Z", "message": "m"}
    assert kwargs["_content_type"] == "application/merge-patch+json"
    assert kwargs["_preload_content"] is False


async def test_patch_event_of_an_expired_event_is_gone() -> None:
    api, _ = _api()
    api._core = _Core(_Response(404, b'{"kind": "Status", "code": 404, "reason": "NotFound"}', reason="Not Found"))
    last = datetime(2026, 3, 1, 2, 40, tzinfo=UTC)
    assert await api.patch_event(namespace="ns", name="e", count=2, last_timestamp=last, message="m") == results.Gone()


async def test_write_status_reads_the_raw_json_answer_without_model_objects() -> None:
    api, _ = _api()
    sent = _Wire(_Response(200, b'{"metadata": {"resourceVersion": "8"}, "status": {"active": []}}'))
    api._wire = sent
    written = await api.write_status(namespace="ns", name="sj", resource_version="7", status={"active": []})
    assert isinstance(written, results.Written)
    assert written.body == {"metadata": {"resourceVersion": "8"}, "status": {"active": []}}
    assert [call[:2] for call in sent.calls] == [
        ("PATCH", "/apis/sundial.dev/v1alpha1/namespaces/ns/scheduledjobs/sj/status")
    ]
    assert sent.response.released


async def test_write_status_is_a_merge_patch_of_the_owned_fields_with_a_resource_version_precondition() -> None:
    """Fields this version does not know are absent from the patch (the API server keeps them); owned fields
    the new status lacks are nulled (removed); the resourceVersion makes the patch a compare-and-set."""
    api, _ = _api()
    sent = _Wire(_Response(200, b"{}"))
    api._wire = sent
    status = {"active": [{"scheduledTime": "2026-03-01T02:00:00Z", "futureKey": 1}], "fencingToken": "0-3"}
    await api.write_status(namespace="ns", name="sj", resource_version="7", status=status)
    [(_, api_path, body, kwargs)] = sent.calls
    assert api_path.endswith("/scheduledjobs/sj/status")
    assert kwargs["content_type"] == "application/merge-patch+json"
    assert body["metadata"] == {"resourceVersion": "7"}
    assert body["status"]["active"] == status["active"] and body["status"]["fencingToken"] == "0-3"
    assert body["status"]["lastHandledBackfill"] is None and body["status"]["backfills"] is None
    assert set(body["status"]) == set(model.resource.STATUS_FIELDS)
    assert "futureField" not in body["status"]


async def test_write_status_conflict_and_gone_are_typed() -> None:
    api, _ = _api()
    api._wire = _Wire(_Response(409, b'{"reason": "Conflict"}', "Conflict"))
    assert isinstance(
        await api.write_status(namespace="ns", name="sj", resource_version="7", status={}), results.Conflict
    )
    api._wire = _Wire(_Response(404, b'{"reason": "NotFound"}', "Not Found"))
    assert isinstance(await api.write_status(namespace="ns", name="sj", resource_version="7", status={}), results.Gone)


async def test_an_existing_job_is_adopted_only_when_it_is_this_runs_attempt() -> None:
    """A controller ownerReference is easy to copy (UIDs are readable): a Job at the attempt's name that names
    the ScheduledJob as its controller is adopted only when it also carries this run's idempotency key,
    scheduled time and attempt; otherwise it is reported as unexpected (and never adopted as the run)."""
    annotations = {"sundial.dev/idempotency-key": "k-1", "sundial.dev/scheduled-time": "2026-03-01T02:30:00Z",
                   "sundial.dev/attempt": "1", "sundial.dev/trigger": "schedule"}  # fmt: skip
    manifest = {"metadata": {"name": "j", "annotations": annotations}}
    owner = [{"kind": "ScheduledJob", "uid": "sj", "controller": True}]

    async def outcome(found: dict[str, str]) -> results.CreateResult:
        api, _ = _api()
        api._wire = _Wire(_Response(409, b'{"kind": "Status", "code": 409, "reason": "AlreadyExists"}'))
        existing = {"metadata": {"name": "j", "ownerReferences": owner, "annotations": found}}

        async def get_job(**_: Any) -> dict[str, Any]:
            return existing

        api.get_job = get_job  # type: ignore[method-assign]
        return await api.create_job(namespace="ns", manifest=manifest, owner_uid="sj")

    assert isinstance(await outcome(annotations), results.Adopted)
    assert isinstance(await outcome(annotations | {"sundial.dev/trigger": "manual"}), results.Adopted)
    assert await outcome(annotations | {"sundial.dev/idempotency-key": "forged"}) == results.Unexpected(owner_uid="sj")
    assert await outcome({}) == results.Unexpected(owner_uid="sj")
