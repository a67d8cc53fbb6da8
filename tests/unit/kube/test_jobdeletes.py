"""Fenced Job deletes (``ObjectsApi.delete_job`` → :mod:`sundial.kube.jobdeletes`): the request sequence sent to
the generated client (a scripted recorder, no API server; the real one: tests/e2e/chaos/test_fencing.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from sundial.kube import errors, jobdeletes, objects, ratelimits, requests, results
from sundial.model import names

UID = "u-1"
DENIAL = (
    "jobs.batch \"job\" is forbidden: ValidatingAdmissionPolicy 'sundial-fencing' with binding 'sundial-fencing' "
    "denied request: sundial.dev/fenced: fencing token 3-8-x is older than Lease sundial-shard-3"
)


def _status(code: int, reason: str, message: str = "") -> bytes:
    return json.dumps({"kind": "Status", "code": code, "reason": reason, "message": message}).encode()


def _job(*, rv: str, label: str | None = "3", uid: str = UID) -> bytes:
    labels = {names.SHARD_LABEL: label} if label is not None else {}
    return json.dumps({"metadata": {"name": "job", "uid": uid, "resourceVersion": rv, "labels": labels}}).encode()


class _Response:
    """An aiohttp response, as the generated client returns it with ``_preload_content=False``."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status, self._body, self.reason = status, body, ""
        self.headers = {"Content-Type": "application/json"}

    async def read(self) -> bytes:
        return self._body

    def release(self) -> None:
        pass


class _Batch:
    """Answers each call from its script (status codes and bodies) and records what was sent."""

    def __init__(
        self, *, deletes: Sequence[int] = (200,), patches: Sequence[_Response] = (), reads: Sequence[_Response] = ()
    ) -> None:
        self.deletes, self.patches, self.reads = list(deletes), list(patches), list(reads)
        self.calls: list[tuple[str, Any]] = []

    async def delete_namespaced_job(self, name: str, namespace: str, *, body: dict[str, Any], **_: Any) -> None:
        assert body["propagationPolicy"] == "Background"
        self.calls.append(("delete", body["preconditions"]))
        code = self.deletes.pop(0)
        if code != 200:
            error = objects.ApiException(status=code, reason="x")
            error.body = _status(code, {404: "NotFound", 409: "Conflict"}[code]).decode()
            raise error

    async def patch_namespaced_job(self, name: str, namespace: str, body: dict[str, Any], **options: Any) -> Any:
        assert options["_content_type"] == "application/merge-patch+json"
        assert options["_preload_content"] is False  # the resourceVersion is read from the raw answer
        self.calls.append(("patch", body["metadata"]))
        return self.patches.pop(0)

    async def read_namespaced_job(self, name: str, namespace: str, **_: Any) -> Any:
        self.calls.append(("read", name))
        return self.reads.pop(0)


async def _delete(batch: _Batch, **how: str) -> results.DeleteResult:
    api = objects.ObjectsApi(
        api_client=object(), requester=requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    )
    api._batch = batch
    return await api.delete_job(namespace="ns", name="job", uid=UID, **how)


def _relabel(shard: str = "3", token: str = "t") -> tuple[str, Any]:
    annotations = {"annotations": {names.FENCING_TOKEN_ANNOTATION: token}} if token else {}
    return ("patch", {"uid": UID, "labels": {names.SHARD_LABEL: shard}, **annotations})


async def test_a_job_already_labelled_with_the_owners_shard_is_deleted_bound_to_the_version_seen() -> None:
    batch = _Batch()
    assert await _delete(batch, resource_version="7", label="3", shard="3", token="t") == results.Done()
    assert batch.calls == [("delete", {"uid": UID, "resourceVersion": "7"})]


@pytest.mark.parametrize("label", ["7", ""])  # stale after a --shards change; absent (or not known)
async def test_another_label_is_set_under_the_token_and_the_delete_bound_to_what_the_patch_wrote(label: str) -> None:
    batch = _Batch(patches=[_Response(200, _job(rv="42"))])
    assert await _delete(batch, resource_version="7", label=label, shard="3", token="t") == results.Done()
    assert batch.calls == [_relabel(), ("delete", {"uid": UID, "resourceVersion": "42"})]


