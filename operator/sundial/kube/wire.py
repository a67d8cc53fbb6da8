"""The hot writes (a Job POST, a status PATCH) sent with bodies Sundial serialises itself.

The generated client walks every body it is given (``sanitize_for_serialization``: a recursive copy of the
whole manifest) and serialises it with the standard library's ``json``; in a herd of 2,000 Job POSTs that was
6% of the operator's CPU at the instant (docs/benchmarks.md). :class:`Wire` sends the same request on the
generated client's own session (the same connections, TLS settings, trace hooks and credentials, the bearer
token read the way the generated client reads it, so a rotated ServiceAccount token is used as soon as it is
rotated), with the body encoded once by orjson. The response is what the generated client returns with
``_preload_content=False`` (an aiohttp response): :func:`sundial.kube.objects.raw_json` reads it and raises the
generated client's exception for a non-2xx answer, so classification is unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import aiohttp
import orjson

from sundial.kube import compat

logger = logging.getLogger(__name__)

JSON = "application/json"
#: What a warm-up asks for: the API server's version, which any client may read and which costs it least.
WARM_PATH = "/version"
MERGE_PATCH = "application/merge-patch+json"


def path(*parts: str) -> str:
    """An API path from its segments, each quoted (names never contain ``/``, but a path is built safely)."""
    return "/" + "/".join(quote(part, safe="") for part in parts)


class Wire:
    """Sends a request whose JSON body is encoded here, on the generated client's session."""

    def __init__(self, api_client: Any) -> None:
        self._client = api_client

    async def send(
        self,
        method: str,
        api_path: str,
        body: Mapping[str, Any] | bytes | None = None,
        *,
        content_type: str = JSON,
        timeout: float | aiohttp.ClientTimeout,
        query: Mapping[str, str] | None = None,
    ) -> aiohttp.ClientResponse:
        """Send; the answer's headers are read, its body is not (a watch streams it). TIMEOUT: seconds for
        the whole request, or an aiohttp timeout (a watch's: no total, a bound on each read)."""
        client = self._client
        headers: dict[str, str] = dict(client.default_headers)
        headers["Accept"] = JSON
        if body is not None:
            headers["Content-Type"] = content_type
        await client.update_params_for_auth(headers, [], ["BearerToken"])
        rest = client.rest_client
        extra: dict[str, Any] = {}
        if getattr(rest, "proxy", None):
            extra["proxy"] = rest.proxy
        if getattr(rest, "proxy_headers", None):
            extra["proxy_headers"] = rest.proxy_headers
        if getattr(rest, "server_hostname", None):
            extra["server_hostname"] = rest.server_hostname
        if body is not None:
            extra["data"] = body if isinstance(body, bytes) else orjson.dumps(body)
        if query:
            extra["params"] = dict(query)
        return await compat.session_of(client).request(
            method,
            client.configuration.host + api_path,
            headers=headers,
            timeout=timeout if isinstance(timeout, aiohttp.ClientTimeout) else aiohttp.ClientTimeout(total=timeout),
            **extra,
        )

    async def warm(self, count: int) -> None:
        """Have COUNT connections open (TCP and TLS done): COUNT GETs of :data:`WARM_PATH` at once. Outside the
        rate limiter (they would take tokens from the burst they prepare for); failures only cost the warm-up."""

        held: list[aiohttp.ClientResponse] = []

        async def one() -> None:
            response = await self.send("GET", WARM_PATH, timeout=10.0)
            held.append(response)  # read only once all are answered: no request reuses another's connection

        try:
            outcomes = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
        finally:
            for response in held:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    await response.read()
                response.release()
        failed = [outcome for outcome in outcomes if outcome]
        if failed:
            logger.debug("warming %d connections: %d failed (%s)", count, len(failed), failed[0])
