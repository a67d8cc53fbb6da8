"""ONE loop that sleeps until the earliest due time (or a change), then reconciles due keys.

Due keys go through a :class:`FairQueue` (round-robin across namespaces first, then ``spec.priority``
with ageing within a namespace) and run with bounded concurrency (a semaphore). The priority of a key is asked of
``priority_of`` (the store keeps it beside the deflated object, so nothing is decoded for it). A key is
never reconciled twice at once: a change that arrives while it is in flight marks it dirty, and it is
queued again as soon as the running pass ends.

The low-priority lane (DESIGN §7.5) holds the keys whose last pass left a status write that may wait
(``owes_write``: a prepared run whose Job was created at its instant, a reservation to write). They are served,
oldest first and with at most half the concurrency at once, only when no due key waits and no due pass runs -
after the last create of the instant has its answer *and* the operator's own Job watch has delivered every Job
it created (``awaiting_watch``, :mod:`sundial.runtime.watch.unseen`), so the lane's status writes never compete
with a herd's tail at the API server (docs/benchmarks.md measured them at 17% of its CPU there when the lane
opened with an eighth of the concurrency still in due passes) - or once they have waited :data:`LANE_MAX_WAIT`. A Job
event (a ``soft`` touch) of a key in the lane leaves it there: its lane pass sees the change (often the Job's
completion, written in the same write). Any other change, and the key's own wake-up, serve it at once.

A key whose owed write only records a prepared run's start while its Job runs (``held_until``) is *held* before
the lane: a Job event moves it to the lane (its pass writes the start with the completion, or holds it again
while the Job still runs), and so does its hold's end; any other change, and its own wake-up, serve it at once.
So the run's start and its completion are one status write when the Job ends within the hold (DESIGN §7.5).

:data:`PREPARE_AHEAD` before an instant, the keys due then are planned ahead (``prepare``: the reconciler keeps a
pass whose plan at its instant is its Jobs' creates alone, rendered and encoded,
:mod:`sundial.runtime.acting.ahead`), in the background, a few at a time, stopping when the instant comes: at the
instant such a pass sends its Job POSTs without planning again.

:data:`WARM_AHEAD` before an instant at which many keys are due, ``warm`` opens as many connections as passes
will run at once: the instant's Job POSTs then start on open connections (an idle client's close after seconds,
and a TCP and TLS handshake each cost the operator and the API server CPU at the worst moment).

From planning ahead (or warming up) for an instant at which many keys are due until that instant's due passes are
done, the cyclic garbage collector is paused (``collector``, :mod:`sundial.runtime.dispatch.collector`): its full
collections stopped the loop for 150-250 ms inside a herd.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sundial.kube import errors
from sundial.runtime.dispatch.collector import Collector
from sundial.runtime.dispatch.dueindex import DueIndex
from sundial.runtime.dispatch.fairness import FairQueue
from sundial.runtime.fencing import NotActingError
from sundial.runtime.watch.store import Key

logger = logging.getLogger(__name__)

#: Longest single sleep, so a wall-clock jump is noticed within this long.
MAX_SLEEP = 30.0
#: Backoff after a failed pass (transient API trouble that outlived in-pass retries, a bug).
ERROR_BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
#: The lane's passes take at most 1/LANE_SHARE of the concurrency at once (and start only while no due pass runs).
LANE_SHARE = 2
#: A key waits in the lane at most this long; then it is served with the due keys. Longer than a herd's tail
#: (2,000 runs due at once took 12 s at full size: with 10 s here the first runs' writes competed with its last
#: creates), short enough that ``kubectl get`` shows a run as active soon after its Job.
LANE_MAX_WAIT = timedelta(seconds=30)

#: Connections are warmed this long before an instant at which many keys are due (their TCP and TLS handshakes
#: are done, on both ends, well before the instant's first POST; at 1 s the herd benchmark's profile, from 2 s
#: before the instant, found the warm-up's connects in 7% of the operator's samples)...
WARM_AHEAD = timedelta(seconds=3)
#: ... when at least this many are due within WARM_AHEAD after it (one connection per pass that may run at once)...
WARM_MIN = 16
#: ... and no warm-up happened this recently (its connections are still open: aiohttp keeps idle ones 15 s). The
#: warm-ups' GETs bypass the rate limiter; this bounds them, whatever instants a tenant's objects pick.
WARM_EVERY = timedelta(seconds=15)

#: Keys due within this long are planned ahead of their instant (``prepare``)...
PREPARE_AHEAD = timedelta(seconds=5)
#: ... at most this many each time (the reconciler keeps at most :data:`sundial.runtime.acting.ahead.LIMIT`)...
PREPARE_MAX = 4096
#: ... yielding to the loop after each this many.
PREPARE_CHUNK = 16

ReconcileFn = Callable[[Key], Awaitable[datetime | None]]
PrepareFn = Callable[[Key, datetime], bool]
"""Plans a key's pass as of its due time, still ahead, and keeps it if it may be used then."""
WarmFn = Callable[[int], Awaitable[None]]
"""Opens that many connections to the API server (best effort: it never raises)."""


