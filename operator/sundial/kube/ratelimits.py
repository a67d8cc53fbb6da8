"""The client-side token bucket that keeps the operator under ``--qps`` with bursts up to ``--burst``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class TokenBucket:
    """A token bucket on an injected monotonic clock.

    Tokens refill continuously at ``rate`` per second up to ``burst``. :meth:`reserve` takes one token now
    (possibly going into debt) and says how long the caller must wait before using it — the same contract
    as Go's ``rate.Limiter.Reserve``: callers are served in reservation order, never starved.
    """

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be > 0 and burst >= 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._updated = clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self._burst, self._tokens + elapsed * self._rate)
        self._updated = now

    def reserve(self) -> float:
        """Take one token; return the seconds to wait before it may be used (0 when one was available)."""
        self._refill()
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self._rate

    @property
    def available(self) -> float:
        """Tokens available right now (negative while callers wait)."""
        self._refill()
        return self._tokens

    async def acquire(self) -> None:
        """Wait (without blocking the event loop) until a token is ours."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
