"""Who may read ``/metrics`` (``--metrics-auth``): the API server decides, as kube-rbac-proxy does.

A scrape must carry ``Authorization: Bearer <token>``. The token is checked with a ``TokenReview``
(authentication.k8s.io/v1); the user it names is then checked with a ``SubjectAccessReview``
(authorization.k8s.io/v1) for ``get`` on the non-resource URL ``/metrics`` — what the ClusterRole
``<fullname>-metrics-reader`` of the chart grants. No token, or one the API server does not accept: 401;
an authenticated user without that permission: 403; the API server not answering: 503 (not cached).

Decisions are cached by a hash of the token (never the token itself): allowed ones for :data:`ALLOW_TTL`
seconds, at most :data:`MAX_ENTRIES`; refused ones (401/403) for :data:`DENY_TTL` seconds in a cache of their
own, at most :data:`MAX_DENIED`. A client sending random tokens churns only the refused cache: it can never
push a scraper's allowed entry out. A scrape every few seconds costs two API calls a minute (counted in
``sundial_api_requests_total``; the calls themselves are :mod:`sundial.kube.reviews`). The operator needs
``create`` on ``tokenreviews`` and ``subjectaccessreviews``.

Reviews (cache misses) draw from a bucket of their own (:data:`REVIEW_RATE` per second, :data:`REVIEW_BURST`)
that never goes into debt: when it is empty the request is answered 503 at once, without an API call and
without waiting, so a flood of unknown tokens costs at most that rate of reviews and delays nobody (a scraper
whose entry expired during a flood may see a 503 and scrape again). Concurrent requests with the same
uncached token share one review.

With ``--metrics-auth`` the metrics port serves HTTPS (:mod:`sundial.runtime.serving.metricstls`): a
scraper's token does not cross the pod network in the clear. Give the scraper a token that can do nothing
but this.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sundial.kube import ratelimits, requests
from sundial.kube.reviews import ReviewsApi

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"
VERB = "get"
ALLOW_TTL = 60.0
DENY_TTL = 10.0
MAX_ENTRIES = 1024
"""Allowed decisions kept (one per scraper token: a few in practice)."""
MAX_DENIED = 256
"""Refused decisions kept, apart from the allowed ones (random tokens only ever evict each other)."""
#: Reviews (cache misses) per second, and their burst: a bucket of their own that never goes into debt.
REVIEW_RATE = 2.5
REVIEW_BURST = 5
#: API calls per second of the reviews (two per review: TokenReview, SubjectAccessReview); never the --qps.
REVIEW_QPS = 2 * REVIEW_RATE
REQUEST_TIMEOUT = 5.0
BEARER = "bearer "


class Verdict(enum.IntEnum):
    """The HTTP status of a decision."""

    ALLOWED = 200
    UNAUTHENTICATED = 401
    FORBIDDEN = 403
    UNAVAILABLE = 503


@dataclasses.dataclass(frozen=True, kw_only=True)
class User:
    """Who a TokenReview says a token belongs to."""

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


class Reviews(Protocol):
    """The two review calls. ``authenticate``: the user, or None when the token is not accepted.
    Either may raise (API unreachable, refused): the request is then answered 503."""

    async def authenticate(self, token: str) -> User | None: ...

    async def authorize(self, user: User, *, path: str, verb: str) -> bool: ...


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer`` header, or None."""
    value = headers.get("Authorization", "")
    if value[: len(BEARER)].lower() != BEARER:
        return None
    token = value[len(BEARER) :].strip()
    return token or None


