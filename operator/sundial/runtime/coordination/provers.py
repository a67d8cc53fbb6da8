"""The fencing proofs of :mod:`sundial.runtime.coordination.proofs`, run for a :class:`Leadership`'s shards on
the lease loop (docs/fencing.md, DESIGN §11.3, §12.2).

:class:`Prover` starts, from any thread, at most one confirmation and one probe per shard at a time:

* :meth:`Prover.fenced` — a write was refused under a shard's token: confirm it by a fresh Lease read;
* :meth:`Prover.acquired` — a shard was acquired: probe enforcement (an admitted probe is sent again after
  pauses: the policy may not have seen a new Lease yet);
* :meth:`Prover.periodically` — every ``period`` a shard held all along is probed again (once: that Lease is
  not new), so a policy or binding deleted after the acquire sets ``sundial_fencing_enforced`` to 0;
* :meth:`Prover.changed` — the fencing policy or its binding was seen created, changed or deleted (the intake's
  informers, :mod:`sundial.runtime.watch.fencingpolicies`; from any thread): every held shard is probed again
  :data:`CHANGE_PROBE_DELAYS` after it, at most one such round per :data:`CHANGE_PROBE_INTERVAL` however many
  changes come, so the gauge follows a deleted or restored binding within seconds, not a probe period;
* :meth:`Prover.lost` — a shard no longer held: its gauge goes (the holder reports a shard, the alert reads it).

The log line and the Warning Event of a probe are written only when its result changes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import math
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from sundial.runtime.coordination import proofs
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.serving.metrics import Metrics

#: Seconds after a change of the fencing policy or its binding is seen at which every held shard is probed: the
#: API server's admission plugin takes up a policy change about a second after its own informer saw it (it
#: re-reads its policies every second), so the first round comes after that, and a second one in case the API
#: server was slower (a loaded one: the first round may still have seen the old policy).
CHANGE_PROBE_DELAYS: tuple[float, ...] = (1.5, 5.0)
#: At most one round of change probes per this many seconds, however many changes are seen.
CHANGE_PROBE_INTERVAL = 1.0


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
        change_delays: Sequence[float] = CHANGE_PROBE_DELAYS,
        change_interval: float = CHANGE_PROBE_INTERVAL,
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
        self._change_delays = tuple(change_delays)
        self._change_interval = change_interval
        self._change_rounds: list[float] = []  # loop times at which a round of change probes is asked for
        self._last_change_round = -math.inf
        self._after_changes: asyncio.Task[None] | None = None

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

    def changed(self) -> None:
        """The fencing policy or its binding was created, changed or deleted (call from any thread): probe every
        held shard again after each of the change delays. Before :attr:`loop` runs, nothing (the acquires probe)."""
        loop = self.loop
        if self._fencing is None or not self._policy or loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._ask_for_rounds)

    def _ask_for_rounds(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._change_rounds += [now + delay for delay in self._change_delays]
        if self._after_changes is None or self._after_changes.done():
            self._after_changes = loop.create_task(self._run_change_rounds(), name="fencing change probes")

    async def _run_change_rounds(self) -> None:
        """Each round asked for, no earlier than asked and at most one per change interval; a round answers every
        request due by its start (a late round still comes after the change it answers)."""
        loop = asyncio.get_running_loop()
        while self._change_rounds:
            start = max(min(self._change_rounds), self._last_change_round + self._change_interval)
            await asyncio.sleep(max(0.0, start - loop.time()))
            now = loop.time()
            self._last_change_round = now
            self._change_rounds = [due for due in self._change_rounds if due > now]
            for shard, elector in enumerate(self._electors):
                if elector.holding:
                    self._probe(shard, pauses=())

    async def close(self) -> None:
        """Stop the pending rounds of change probes (call on the lease loop before it ends: a round still waiting
        would be destroyed pending)."""
        task, self._after_changes = self._after_changes, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def lost(self, shard: int) -> None:
        """SHARD is no longer held: its gauge goes (only a holder reports a shard)."""
        if self._metrics is not None:
            with contextlib.suppress(KeyError):
                self._metrics.fencing.enforced.remove(str(shard))

    async def settle(self) -> None:
        """Wait for the confirmations and probes started so far (tests)."""
        if self._after_changes is not None:
            await self._after_changes
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
