"""The fencing proofs of :mod:`sundial.runtime.coordination.proofs`, run for a :class:`Leadership`'s shards on
the lease loop (docs/fencing.md, DESIGN §11.3, §12.2).

:class:`Prover` starts, from any thread, at most one confirmation and one probe per shard at a time:

* :meth:`Prover.fenced` — a write was refused under a shard's token: confirm it by a fresh Lease read;
* :meth:`Prover.acquired` — a shard was acquired: probe enforcement (an admitted probe is sent again after
  pauses: the policy may not have seen a new Lease yet);
* :meth:`Prover.periodically` — every ``period`` a shard held all along is probed again (once: that Lease is
  not new), so a policy or binding deleted after the acquire sets ``sundial_fencing_enforced`` to 0;
* :meth:`Prover.lost` — a shard no longer held: its gauge goes (the holder reports a shard, the alert reads it).

The log line and the Warning Event of a probe are written only when its result changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from sundial.runtime.coordination import proofs
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.serving.metrics import Metrics


class Prover:
    """Confirmations and probes of ELECTORS' shards through FENCING (None: refusals stop acting at once)."""

    def __init__(
        self,
        electors: Sequence[LeaseElector],
        *,
        fencing: proofs.FencingApi | None,
        policy: str,
        period: float,
        metrics: Metrics | None,
        clock: Callable[[], float],
    ) -> None:
        self._electors = electors
        self._fencing = fencing
        self._policy = policy
        self._period = period
        self._metrics = metrics
        self._clock = clock
        self.loop: asyncio.AbstractEventLoop | None = None
        """The lease loop (where the work runs), once :meth:`sundial.runtime.coordination.leadership.Leadership.run`
        runs; confirmations before it stop acting at once."""
        self._background: dict[tuple[str, int], concurrent.futures.Future[object]] = {}
        self._probed_at: dict[int, float] = {}  # monotonic time of each held shard's last probe
        self._enforced: dict[int, bool] = {}  # each shard's last probe result

    def fenced(self, shard: int) -> None:
        """Confirm a refusal on SHARD (:func:`proofs.confirm`); without a fencing API or a loop, stop acting."""
        loop = self.loop
        if self._fencing is None or loop is None or loop.is_closed():
            self._electors[shard].stop()
            return
        work = proofs.confirm(self._electors[shard], self._fencing, shard=shard, metrics=self._metrics)
        self._in_background(loop, ("confirm", shard), work)

    def acquired(self, shard: int) -> None:
        """Probe SHARD just acquired (call on the lease loop)."""
        self._probe(shard, pauses=proofs.PROBE_PAUSES)

    def periodically(self, now: float) -> None:
        """Probe again each shard held whose last probe is at least a period old (call on the lease loop)."""
        for shard, elector in enumerate(self._electors):
            if not elector.holding:
                self._probed_at.pop(shard, None)
            elif now - self._probed_at.get(shard, now) >= self._period:
                self._probe(shard, pauses=())

    def lost(self, shard: int) -> None:
        """SHARD is no longer held: its gauge goes (only a holder reports a shard)."""
        if self._metrics is not None:
            with contextlib.suppress(KeyError):
                self._metrics.fencing.enforced.remove(str(shard))

    async def settle(self) -> None:
        """Wait for the confirmations and probes started so far (tests)."""
        for future in list(self._background.values()):
            await asyncio.wrap_future(future)

    def _probe(self, shard: int, *, pauses: Sequence[float]) -> None:
        if self._fencing is None or not self._policy:
            return
        self._probed_at[shard] = self._clock()
        work = self._noted(
            shard,
            proofs.probe(
                self._electors[shard],
                self._fencing,
                shard=shard,
                policy=self._policy,
                metrics=self._metrics,
                pauses=pauses,
                previous=self._enforced.get(shard),
            ),
        )
        self._in_background(asyncio.get_running_loop(), ("probe", shard), work)

    async def _noted(self, shard: int, probing: Coroutine[Any, Any, bool | None]) -> bool | None:
        enforced = await probing
        if enforced is not None:
            self._enforced[shard] = enforced
        return enforced

    def _in_background(
        self, loop: asyncio.AbstractEventLoop, key: tuple[str, int], work: Coroutine[Any, Any, object]
    ) -> None:
        """Run ``work`` on ``loop`` (from any thread), at most one per ``key`` at a time."""
        running = self._background.get(key)
        if running is not None and not running.done():
            work.close()
            return
        self._background[key] = asyncio.run_coroutine_threadsafe(work, loop)
