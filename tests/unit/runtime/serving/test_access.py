"""``--metrics-auth``: bearer token → TokenReview → SubjectAccessReview (get /metrics), decisions cached by a
hash of the token; 401/403/503 from ``/metrics`` otherwise."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Counter

from sundial.runtime.serving import access, probes
from sundial.runtime.serving.access import MetricsAccess, User, Verdict

ALICE = User(username="system:serviceaccount:monitoring:prometheus", uid="u1", groups=("system:authenticated",))


class FakeReviews:
    def __init__(self, *, users: dict[str, User], allowed: set[str], broken: bool = False) -> None:
        self.users, self.allowed, self.broken = users, allowed, broken
        self.calls: list[tuple[str, Any]] = []

    async def authenticate(self, token: str) -> User | None:
        self.calls.append(("authenticate", token))
        if self.broken:
            raise ConnectionError("no API server")
        return self.users.get(token)

    async def authorize(self, user: User, *, path: str, verb: str) -> bool:
        self.calls.append(("authorize", (user.username, path, verb)))
        return user.username in self.allowed


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_bearer_token_is_read_from_the_authorization_header() -> None:
    assert access.bearer_token(_bearer("abc")) == "abc"
    assert access.bearer_token({"Authorization": "bearer  abc "}) == "abc"
    assert access.bearer_token({"Authorization": "Basic abc"}) is None
    assert access.bearer_token({"Authorization": "Bearer "}) is None
    assert access.bearer_token({}) is None


async def test_no_token_or_an_unknown_token_is_unauthenticated() -> None:
    reviews = FakeReviews(users={"good": ALICE}, allowed={ALICE.username})
    guard = MetricsAccess(reviews=reviews)
    assert await guard.verdict({}) is Verdict.UNAUTHENTICATED
    assert reviews.calls == []
    assert await guard.verdict(_bearer("bad")) is Verdict.UNAUTHENTICATED


async def test_an_authenticated_user_needs_get_on_the_metrics_url() -> None:
    reviews = FakeReviews(users={"good": ALICE}, allowed=set())
    assert await MetricsAccess(reviews=reviews).verdict(_bearer("good")) is Verdict.FORBIDDEN
    assert reviews.calls[-1] == ("authorize", (ALICE.username, "/metrics", "get"))
    reviews.allowed.add(ALICE.username)
    assert await MetricsAccess(reviews=reviews).verdict(_bearer("good")) is Verdict.ALLOWED


async def test_decisions_are_cached_allowed_longer_than_refused() -> None:
    clock = Clock()
    reviews = FakeReviews(users={"good": ALICE}, allowed={ALICE.username})
    guard = MetricsAccess(reviews=reviews, monotonic=clock, allow_ttl=60, deny_ttl=10)
    for _ in range(5):
        assert await guard.verdict(_bearer("good")) is Verdict.ALLOWED
    assert len(reviews.calls) == 2  # one TokenReview, one SubjectAccessReview
    clock.now += 61
    await guard.verdict(_bearer("good"))
    assert len(reviews.calls) == 4
    await guard.verdict(_bearer("bad"))
    clock.now += 5
    await guard.verdict(_bearer("bad"))
    assert len(reviews.calls) == 5
    clock.now += 6
    await guard.verdict(_bearer("bad"))
    assert len(reviews.calls) == 6


async def test_the_cache_keeps_no_token_and_is_bounded() -> None:
    reviews = FakeReviews(users={}, allowed=set())
    guard = MetricsAccess(reviews=reviews, max_entries=3, max_denied=3, review_burst=100)
    for index in range(10):
        await guard.verdict(_bearer(f"secret-{index}"))
    assert len(guard._denied) == 3 and len(guard._allowed) == 0
    assert not any("secret" in key for key in guard._denied.hashes())


async def test_random_tokens_cannot_flush_an_allowed_entry() -> None:
    clock = Clock()
    reviews = FakeReviews(users={"good": ALICE}, allowed={ALICE.username})
    guard = MetricsAccess(reviews=reviews, monotonic=clock, max_entries=2, max_denied=4, review_burst=10_000)
    assert await guard.verdict(_bearer("good")) is Verdict.ALLOWED
    for index in range(2_000):
        assert await guard.verdict(_bearer(f"random-{index}")) is Verdict.UNAUTHENTICATED
    calls = len(reviews.calls)
    assert await guard.verdict(_bearer("good")) is Verdict.ALLOWED
    assert len(reviews.calls) == calls, "the allowed entry was evicted by refused ones"
    assert len(guard._denied) == 4


async def test_an_empty_review_bucket_answers_unavailable_at_once_and_never_goes_into_debt() -> None:
    clock = Clock()
    reviews = FakeReviews(users={"good": ALICE}, allowed={ALICE.username})
    guard = MetricsAccess(reviews=reviews, monotonic=clock, review_rate=2.0, review_burst=3)
    verdicts = [await guard.verdict(_bearer(f"random-{index}")) for index in range(50)]
    assert verdicts[:3] == [Verdict.UNAUTHENTICATED] * 3
    assert set(verdicts[3:]) == {Verdict.UNAVAILABLE}
    assert len(reviews.calls) == 3, "a refused review made an API call"
    assert guard._bucket.available >= 0, "the bucket went into debt"
    clock.now += 0.5  # one review's worth of refill (2 per second): the next one is reviewed, not queued
    assert await guard.verdict(_bearer("good")) is Verdict.ALLOWED


async def test_concurrent_requests_with_one_uncached_token_share_one_review() -> None:
    gate = asyncio.Event()

    class SlowReviews(FakeReviews):
        async def authenticate(self, token: str) -> User | None:
            await gate.wait()
            return await super().authenticate(token)

    reviews = SlowReviews(users={"good": ALICE}, allowed={ALICE.username})
    guard = MetricsAccess(reviews=reviews, review_burst=1)
    waiting = [asyncio.create_task(guard.verdict(_bearer("good"))) for _ in range(5)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting) == [Verdict.ALLOWED] * 5
    assert len(reviews.calls) == 2


async def test_a_failed_review_is_unavailable_and_not_cached() -> None:
    reviews = FakeReviews(users={"good": ALICE}, allowed={ALICE.username}, broken=True)
    guard = MetricsAccess(reviews=reviews)
    assert await guard.verdict(_bearer("good")) is Verdict.UNAVAILABLE
    reviews.broken = False
    assert await guard.verdict(_bearer("good")) is Verdict.ALLOWED


def test_the_reviews_carry_the_whole_user() -> None:
    status = {
        "authenticated": True,
        "user": {"username": "bob", "uid": "7", "groups": ["g"], "extra": {"scopes": ["a", "b"]}},
    }
    user = access.user_from(status)
    assert user == User(username="bob", uid="7", groups=("g",), extra={"scopes": ("a", "b")})
    assert access.user_from({"authenticated": False}) is None
    review = access.access_review(user, path="/metrics", verb="get")
    assert review["spec"] == {
        "user": "bob",
        "uid": "7",
        "groups": ["g"],
        "extra": {"scopes": ["a", "b"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


async def _get(app: Any, headers: dict[str, str]) -> tuple[int, str, Any]:
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/metrics", headers=headers)
        return response.status, await response.text(), response.headers


async def test_the_metrics_endpoint_answers_only_allowed_clients() -> None:
    registry = CollectorRegistry()
    Counter("sundial_probe_total", "a counter", registry=registry).inc()
    reviews = FakeReviews(users={"good": ALICE, "other": User(username="eve")}, allowed={ALICE.username})
    app = probes.metrics_app(registry, access=MetricsAccess(reviews=reviews))
    status, text, headers = await _get(app, {})
    assert (status, headers["WWW-Authenticate"]) == (401, 'Bearer realm="sundial"')
    assert "sundial_probe_total" not in text
    status, text, _ = await _get(app, _bearer("other"))
    assert status == 403 and "may not get the non-resource URL /metrics" in text
    status, text, _ = await _get(app, _bearer("good"))
    assert status == 200 and "sundial_probe_total 1.0" in text


async def test_without_access_the_metrics_endpoint_is_open() -> None:
    status, _, _ = await _get(probes.metrics_app(CollectorRegistry()), {})
    assert status == 200