class Dispatcher:
    def __init__(
        self,
        *,
        reconcile: ReconcileFn,
        max_concurrency: int,
        clock: Callable[[], datetime],
        on_index_size: Callable[[int], None] = lambda size: None,
        priority_of: Callable[[Key], int] = lambda key: 0,
        owes_write: Callable[[Key], bool] = lambda key: False,
        held_until: Callable[[Key], datetime | None] = lambda key: None,
        awaiting_watch: Callable[[], float] = lambda: 0.0,
        warm: WarmFn | None = None,
        prepare: PrepareFn | None = None,
        collector: Collector | None = None,
    ) -> None:
        self._reconcile = reconcile
        self._clock = clock
        self._on_index_size = on_index_size
        self._priority_of = priority_of
        self.index: DueIndex[Key] = DueIndex()
        self.queue = FairQueue(clock=clock)
        self._slots = asyncio.Semaphore(max_concurrency)
        self._wakeup = asyncio.Event()
        self._owes_write = owes_write
        self._held_until = held_until
        self._awaiting_watch = awaiting_watch
        self._holds: DueIndex[Key] = DueIndex()
        """Held keys (their owed write waits for a Job event), by the end of their hold."""
        self._inflight: set[Key] = set()
        self._dirty: dict[Key, bool] = {}
        """Keys changed while in flight: True when a change other than a Job event came (see ``touch``)."""
        self._lane: dict[Key, datetime] = {}
        """Keys in the low-priority lane, oldest first, with the time they entered it."""
        self._lane_slots = max(1, max_concurrency // LANE_SHARE)
        self._lane_running = 0
        self._failures: dict[Key, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._max_concurrency = max_concurrency
        self._warm = warm
        self._warmed: datetime | None = None
        """The due time looked at for a warm-up last."""
        self._warmed_at: datetime | None = None
        """When the last warm-up started."""
        self._prepare = prepare
        self._prepared_until: datetime | None = None
        """Keys due up to this time were given to ``prepare`` (or were not, past :data:`PREPARE_MAX`)."""
        self._collector = collector
        """Paused from planning ahead (or warming up) for a crowded instant until its due passes are done."""

    # Signals from the informers and the leases ---------------------------------------------------

    def touch(self, key: Key, *, soft: bool = False) -> None:
        """Something about ``key`` changed: reconcile it as soon as possible. ``soft`` (one of its Jobs changed):
        a key in the low-priority lane stays there - its lane pass sees the change."""
        if key in self._inflight:
            self._dirty[key] = self._dirty.get(key, False) or not soft
        elif soft and key in self._lane:
            pass  # still woken: the lane may open now that the watch has seen this Job (``awaiting_watch``)
        elif soft and key in self._holds:  # one of its Jobs changed (perhaps ended): its owed write may go now
            self._holds.discard(key)
            self._lane.setdefault(key, self._clock())
        else:
            self.index.advance(key, self._clock())
        self._wakeup.set()

    def forget(self, key: Key) -> None:
        self.index.discard(key)
        self._lane.pop(key, None)
        self._holds.discard(key)
        self._failures.pop(key, None)

    # The loop --------------------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                self._wakeup.clear()
                now = self._clock()
                for due in self.index.pop_due(now):
                    self.queue.push(due, priority=self._priority_of(due))
                for held in self._holds.pop_due(now):
                    self._lane.setdefault(held, now)
                self._promote(now)
                while len(self.queue) and not self._slots.locked():
                    key = self.queue.pop()
                    if key is None:
                        break
                    if key in self._inflight:
                        self._dirty[key] = True
                        continue
                    self._lane.pop(key, None)
                    await self._start(key, lane=False)
                self._resume_collector(now)
                await self._serve_lane()
                upcoming = self.index.next_due()
                self._prepare_before(upcoming)
                self._warm_before(upcoming)
                self._on_index_size(len(self.index))
                await self._sleep(stopping)
        finally:
            if self._collector is not None:
                self._collector.resume()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _start(self, key: Key, *, lane: bool) -> None:
        await self._slots.acquire()
        self._inflight.add(key)
        self._holds.discard(key)  # its pass decides again
        self._lane_running += lane
        task = asyncio.create_task(self._one(key, lane=lane), name=f"reconcile {key[0]}/{key[1]}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _promote(self, now: datetime) -> None:
        """Lane keys that waited :data:`LANE_MAX_WAIT` are served with the due keys."""
        while self._lane:  # oldest first: stop at the first that has not waited long enough
            key, since = next(iter(self._lane.items()))
            if now - since < LANE_MAX_WAIT:
                return
            del self._lane[key]
            self.queue.push(key, priority=self._priority_of(key))

    def _resume_collector(self, now: datetime) -> None:
        """The paused collector runs again once its instant's due passes are done (none waits, none runs)."""
        collector = self._collector
        if collector is None or not collector.paused:
            return
        done = collector.until is not None and now >= collector.until and not len(self.queue)
        if collector.overdue(now) or (done and len(self._inflight) == self._lane_running):
            collector.resume()

    def _lane_open(self) -> bool:
        """The lane may start a pass: no due key waits, no due pass runs, a lane slot and a slot are free, and
        the operator's own Job watch has seen every Job it created (``awaiting_watch``)."""
        due_running = len(self._inflight) - self._lane_running
        return (
            not len(self.queue)
            and due_running == 0
            and self._lane_running < self._lane_slots
            and not self._slots.locked()
            and self._awaiting_watch() <= 0
        )

    async def _serve_lane(self) -> None:
        while self._lane and self._lane_open():
            key = next(iter(self._lane))
            del self._lane[key]
            if key not in self._inflight:  # else its running pass decides again whether it owes a write
                await self._start(key, lane=True)

    def _prepare_before(self, due: datetime | None) -> None:
        """PREPARE_AHEAD before an instant: plan the keys due until PREPARE_AHEAD from now ahead, in the background
        (each key once per due time)."""
        now = self._clock()
        if self._prepare is None or due is None or due - now > PREPARE_AHEAD:
            return
        if self._prepared_until is not None and due <= self._prepared_until:
            return
        since, self._prepared_until = self._prepared_until, now + PREPARE_AHEAD
        items = self.index.due_between(since, self._prepared_until, limit=PREPARE_MAX)
        if len(items) >= WARM_MIN and self._collector is not None:
            self._collector.pause(now, until=max(at for _, at in items))
        if items:
            task = asyncio.ensure_future(self._prepare_all(items))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _prepare_all(self, items: list[tuple[Key, datetime]]) -> None:
        """Plan ITEMS (earliest first) ahead, a few at a time; stop once the first of them is due (from then on the
        loop's passes have the CPU)."""
        assert self._prepare is not None
        first = items[0][1]
        for done, (key, at) in enumerate(items, start=1):
            if self._clock() >= first:
                return
            if key not in self._inflight and self.index.due_at(key) == at:  # still due then, not running now
                try:
                    self._prepare(key, at)
                except Exception:  # a pass at the instant plans it as ever: never let this end the loop
                    logger.warning("planning %s/%s ahead failed", key[0], key[1], exc_info=True)
            if done % PREPARE_CHUNK == 0:
                await asyncio.sleep(0)

    def _warm_before(self, due: datetime | None) -> None:
        """WARM_AHEAD before an instant at which WARM_MIN or more keys are due, open as many connections as
        passes will run at once (``warm``), so the instant's Job POSTs do not each start with a TCP and TLS
        handshake: an idle client's connections close after seconds."""
        if self._warm is None or due is None or due == self._warmed or due - self._clock() > WARM_AHEAD:
            return
        self._warmed = due
        now = self._clock()
        if self._warmed_at is not None and now - self._warmed_at < WARM_EVERY:
            return
        count = self.index.count_until(due + WARM_AHEAD, limit=self._max_concurrency)
        if count >= WARM_MIN:
            if self._collector is not None:
                self._collector.pause(now, until=due)
            self._warmed_at = now
            task = asyncio.ensure_future(self._warm(count))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _sleep(self, stopping: asyncio.Event) -> None:
        if len(self.queue):  # waiting for a free slot: a finishing pass sets the wakeup
            timeout = MAX_SLEEP
        else:
            due = self.index.next_due()
            timeout = MAX_SLEEP if due is None else (due - self._clock()).total_seconds()
            if (
                due is not None
                and self._prepare is not None
                and not (self._prepared_until is not None and due <= self._prepared_until)
            ):
                timeout -= PREPARE_AHEAD.total_seconds()  # wake to plan the instant's keys ahead
            elif due is not None and self._warm is not None and due != self._warmed:
                timeout -= WARM_AHEAD.total_seconds()  # wake to warm the connections first
            timeout = min(max(timeout, 0.0), MAX_SLEEP)
        if self._lane:  # the oldest lane key's promotion (a finishing pass wakes the lane sooner)
            oldest = next(iter(self._lane.values()))
            timeout = min(timeout, max((oldest + LANE_MAX_WAIT - self._clock()).total_seconds(), 0.0))
            awaited = self._awaiting_watch()  # a watch event wakes the loop; this is for one that never comes
            if awaited > 0:
                timeout = min(timeout, awaited)
        held = self._holds.next_due()
        if held is not None:
            timeout = min(timeout, max((held - self._clock()).total_seconds(), 0.0))
        if timeout <= 0:
            await asyncio.sleep(0)
            return
        waiter = asyncio.ensure_future(self._wakeup.wait())
        stopper = asyncio.ensure_future(stopping.wait())
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait({waiter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        stopper.cancel()

    async def _one(self, key: Key, *, lane: bool) -> None:
        wake: datetime | None = None
        failed = False
        try:
            wake = await self._reconcile(key)
            self._failures.pop(key, None)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            failed = True
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
            delay = ERROR_BACKOFF[min(failures, len(ERROR_BACKOFF) - 1)]
            logger.warning(
                "reconcile %s/%s failed (retry in %.0fs): %s",
                key[0],
                key[1],
                delay,
                error,
                exc_info=not _is_expected(error),
            )
            wake = self._clock() + timedelta(seconds=delay)
        finally:
            self._inflight.discard(key)
            self._lane_running -= lane
            self._slots.release()
            self._wakeup.set()
        self._after(key, wake, failed=failed)

    def _after(self, key: Key, wake: datetime | None, *, failed: bool) -> None:
        """Where KEY goes after a pass: the lane (it owes a status write; not after a failure, which backs off),
        at once (it changed meanwhile), its wake-up, or nowhere."""
        hard = self._dirty.pop(key, None)
        if not failed and self._owes_write(key):
            until = self._held_until(key)
            if until is not None and hard is None and until > self._clock():
                self._holds.set(key, until)  # a Job event or the hold's end moves it to the lane
            else:  # a Job event came during the pass: its lane pass sees it
                self._lane.setdefault(key, self._clock())
        if hard or (hard is not None and key not in self._lane):
            self.index.advance(key, self._clock())
        elif wake is not None:
            self.index.set(key, wake)
        else:
            self.index.discard(key)


def _is_expected(error: Exception) -> bool:
    """API trouble and lost leases are expected in operation: logged without a traceback."""
    return isinstance(error, errors.KubeError | NotActingError)
