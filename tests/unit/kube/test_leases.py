"""Lease records, their (de)serialisation and the compare-and-set calls (the generated client replaced by a fake)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiException

from sundial.kube import errors, leases, ratelimits, requests, results
from sundial.kube.leases import LeaseRecord

AT = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
RECORD = LeaseRecord(holder="me", duration_seconds=15, acquire_time=AT, renew_time=AT, transitions=3)


def test_a_record_survives_a_round_trip_through_its_body() -> None:
    body = leases.body_from(namespace="ns", name="sundial-shard-0", record=RECORD)
    assert body["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-03-01T12:00:00.123456Z",
        "renewTime": "2026-03-01T12:00:00.123456Z",
        "leaseTransitions": 3,
    }
    assert "resourceVersion" not in body["metadata"]
    assert leases.record_from(body) == RECORD


def test_the_resource_version_goes_into_the_metadata_for_compare_and_set() -> None:
    body = leases.body_from(namespace="ns", name="l", record=LeaseRecord(None, 1, None, None, 0, "42"))
    assert body["metadata"] == {"name": "l", "namespace": "ns", "resourceVersion": "42"}
    assert body["spec"]["holderIdentity"] is None and body["spec"]["renewTime"] is None


def test_an_empty_spec_reads_as_a_lease_nobody_holds() -> None:
    assert leases.record_from({"metadata": {"resourceVersion": "7"}}) == LeaseRecord(None, 0, None, None, 0, "7")
    assert leases.record_from({"spec": {"holderIdentity": ""}}).holder is None


def test_naive_times_from_the_client_are_read_as_utc() -> None:
    record = leases.record_from(
        {"spec": {"renewTime": datetime(2026, 3, 1, 12), "acquireTime": "2026-03-01T11:00:00Z"}}
    )
    assert record.renew_time == datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert record.acquire_time == datetime(2026, 3, 1, 11, tzinfo=UTC)


class _Client:
    def sanitize_for_serialization(self, value: Any) -> Any:
        return value


class _Coordination:
    """The generated CoordinationV1Api: returns the body it was sent, or raises ``error``."""

    def __init__(self, error: ApiException | None = None) -> None:
        self.error = error
        self.sent: list[dict[str, Any]] = []

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        self.sent.append(body)
        return {**body, "metadata": {**body["metadata"], "resourceVersion": "9"}}

    async def read_namespaced_lease(self, name: str, namespace: str, **_: Any) -> dict[str, Any]:
        return self._answer(leases.body_from(namespace=namespace, name=name, record=RECORD))

    async def create_namespaced_lease(self, namespace: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        return self._answer(body)

    async def replace_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> Any:
        return self._answer(body)


def _api(
    error: ApiException | None = None, labels: dict[str, dict[str, str]] | None = None
) -> tuple[leases.KubeLeaseApi, _Coordination]:
    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    api = leases.KubeLeaseApi(api_client=_Client(), requester=requester, labels=labels)
    fake = _Coordination(error)
    api._api = fake
    return api, fake


async def test_create_sends_no_resource_version_and_returns_the_stored_record() -> None:
    api, fake = _api()
    created = await api.create(namespace="ns", name="l", record=LeaseRecord("me", 15, AT, AT, 0, "5"))
    assert "resourceVersion" not in fake.sent[0]["metadata"]
    assert created == LeaseRecord("me", 15, AT, AT, 0, "9")


async def test_replace_carries_the_resource_version_it_was_given() -> None:
    api, fake = _api()
    assert await api.replace(namespace="ns", name="l", record=LeaseRecord("me", 15, AT, AT, 0, "5")) is not None
    assert fake.sent[0]["metadata"]["resourceVersion"] == "5"


async def test_the_shard_leases_carry_their_label_on_every_write() -> None:
    api, fake = _api(labels={"sundial-shard-1": {"sundial.dev/shard-lease": "1"}})
    record = LeaseRecord("me", 15, AT, AT, 0, "5")
    await api.create(namespace="ns", name="sundial-shard-1", record=record)
    await api.replace(namespace="ns", name="sundial-shard-1", record=record)
    await api.replace(namespace="ns", name="sundial-member-abc", record=record)
    assert [body["metadata"].get("labels") for body in fake.sent] == [
        {"sundial.dev/shard-lease": "1"},
        {"sundial.dev/shard-lease": "1"},
        None,
    ]


@pytest.mark.parametrize(
    ("call", "status"),
    [("create", 409), ("replace", 409), ("replace", 404)],
    ids=["a create that finds the Lease there", "a stale update", "an update of a deleted Lease"],
)
async def test_a_lost_compare_and_set_is_a_conflict(call: str, status: int) -> None:
    api, _ = _api(ApiException(status=status, reason="Conflict"))
    write = api.create if call == "create" else api.replace
    assert isinstance(await write(namespace="ns", name="l", record=RECORD), results.Conflict)


async def test_get_of_a_missing_lease_is_none_and_other_errors_are_raised() -> None:
    api, _ = _api(ApiException(status=404, reason="NotFound"))
    assert await api.get(namespace="ns", name="l") is None
    api, _ = _api(ApiException(status=403, reason="Forbidden"))
    with pytest.raises(errors.KubeError):
        await api.get(namespace="ns", name="l")
