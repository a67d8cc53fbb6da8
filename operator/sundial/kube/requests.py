"""Every API request goes through :class:`Requester`: token bucket first, then timing and classification."""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

from sundial.kube import errors, ratelimits

T = TypeVar("T")

#: Seconds before a single request is abandoned (then classified as transient).
REQUEST_TIMEOUT = 10.0

#: A check run right before a request is sent, after the token bucket let it through (under load that wait
#: lasts seconds). The reconciler sets "do I still hold the shard's Lease?" around its writes: a check made
#: before the wait is stale once the process was paused during it (SIGSTOP, a frozen VM, a long GC), and a
#: resumed zombie would otherwise send writes queued here after another replica took over (DESIGN §7.3,
#: found by the chaos harness). Raising aborts the request before anything is sent. Set with :func:`guarded`.
SEND_GUARD: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "sundial_send_guard", default=None
)


@contextlib.contextmanager
def guarded(check: Callable[[], None] | None) -> Iterator[None]:
    """Run CHECK as the :data:`SEND_GUARD` of every request made inside the block (None: no check); the
    previous guard is back once the block is left, however it is left."""
    token = SEND_GUARD.set(check)
    try:
        yield
    finally:
        SEND_GUARD.reset(token)


class ApiObserver(Protocol):
    """Metrics hook: one call per finished request. ``code`` is the HTTP code, or ``"error"``."""

    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None: ...


class NullObserver:
    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        return None


#: The ``code`` label of a request the fencing policy refused (a 403 that is no RBAC refusal).
FENCED_CODE = "fenced"


class Requester:
    """Rate-limits, times and classifies API requests."""

    def __init__(
        self,
        *,
        bucket: ratelimits.TokenBucket,
        observer: ApiObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._bucket = bucket
        self._observer: ApiObserver = observer or NullObserver()
        self._clock = clock

    async def call(self, *, verb: str, resource: str, request: Callable[[], Awaitable[T]], ok: int = 200) -> T:
        """Run ``request`` once. A failure raises as :func:`errors.classify` made it (a :class:`errors.KubeError`)."""
        await self._bucket.acquire()
        guard = SEND_GUARD.get()
        if guard is not None:
            guard()
        started = self._clock()
        try:
            result = await request()
        except Exception as error:
            classified = errors.classify(error)
            code = str(classified.code) if classified is not None and classified.code else "error"
            if isinstance(classified, errors.FencedError):
                code = FENCED_CODE  # the fencing policy's refusal is not an RBAC one (also the enforcement probe's)
            self._observer.observe(verb=verb, resource=resource, code=code, seconds=self._clock() - started)
            if classified is None:
                raise
            raise classified from None  # the ApiException quotes the response body: values unredacted
        self._observer.observe(verb=verb, resource=resource, code=str(ok), seconds=self._clock() - started)
        return result
