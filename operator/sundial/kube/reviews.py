"""TokenReview (authentication.k8s.io/v1) and SubjectAccessReview (authorization.k8s.io/v1): the two
``create`` calls by which :mod:`sundial.runtime.serving.access` lets the API server decide who may read
``/metrics``. Bodies, caching and the calls' own rate limit are the runtime's; only the requests are here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes_asyncio import client

from sundial.kube import objects, requests


class ReviewsApi:
    """Creates reviews through ``requester`` (the caller's bucket); each call gives up after ``timeout`` s."""

    def __init__(self, *, api_client: Any, requester: requests.Requester, timeout: float) -> None:
        self._authn = client.AuthenticationV1Api(api_client)
        self._authz = client.AuthorizationV1Api(api_client)
        self._requester = requester
        self._timeout = timeout

    async def _create(
        self, resource: str, call: Callable[..., Awaitable[Any]], body: Mapping[str, Any]
    ) -> dict[str, Any]:
        def request() -> Awaitable[dict[str, Any]]:
            return objects.raw_json(call(dict(body), _request_timeout=self._timeout, _preload_content=False))

        return await self._requester.call(verb="create", resource=resource, request=request, ok=201)

    async def create_token_review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The TokenReview as the API server answered it (its ``status`` says who the token belongs to)."""
        return await self._create("tokenreviews", self._authn.create_token_review, body)

    async def create_subject_access_review(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The SubjectAccessReview as the API server answered it (its ``status.allowed`` is the answer)."""
        return await self._create("subjectaccessreviews", self._authz.create_subject_access_review, body)
