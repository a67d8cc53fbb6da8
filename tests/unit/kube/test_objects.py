"""ObjectsApi request bodies (no API server: the generated client is replaced by a recorder)."""

from __future__ import annotations

from typing import Any

from sundial.kube import objects, ratelimits, requests, results


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


async def test_delete_job_with_an_empty_uid_has_no_precondition() -> None:
    # An empty precondition UID never matches a real Job (409 forever): "" means "whatever has this name".
    api, batch = _api()
    assert isinstance(await api.delete_job(namespace="ns", name="job", uid=""), results.Done)
    assert batch.calls == [("ns", "job", {"propagationPolicy": "Background"})]
