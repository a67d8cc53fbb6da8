"""One planning pass for one ScheduledJob: plan → claim (status compare-and-set) → act (DESIGN §7).

The status write is the claim. A 409 means another writer moved first: the object is re-read from the
API (never the cache) and planned again, a bounded number of times. Only after the claim succeeds are
the plan's actions run, in order, each one preceded by the "do I still hold the shard?" check.

A prepared run (DESIGN §7.5) is the exception: at its instant, when the plan says its reservation (written
earlier, under this replica's token) is the claim, only its Job is created; the object then *owes* a status
write (:meth:`Reconciler.owes_write`), which the dispatcher's low-priority lane asks for after the due work of
the moment - that pass (``Context.lane``) records the start, merged with whatever else the object needs
written. A reservation that needs writing on its own waits in the same lane.

Every status write carries the replica's fencing token (``status.fencingToken``), as every Job and Event
does. Where the server-side fencing policy is installed, a write under a token older than the shard Lease
is refused (403, :class:`sundial.kube.errors.FencedError`): the pass stops, the refusal is counted
(``sundial_fenced_writes_total``) and coordination is told the shard is lost (``Acting.fenced``) — no dead
letter, no invalid-template handling; once the Lease is held again every object of the shard is re-planned.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sundial import model
from sundial.kube import results
from sundial.planner import actions
from sundial.planner.observed import ObservedJob
from sundial.planner.plans import Context, Plan
from sundial.runtime import fencing
from sundial.runtime.acting import ahead, faults
from sundial.runtime.acting.budgets import Budgets, NoBudgets
from sundial.runtime.acting.compiled import CompiledSpecs
from sundial.runtime.acting.effects import Effects
from sundial.runtime.acting.ports import EventSink, ReconcilerApi
from sundial.runtime.serving.metrics import FencedKind, Metrics, PassOutcome
from sundial.runtime.watch.store import Key, Store

logger = logging.getLogger(__name__)
T = TypeVar("T")

Planner = Callable[[model.ScheduledJob, Sequence[ObservedJob], Context], Plan]

#: Re-plans after a 409 (or an invalid template) before giving up this pass (the key is retried soon).
MAX_REPLANS = 5
#: When the replan budget is exhausted: try again this soon.
CONTENDED_RETRY = timedelta(seconds=1)


class Reconciler:
    def __init__(
        self,
        *,
        store: Store,
        api: ReconcilerApi,
        leadership: fencing.Acting,
        planner: Planner,
        events: EventSink,
        metrics: Metrics,
        clock: Callable[[], datetime],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        crash_after_claim: int = 0,
        crash_after_create: int = 0,
        prepared_runs: bool = True,
        hard_exit: Callable[[int], None] = faults.hard_exit,
        compiled: CompiledSpecs | None = None,
        budgets: Budgets | None = None,
    ) -> None:
        self._store = store
        self._api = api
        self._lead = leadership
        self._plan = planner
        self._metrics = metrics
        self._clock = clock
        self._effects = Effects(
            store=store, api=api, leadership=leadership, events=events, metrics=metrics, clock=clock, sleep=sleep
        )
        self._synthetic = self._effects.synthetic
        self.compiled = compiled or CompiledSpecs()
        """Parsed specs and compiled schedules/exclusions, per object (DESIGN §11.1)."""
        self.budgets = budgets or NoBudgets()  # the namespaces' catch-up and backfill budgets (DESIGN §11.1)
        self.unseen = self._effects.unseen
        """The Jobs created here that the Job watch has not delivered yet (the lane waits for them)."""
        self.prepared = ahead.Prepared()
        """Passes planned ahead of their instant (:meth:`prepare`)."""
        self._active: dict[Key, int] = {}
        self._active_total = 0
        self._owed: dict[Key, datetime | None] = {}  # owed writes, with how long each may be held (hold_until)
        self._prepared_runs = prepared_runs
        # TEST ONLY fault injection (Settings.test_crash_after_*): die between claim and create, and between a
        # prepared run's create and its deferred status write.
        self._crash = faults.CrashHooks(after_claim=crash_after_claim, after_create=crash_after_create, exit=hard_exit)

    def shard_of(self, key: Key) -> int | None:
        uid = self._store.uid(key)
        if uid is None:
            return None
        return fencing.shard_of(uid, self._lead.shards)

    def owes_write(self, key: Key) -> bool:
        """KEY's last pass left a status write for the low-priority lane (DESIGN §7.5)."""
        return key in self._owed

    def held_until(self, key: Key) -> datetime | None:
        """KEY's owed write records only a prepared run's start: it may wait for its Job's end until then."""
        return self._owed.get(key)

    def forget(self, key: Key) -> None:
        self._owed.pop(key, None)
        self.prepared.forget(key)
        self._synthetic.pop(key, None)
        self.compiled.forget(key)
        self.budgets.forget(key)
        self._active_total -= self._active.pop(key, 0)
        self._metrics.runs.active.set(self._active_total)

    async def reconcile(self, key: Key) -> datetime | None:
        """One pass. Returns when to plan again (None: only on a change, or not ours right now).

        Each pass counts once in ``sundial_reconciles_total``, labelled with how it ended.
        """
        try:
            outcome, wake_at = await self._pass(key)
        except Exception:
            self._metrics.passes.reconciles.labels(outcome=PassOutcome.FAILED.value).inc()
            raise
        finally:
            self.budgets.release(key)  # what a pass that did not end took and did not claim
        self._metrics.passes.reconciles.labels(outcome=outcome.value).inc()
        return wake_at

    async def _pass(self, key: Key) -> tuple[PassOutcome, datetime | None]:
        version = self._store.version(key)
        if version is None:
            self.forget(key)
            return PassOutcome.GONE, None
        # Owed writes are decided anew by every pass: one that ends early (not acting, gone, contended, failed)
        # owes nothing more - the next pass that acts records what is owed.
        lane = self._owed.pop(key, False) is not False
        shard = self.shard_of(key)
        if shard is None or not self._lead.acting(shard):
            return PassOutcome.NOT_ACTING, None
        claimed = False
        ready = self._ready(key, shard, version, lane=lane)
        body: dict[str, Any] | None = None  # decoded only when planned here (not for a pass planned ahead)
        for _ in range(MAX_REPLANS):
            if ready is not None:  # planned ahead of its instant, on the same inputs (runtime.acting.ahead)
                obj, plan, now, token, bodies = ready.obj, ready.plan, self._clock(), ready.token, ready.bodies
                ready = None
            else:
                body = body or self._store.scheduled_job(key)
                if body is None:
                    self.forget(key)
                    return PassOutcome.GONE, None
                obj = self.compiled.read(key, body)
                wait = self._recompile_wait(key, obj)
                if wait > 0:  # a calendar it names changed and the recompile budget is spent (DESIGN §12.2)
                    return PassOutcome.DEFERRED, self._clock() + timedelta(seconds=wait)
                context = self._context(key, shard, obj, lane=lane)
                plan = self._plan(obj, self._effects.observed(key), context)
                now, token, bodies = context.now, context.fencing_token, ()
            self.budgets.take(key, plan, now)  # at once: no other pass may count these tokens
            if plan.write_status:
                written = await self._write(key, shard, obj, plan, token)
                if written is None:
                    return PassOutcome.GONE, None
                body, wrote = written
                if not wrote:
                    continue  # 409: planned again on the object as the API has it now
                claimed = True
                self._count(obj.status, plan.status)
                version = str((body.get("metadata") or {}).get("resourceVersion") or "")
            if plan.write_status or plan.deferred:
                self._crash.claimed(plan)  # a claim write, or the reservation used at its instant
            if await self._effects.act(key, shard, obj, plan, version=version, bodies=bodies):
                continue  # a failed attempt was recorded (invalid template, squatted name): plan again
            prepared = self._owe(key, plan)
            self._settle(key, plan.status)
            wake = self.budgets.settle(key, plan, now)  # earlier if runs wait for the namespace's budget
            if claimed:
                return PassOutcome.CLAIMED, wake
            return (PassOutcome.PREPARED if prepared else PassOutcome.UNCHANGED), wake
        logger.warning("%s/%s: still contended after %d re-plans", key[0], key[1], MAX_REPLANS)
        return PassOutcome.CONTENDED, self._clock() + CONTENDED_RETRY

    def prepare(self, key: Key, at: datetime) -> bool:
        """Plan KEY's pass as of AT, its due time a few seconds ahead, and keep it when at AT it only creates
        Jobs (:mod:`sundial.runtime.acting.ahead`): the pass at AT then sends them without planning again."""
        if not self._prepared_runs or key in self._owed or key in self._synthetic:
            return False  # without a reservation to use, the instant's pass claims first: nothing to send alone
        shard = self.shard_of(key)
        body = self._store.scheduled_job(key)
        if body is None or shard is None or not self._lead.acting(shard):
            return False
        obj = self.compiled.read(key, body)
        if self._recompile_wait(key, obj) > 0:
            return False
        context = self._context(key, shard, obj, lane=False, now=at)
        observed = self._effects.observed(key)
        plan = self._plan(obj, observed, context)
        if not ahead.instant_only(plan):
            return False
        return self.prepared.keep(key, ahead.Ahead(
            at=at, version=obj.metadata.resource_version, jobs=ahead.fingerprint(observed), obj=obj, plan=plan,
            calendars=self._calendar_versions(key, obj), token=context.fencing_token, bodies=ahead.encoded(plan),
        ), now=self._clock())  # fmt: skip

    def _ready(self, key: Key, shard: int, version: str, *, lane: bool) -> ahead.Ahead | None:
        """KEY's pass planned ahead, if planning now would decide the same (else None: plan now)."""
        ready = self.prepared.take(key)
        if ready is None or lane or key in self._synthetic:
            return None
        usable = ready.usable(
            now=self._clock(), version=version,
            jobs=ahead.fingerprint(self._store.observed_jobs(key)), calendars=self._calendar_versions(key, ready.obj),
            token=self._lead.fencing_token(shard),
        )  # fmt: skip
        return ready if usable else None

    def _calendar_versions(self, key: Key, obj: model.ScheduledJob) -> Any:
        refs = obj.spec.calendar_refs if obj.spec is not None else ()
        return self._store.calendars.versions(key[0], refs)

    async def _write(
        self, key: Key, shard: int, obj: model.ScheduledJob, plan: Plan, token: str
    ) -> tuple[dict[str, Any], bool] | None:
        """Write the plan's status (compare-and-set): (the object as stored, True), or on a 409 (the object as
        the API has it now, False); None when the object is gone."""
        self._lead.check(shard)
        status = model.resource.dump_status(plan.status.model_copy(update={"fencing_token": token}))
        written = await self._effects.retrying(
            shard,
            functools.partial(
                self._api.write_status,
                namespace=key[0],
                name=key[1],
                resource_version=obj.metadata.resource_version,
                status=status,
            ),
            kind=FencedKind.STATUS,
        )
        if isinstance(written, results.Gone):
            return None
        if isinstance(written, results.Conflict):
            logger.debug("status conflict on %s/%s: re-reading from the API", *key)
            fresh = await self._effects.retrying(
                shard, lambda: self._api.get_scheduled_job(namespace=key[0], name=key[1])
            )
            if fresh is None:
                return None
            self._store.keep_newer(fresh, read_version=obj.metadata.resource_version)
            return self._store.view(fresh), False  # planned as kept: slim, or a stub if too large
        self.budgets.commit(key)
        body = self._store.view(written.body)
        self._store.keep_newer(body, read_version=obj.metadata.resource_version)
        return body, True

    def _owe(self, key: Key, plan: Plan) -> bool:
        """After the plan's actions: does KEY owe a status write to the lane (DESIGN §7.5)? True when this pass
        created a prepared run's Job without writing first."""
        if plan.write_status or not plan.deferred:
            return False
        self._owed[key] = plan.hold_until
        if not any(isinstance(action, actions.CreateJob) for action in plan.actions):
            return False  # only a reservation to write
        self._crash.created_prepared()
        return True

    def _recompile_wait(self, key: Key, obj: model.ScheduledJob) -> float:
        return self.compiled.deferral(key, obj, self._calendar_versions(key, obj))

    def _context(
        self, key: Key, shard: int, obj: model.ScheduledJob, *, lane: bool, now: datetime | None = None
    ) -> Context:
        now = now or self._clock()
        refs = obj.spec.calendar_refs if obj.spec is not None else ()
        calendars = self._store.calendars.for_object(key[0], refs)
        versions = self._store.calendars.versions(key[0], refs)
        return Context(
            now=now,
            fencing_token=self._lead.fencing_token(shard),
            backlog_creates=self.budgets.available(key, now),
            calendars=calendars,
            compiled=self.compiled.compiled(key, obj, calendars, versions, now=now),
            lane=lane,
            prepared_runs=self._prepared_runs,
        )

    def _count(self, old: model.ScheduledJobStatus, new: model.ScheduledJobStatus) -> None:
        """Counters from the status deltas the claim just recorded."""
        for field, counter in self._metrics.runs.by_status_counter.items():
            counter.inc(max(0, getattr(new.counters, field.value) - getattr(old.counters, field.value)))

    def _settle(self, key: Key, status: model.ScheduledJobStatus) -> None:
        """After a complete pass: drop tombstones and synthetic Jobs the status no longer needs - its active runs'
        and its reservation's (until a write records a used one, DESIGN §7.5; a pass on an invalid spec keeps it)."""
        needed = {run.job for run in status.active} | ({status.reservation.job} if status.reservation else set())
        self._store.prune_tombstones(key, still_needed=needed)
        synthetic = self._synthetic.get(key)
        if synthetic:
            for name in [name for name in synthetic if name not in needed]:
                del synthetic[name]
            if not synthetic:
                del self._synthetic[key]
        # Only keys with active runs are kept, and the total is kept as it changes: a sum over every key per
        # pass would grow with the number of objects, and so would an entry per idle key.
        count = len(status.active)
        self._active_total += count - self._active.pop(key, 0)
        if count:
            self._active[key] = count
        self._metrics.runs.active.set(self._active_total)
