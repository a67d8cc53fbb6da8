"""Who may read ``/metrics`` (``--metrics-auth``): the API server decides, as kube-rbac-proxy does.

A scrape must carry ``Authorization: Bearer <token>``. The token is checked with a ``TokenReview``
(authentication.k8s.io/v1); the user it names is then checked with a ``SubjectAccessReview``
(authorization.k8s.io/v1) for ``get`` on the non-resource URL ``/metrics`` — what the ClusterRole
``<fullname>-metrics-reader`` of the chart grants. No token, or one the API server does not accept: 401;
an authenticated user without that permission: 403; the API server not answering: 503 (not cached).

Decisions are cached by a hash of the token (never the token itself) for :data:`ALLOW_TTL` seconds when
allowed and :data:`DENY_TTL` when refused, at most :data:`MAX_ENTRIES` of them, so a scrape every few seconds
costs two API calls a minute (counted in ``sundial_api_requests_total``; the calls themselves are
:mod:`sundial.kube.reviews`). The operator needs ``create`` on ``tokenreviews`` and ``subjectaccessreviews``.

The metrics port stays plain HTTP: a scraper's token crosses the pod network in the clear, so pair this with
the chart's NetworkPolicy (or a mesh with mTLS) and give the scraper a token that can do nothing but this.
"""

from __future__ import annotations

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
#: Review calls per second (a bucket of their own: scrapes never spend the operator's --qps).
REVIEW_QPS = 5.0
REVIEW_BURST = 10
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
    ) -> None:
        self._reviews = reviews
        self._monotonic = monotonic
        self._ttl = {True: allow_ttl, False: deny_ttl}
        self._max = max_entries
        self._cache: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()

    async def verdict(self, headers: Mapping[str, str]) -> Verdict:
        token = bearer_token(headers)
        if token is None:
            return Verdict.UNAUTHENTICATED
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            verdict = await self._decide(token)
        except Exception as error:  # any failure to review is "cannot decide now"
            logger.warning("cannot review a /metrics client: %s", type(error).__name__)
            return Verdict.UNAVAILABLE
        self._remember(key, verdict, now)
        return verdict

    async def _decide(self, token: str) -> Verdict:
        user = await self._reviews.authenticate(token)
        if user is None:
            return Verdict.UNAUTHENTICATED
        allowed = await self._reviews.authorize(user, path=METRICS_PATH, verb=VERB)
        return Verdict.ALLOWED if allowed else Verdict.FORBIDDEN

    def _remember(self, key: str, verdict: Verdict, now: float) -> None:
        self._cache[key] = (now + self._ttl[verdict is Verdict.ALLOWED], verdict)
        self._cache.move_to_end(key)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)


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
        bucket = ratelimits.TokenBucket(rate=REVIEW_QPS, burst=REVIEW_BURST)
        requester = requests.Requester(bucket=bucket, observer=observer)
        self._api = ReviewsApi(api_client=api_client, requester=requester, timeout=REQUEST_TIMEOUT)

    async def authenticate(self, token: str) -> User | None:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        review = await self._api.create_token_review(body)
        return user_from(review.get("status") or {})

    async def authorize(self, user: User, *, path: str, verb: str) -> bool:
        review = await self._api.create_subject_access_review(access_review(user, path=path, verb=verb))
        return bool((review.get("status") or {}).get("allowed"))