async def test_without_a_token_the_label_alone_and_without_a_shard_no_relabel() -> None:
    batch = _Batch(patches=[_Response(200, _job(rv="42"))])
    assert await _delete(batch, label="7", shard="3") == results.Done()
    assert batch.calls == [_relabel(token=""), ("delete", {"uid": UID, "resourceVersion": "42"})]
    batch = _Batch()
    assert await _delete(batch, label="7") == results.Done()
    assert batch.calls == [("delete", {"uid": UID})]


async def test_a_relabel_the_fencing_policy_refuses_sends_no_delete() -> None:
    batch = _Batch(patches=[_Response(403, _status(403, "Forbidden", DENIAL))])
    with pytest.raises(errors.ForbiddenError, match=r"sundial\.dev/fenced:"):
        await _delete(batch, label="7", shard="3", token="3-8-x")
    assert batch.calls == [_relabel(token="3-8-x")]


@pytest.mark.parametrize(("code", "expected"), [(404, results.Done(existed=False)), (409, results.Conflict())])
async def test_a_relabel_of_a_gone_or_replaced_job_sends_no_delete(code: int, expected: results.DeleteResult) -> None:
    batch = _Batch(patches=[_Response(code, _status(code, "NotFound" if code == 404 else "Conflict"))])
    assert await _delete(batch, label="7", shard="3", token="t") == expected
    assert batch.calls == [_relabel()]


async def test_a_job_that_changed_since_it_was_seen_is_read_again_and_decided_on_what_the_read_shows() -> None:
    """A 409 (a running Job's status moved, or another replica relabelled it): read it again; still the same
    Job, so relabel again if its label is not the owner's shard now, and delete bound to the new version."""
    batch = _Batch(
        deletes=[409, 409, 200],
        patches=[_Response(200, _job(rv="43"))],
        reads=[_Response(200, _job(rv="9", label="3")), _Response(200, _job(rv="12", label="5"))],
    )
    assert await _delete(batch, resource_version="7", label="3", shard="3", token="t") == results.Done()
    assert batch.calls == [
        ("delete", {"uid": UID, "resourceVersion": "7"}),
        ("read", "job"),
        ("delete", {"uid": UID, "resourceVersion": "9"}),
        ("read", "job"),
        _relabel(),
        ("delete", {"uid": UID, "resourceVersion": "43"}),
    ]


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        (_Response(404, _status(404, "NotFound")), results.Done(existed=False)),
        (_Response(200, _job(rv="9", uid="u-2")), results.Conflict()),  # a same-named successor: never deleted
    ],
)
async def test_after_a_409_a_gone_or_replaced_job_is_not_deleted(
    read: _Response, expected: results.DeleteResult
) -> None:
    batch = _Batch(deletes=[409], reads=[read])
    assert await _delete(batch, resource_version="7", label="3", shard="3", token="t") == expected
    assert batch.calls == [("delete", {"uid": UID, "resourceVersion": "7"}), ("read", "job")]


async def test_a_job_that_keeps_changing_is_a_conflict_after_a_bounded_number_of_deletes() -> None:
    batch = _Batch(deletes=[409] * jobdeletes.ATTEMPTS, reads=[_Response(200, _job(rv="9"))] * jobdeletes.ATTEMPTS)
    assert await _delete(batch, resource_version="7", label="3", shard="3", token="t") == results.Conflict()
    assert [call[0] for call in batch.calls].count("delete") == jobdeletes.ATTEMPTS
    assert [call[0] for call in batch.calls].count("read") == jobdeletes.ATTEMPTS - 1


async def test_a_job_gone_before_the_delete_existed_no_more() -> None:
    batch = _Batch(deletes=[404])
    assert await _delete(batch, resource_version="7", label="3", shard="3") == results.Done(existed=False)