class MetricsAccess:
    """Decides, and caches, whether a bearer token may read ``/metrics``."""

    def __init__(
        self,
        *,
        reviews: Reviews,
        monotonic: Callable[[], float] = time.monotonic,
        allow_ttl: float = ALLOW_TTL,
        deny_ttl: float = DENY_TTL,
        max_entries: int = MAX_ENTRIES,
        max_denied: int = MAX_DENIED,
        review_rate: float = REVIEW_RATE,
        review_burst: int = REVIEW_BURST,
    ) -> None:
        self._reviews = reviews
        self._monotonic = monotonic
        self._allowed = _Expiring(ttl=allow_ttl, size=max_entries)
        self._denied = _Expiring(ttl=deny_ttl, size=max_denied)
        self._bucket = ratelimits.TokenBucket(rate=review_rate, burst=review_burst, clock=monotonic)
        self._pending: dict[str, asyncio.Future[Verdict]] = {}

    async def verdict(self, headers: Mapping[str, str]) -> Verdict:
        token = bearer_token(headers)
        if token is None:
            return Verdict.UNAUTHENTICATED
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._monotonic()
        cached = self._allowed.get(key, now) or self._denied.get(key, now)
        if cached is not None:
            return cached
        pending = self._pending.get(key)
        if pending is not None:  # the same token is being reviewed: share that review
            return await asyncio.shield(pending)
        if self._bucket.available < 1:  # no debt: refuse now, at no cost
            return Verdict.UNAVAILABLE
        self._bucket.reserve()
        review = asyncio.get_running_loop().create_future()
        self._pending[key] = review
        try:
            verdict = await self._review(token)
            if verdict is not Verdict.UNAVAILABLE:
                (self._allowed if verdict is Verdict.ALLOWED else self._denied).put(key, verdict, now)
            review.set_result(verdict)
        finally:
            del self._pending[key]
            if not review.done():
                review.set_result(Verdict.UNAVAILABLE)
        return verdict

    async def _review(self, token: str) -> Verdict:
        try:
            user = await self._reviews.authenticate(token)
            if user is None:
                return Verdict.UNAUTHENTICATED
            allowed = await self._reviews.authorize(user, path=METRICS_PATH, verb=VERB)
        except Exception as error:  # any failure to review is "cannot decide now" (not cached)
            logger.warning("cannot review a /metrics client: %s", type(error).__name__)
            return Verdict.UNAVAILABLE
        return Verdict.ALLOWED if allowed else Verdict.FORBIDDEN


class _Expiring:
    """Verdicts by token hash, each for ``ttl`` seconds; the oldest written is evicted beyond ``size``."""

    def __init__(self, *, ttl: float, size: int) -> None:
        self._ttl, self._size = ttl, size
        self._entries: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def hashes(self) -> list[str]:
        return list(self._entries)

    def get(self, key: str, now: float) -> Verdict | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= now:
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: str, verdict: Verdict, now: float) -> None:
        self._entries[key] = (now + self._ttl, verdict)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


def user_from(status: Mapping[str, Any]) -> User | None:
    """The user of a TokenReview's ``status`` (None: not authenticated)."""
    if not status.get("authenticated"):
        return None
    user = status.get("user") or {}
    extra = {str(k): tuple(v or ()) for k, v in (user.get("extra") or {}).items()}
    return User(
        username=str(user.get("username") or ""),
        uid=str(user.get("uid") or ""),
        groups=tuple(user.get("groups") or ()),
        extra=extra,
    )


def access_review(user: User, *, path: str, verb: str) -> dict[str, Any]:
    """The SubjectAccessReview body asking whether USER may VERB the non-resource URL PATH."""
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user.username,
            "uid": user.uid,
            "groups": list(user.groups),
            "extra": {k: list(v) for k, v in user.extra.items()},
            "nonResourceAttributes": {"path": path, "verb": verb},
        },
    }


class KubeReviews:
    """:class:`Reviews` through the API server (:class:`sundial.kube.reviews.ReviewsApi`), in a bucket of
    their own."""

    def __init__(self, *, api_client: Any, observer: requests.ApiObserver | None = None) -> None:
        bucket = ratelimits.TokenBucket(rate=REVIEW_QPS, burst=2 * REVIEW_BURST)
        requester = requests.Requester(bucket=bucket, observer=observer)
        self._api = ReviewsApi(api_client=api_client, requester=requester, timeout=REQUEST_TIMEOUT)

    async def authenticate(self, token: str) -> User | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        review = await self._api.create_token_review(body)
        return user_from(review.get("status") or {})

    async def authorize(self, user: User, *, path: str, verb: str) -> bool:
        review = await self._api.create_subject_access_review(access_review(user, path=path, verb=verb))
        return bool((review.get("status") or {}).get("allowed"))
