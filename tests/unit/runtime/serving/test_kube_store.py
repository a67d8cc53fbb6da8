"""The rotator's and the access check's API seams (:class:`certrotators.KubeStore`, :class:`access.KubeReviews`)
on the calls of :mod:`sundial.kube.certstore` and :mod:`sundial.kube.reviews`; the generated clients are fakes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sundial.kube import errors, ratelimits, requests
from sundial.runtime.serving import access, certificates, certrotators

MANAGED = certrotators.ManagedCertificate(
    secret_namespace="ns",
    secret_name="cert",
    webhook_configuration="hook",
    names=certificates.SubjectNames(dns=("svc.ns.svc",), ips=()),
)


class _Response:
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.reason, self.headers = status, "", {}
        self._data = json.dumps(body).encode()

    async def read(self) -> bytes:
        return self._data

    def release(self) -> None:
        return None


class _Generated:
    """Each method records its call and answers from ``answers`` (a status and a body) by method name."""

    def __init__(self, **answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, method: str) -> Any:
        async def call(*args: Any, **_: Any) -> _Response:
            self.calls.append((method, args))
            status, body = self.answers.get(method, (200, {}))
            return _Response(status, body)

        return call


def _requester() -> requests.Requester:
    return requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))


def _store(core: _Generated, admission: _Generated) -> certrotators.KubeStore:
    store = certrotators.KubeStore(api_client=object(), requester=_requester(), managed=MANAGED)
    store._api._core, store._api._admission = core, admission
    return store


async def test_a_missing_secret_reads_as_none_and_is_created() -> None:
    core = _Generated(read_namespaced_secret=(404, {"reason": "NotFound"}), create_namespaced_secret=(201, {}))
    store = _store(core, _Generated())
    assert await store.read_secret() is None
    assert await store.write_secret({"metadata": {"name": "cert"}, "data": {}})
    assert [method for method, _ in core.calls] == ["read_namespaced_secret", "create_namespaced_secret"]


async def test_a_stale_secret_write_is_a_lost_race_and_other_failures_raise() -> None:
    core = _Generated(replace_namespaced_secret=(409, {"reason": "Conflict"}))
    store = _store(core, _Generated())
    assert not await store.write_secret({"metadata": {"name": "cert", "resourceVersion": "7"}})
    assert core.calls[0][1][:2] == ("cert", "ns")
    core.answers["replace_namespaced_secret"] = (403, {"reason": "Forbidden", "message": "no"})
    with pytest.raises(errors.ForbiddenError):
        await store.write_secret({"metadata": {"name": "cert", "resourceVersion": "7"}})


async def test_the_ca_bundle_is_patched_where_it_differs_and_a_missing_configuration_is_named() -> None:
    configuration = {"webhooks": [{"name": "a", "clientConfig": {"caBundle": "OLD"}}]}
    admission = _Generated(read_validating_webhook_configuration=(200, configuration))
    store = _store(_Generated(), admission)
    assert await store.set_ca_bundle("NEW") == 1
    assert admission.calls[-1] == (
        "patch_validating_webhook_configuration",
        ("hook", certrotators.ca_bundle_patch(configuration, "NEW")),
    )
    admission.answers["read_validating_webhook_configuration"] = (404, {"reason": "NotFound"})
    with pytest.raises(certrotators.ConfigurationMissingError, match="hook does not exist"):
        await store.set_ca_bundle("NEW")


async def test_the_reviews_ask_the_api_server() -> None:
    reviews = access.KubeReviews(api_client=object())
    status = {"authenticated": True, "user": {"username": "bob"}}
    reviews._api._authn = _Generated(create_token_review=(201, {"status": status}))
    authz = _Generated(create_subject_access_review=(201, {"status": {"allowed": True}}))
    reviews._api._authz = authz
    user = await reviews.authenticate("t0ken")
    assert user == access.User(username="bob")
    assert await reviews.authorize(user, path="/metrics", verb="get")
    assert authz.calls[0][1][0] == access.access_review(user, path="/metrics", verb="get")


async def test_a_review_the_api_server_refuses_raises() -> None:
    reviews = access.KubeReviews(api_client=object())
    reviews._api._authn = _Generated(create_token_review=(500, {"reason": "InternalError"}))
    with pytest.raises(errors.TransientError):
        await reviews.authenticate("t0ken")
