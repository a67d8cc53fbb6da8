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


# --- owners: the garbage collector removes the Leases with the install (docs/install.md, "Uninstall") --------

SA_UID, POD_UID = "5a5a5a5a-0000-4000-8000-000000000001", "90d90d90-0000-4000-8000-000000000002"
POD_TOKEN_USER = {
    "username": "system:serviceaccount:sundial-system:sundial-operator",
    "uid": SA_UID,
    "groups": ["system:serviceaccounts", "system:serviceaccounts:sundial-system", "system:authenticated"],
    "extra": {leases.POD_NAME_KEY: ["sundial-7d9f-abcde"], leases.POD_UID_KEY: [POD_UID]},
}
SA_REF = {"apiVersion": "v1", "kind": "ServiceAccount", "name": "sundial-operator", "uid": SA_UID}
POD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "sundial-7d9f-abcde", "uid": POD_UID}


def test_a_pod_bound_token_names_the_service_account_and_the_pod_as_owners() -> None:
    assert leases.owner_references(POD_TOKEN_USER, "sundial-system") == {
        leases.Owner.SERVICE_ACCOUNT: SA_REF,
        leases.Owner.POD: POD_REF,
    }


@pytest.mark.parametrize(
    ("user", "namespace", "expected"),
    [
        (POD_TOKEN_USER, "elsewhere", {}),  # a namespaced owner in another namespace: the GC would delete at once
        ({"username": "admin", "groups": ["system:masters"]}, "sundial-system", {}),  # a kubeconfig's user
        ({**POD_TOKEN_USER, "extra": {}}, "sundial-system", {leases.Owner.SERVICE_ACCOUNT: SA_REF}),  # TokenRequest
        ({**POD_TOKEN_USER, "uid": ""}, "sundial-system", {leases.Owner.POD: POD_REF}),
    ],
    ids=["leases in another namespace", "not a service account", "a token bound to no pod", "no uid"],
)
def test_owners_are_only_what_the_garbage_collector_can_resolve(
    user: dict[str, Any], namespace: str, expected: dict[leases.Owner, dict[str, str]]
) -> None:
    assert leases.owner_references(user, namespace) == expected


def test_owner_references_survive_a_round_trip_through_the_body() -> None:
    record = LeaseRecord("me", 15, AT, AT, 3, owners=(SA_REF,))
    body = leases.body_from(namespace="ns", name="sundial-shard-0", record=record)
    assert body["metadata"]["ownerReferences"] == [SA_REF]
    assert leases.record_from(body) == record


class _Authentication:
    """The generated AuthenticationV1Api: answers a SelfSubjectReview with ``user``, or raises ``errors``."""

    def __init__(self, user: dict[str, Any], failures: list[ApiException] | None = None) -> None:
        self.user = user
        self.failures = list(failures or [])
        self.calls = 0

    async def create_self_subject_review(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.calls += 1
        assert body["kind"] == "SelfSubjectReview"
        if self.failures:
            raise self.failures.pop(0)
        return {**body, "status": {"userInfo": self.user}}


OWNERS = {"sundial-shard-0": leases.Owner.SERVICE_ACCOUNT, "sundial-member-abc": leases.Owner.POD}


def _owned_api(auth: _Authentication, clock: list[float] | None = None) -> tuple[leases.KubeLeaseApi, _Coordination]:
    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    now = clock if clock is not None else [0.0]
    api = leases.KubeLeaseApi(api_client=_Client(), requester=requester, owners=OWNERS, clock=lambda: now[0])
    fake = _Coordination()
    api._api = fake
    api._auth = auth
    return api, fake


def _sent_owners(fake: _Coordination) -> list[list[dict[str, str]] | None]:
    return [body["metadata"].get("ownerReferences") for body in fake.sent]


async def test_shard_leases_are_owned_by_the_service_account_and_the_member_lease_by_its_pod() -> None:
    auth = _Authentication(POD_TOKEN_USER)
    api, fake = _owned_api(auth)
    record = LeaseRecord("me", 15, AT, AT, 0, "5")
    await api.create(namespace="sundial-system", name="sundial-shard-0", record=record)
    await api.replace(namespace="sundial-system", name="sundial-shard-0", record=record)
    await api.create(namespace="sundial-system", name="sundial-member-abc", record=record)
    await api.replace(namespace="sundial-system", name="somebody-elses", record=record)
    assert _sent_owners(fake) == [[SA_REF], [SA_REF], [POD_REF], None]
    assert auth.calls == 1  # who this replica is does not change: asked once


async def test_without_a_service_account_the_leases_get_no_owner_and_the_review_is_not_repeated() -> None:
    auth = _Authentication({"username": "admin", "groups": ["system:masters"]})
    api, fake = _owned_api(auth)
    for _ in range(3):
        await api.replace(namespace="sundial-system", name="sundial-shard-0", record=RECORD)
    assert _sent_owners(fake) == [None, None, None] and auth.calls == 1


async def test_an_api_server_without_self_subject_reviews_is_asked_once() -> None:
    auth = _Authentication(POD_TOKEN_USER, failures=[ApiException(status=404, reason="NotFound")])
    api, fake = _owned_api(auth)
    for _ in range(3):
        await api.replace(namespace="sundial-system", name="sundial-shard-0", record=RECORD)
    assert _sent_owners(fake) == [None, None, None] and auth.calls == 1


async def test_a_failed_review_keeps_the_owners_the_lease_had_and_is_tried_again_a_minute_later() -> None:
    clock = [100.0]
    auth = _Authentication(POD_TOKEN_USER, failures=[ApiException(status=503, reason="ServiceUnavailable")])
    api, fake = _owned_api(auth, clock)
    other = {**SA_REF, "uid": "written-by-another-replica"}
    held = LeaseRecord("me", 15, AT, AT, 2, "5", owners=(other,))
    await api.replace(namespace="sundial-system", name="sundial-shard-0", record=held)
    clock[0] += leases.OWNER_RETRY_SECONDS - 1
    await api.replace(namespace="sundial-system", name="sundial-shard-0", record=held)
    assert auth.calls == 1  # no second review within the minute: a renewal never waits for one
    clock[0] += 1
    await api.replace(namespace="sundial-system", name="sundial-shard-0", record=held)
    assert _sent_owners(fake) == [[other], [other], [SA_REF]] and auth.calls == 2


class _Dates:
    def __init__(self) -> None:
        self.seen: list[tuple[datetime, datetime, datetime]] = []
        self.now = datetime(2026, 3, 1, 13, 0, 0, tzinfo=UTC)

    def wallclock(self) -> datetime:
        return self.now

    def observe(self, *, sent: datetime, received: datetime, date: datetime) -> None:
        self.seen.append((sent, received, date))


async def test_a_list_tells_the_servers_date_header_to_the_clock_check() -> None:
    dates = _Dates()
    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    api = leases.KubeLeaseApi(api_client=_Client(), requester=requester, dates=dates)

    class _Listing:
        async def list_namespaced_lease_with_http_info(self, namespace: str, **_: Any) -> Any:
            return {"items": []}, 200, {"Date": "Sun, 01 Mar 2026 12:00:00 GMT"}

    api._api = _Listing()
    assert await api.list(namespace="ns") == {}
    assert dates.seen == [(dates.now, dates.now, datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC))]


def test_an_unreadable_date_header_is_none() -> None:
    assert leases.header_date({"Date": "yesterday"}) is None
    assert leases.header_date({}) is None
    assert leases.header_date({"date": "Sun, 01 Mar 2026 12:00:00 GMT"}) == datetime(2026, 3, 1, 12, tzinfo=UTC)
