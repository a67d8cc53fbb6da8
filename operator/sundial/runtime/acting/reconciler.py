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
from sundial.kube import errors, requests, results
from sundial.planner import actions
from sundial.planner.observed import FailureReason, ObservedJob
from sundial.planner.plans import Context, Plan
from sundial.runtime import fencing
from sundial.runtime.acting import faults
from sundial.runtime.acting.budgets import Budgets, NoBudgets
from sundial.runtime.acting.compiled import CompiledSpecs
from sundial.runtime.acting.ports import EventSink, ReconcilerApi
from sundial.runtime.serving.metrics import FencedKind, Metrics, PassOutcome
from sundial.runtime.watch import jobs
from sundial.runtime.watch.store import Key, Store

logger = logging.getLogger(__name__)
T = TypeVar("T")

Planner = Callable[[model.ScheduledJob, Sequence[ObservedJob], Context], Plan]

#: Re-plans after a 409 (or an invalid template) before giving up this pass (the key is retried soon).
MAX_REPLANS = 5
#: In-pass retries of transient API errors; after that the pass fails and the dispatcher backs off.
TRANSIENT_DELAYS = (0.2, 0.5, 1.0)
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
        self._events = events
        self._metrics = metrics
        self._clock = clock
        self._sleep = sleep
        self._synthetic: dict[Key, dict[str, ObservedJob]] = {}
        self.compiled = compiled or CompiledSpecs()
        """Parsed specs and compiled schedules/exclusions, per object (DESIGN §11.1)."""
        self.budgets = budgets or NoBudgets()  # the namespaces' catch-up and backfill budgets (DESIGN §11.1)
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
        self._synthetic.pop(key, None)
        self.compiled.forget(key)
        self.budgets.forget(key)
        self._active_total -= self._active.pop(key, 0)
        self._metrics.runs.active.set(self._active_total)

    def _observed(self, key: Key) -> list[ObservedJob]:
        seen = self._store.observed_jobs(key)
        synthetic = self._synthetic.get(key, {})
        return [job for job in seen if job.name not in synthetic] + list(synthetic.values())

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
        body = self._store.scheduled_job(key)
        if body is None:
            self.forget(key)
            return PassOutcome.GONE, None
        # Owed writes are decided anew by every pass: one that ends early (not acting, gone, contended, failed)
        # owes nothing more - the next pass that acts records what is owed.
        lane = self._owed.pop(key, False) is not False
        shard = fencing.shard_of(str(body["metadata"].get("uid", "")), self._lead.shards)
        if not self._lead.acting(shard):
            return PassOutcome.NOT_ACTING, None
        claimed = False
        for _ in range(MAX_REPLANS):
            obj = self.compiled.read(key, body)
            wait = self._recompile_wait(key, obj)
            if wait > 0:  # a calendar it names changed and the recompile budget is spent (DESIGN §12.2)
                return PassOutcome.DEFERRED, self._clock() + timedelta(seconds=wait)
            context = self._context(key, shard, obj, lane=lane)
            plan = self._plan(obj, self._observed(key), context)
            self.budgets.take(key, plan, context.now)  # at once: no other pass may count these tokens
            if plan.write_status:
                written = await self._write(key, shard, obj, plan, context)
                if written is None:
                    return PassOutcome.GONE, None
                body, wrote = written
                if not wrote:
                    continue  # 409: planned again on the object as the API has it now
                claimed = True
                self._count(obj.status, plan.status)
            if plan.write_status or plan.deferred:
                self._crash.claimed(plan)  # a claim write, or the reservation used at its instant
            version = str((body.get("metadata") or {}).get("resourceVersion") or "")
            if await self._act(key, shard, obj, plan, version=version):
                continue  # a failed attempt was recorded (invalid template, squatted name): plan again
            prepared = self._owe(key, plan)
            self._settle(key, plan.status)
            wake = self.budgets.settle(key, plan, context.now)  # earlier if runs wait for the namespace's budget
            if claimed:
                return PassOutcome.CLAIMED, wake
            return (PassOutcome.PREPARED if prepared else PassOutcome.UNCHANGED), wake
        logger.warning("%s/%s: still contended after %d re-plans", key[0], key[1], MAX_REPLANS)
        return PassOutcome.CONTENDED, self._clock() + CONTENDED_RETRY

    async def _write(
        self, key: Key, shard: int, obj: model.ScheduledJob, plan: Plan, context: Context
    ) -> tuple[dict[str, Any], bool] | None:
        """Write the plan's status (compare-and-set): (the object as stored, True), or on a 409 (the object as
        the API has it now, False); None when the object is gone."""
        self._lead.check(shard)
        status = model.resource.dump_status(plan.status.model_copy(update={"fencing_token": context.fencing_token}))
        written = await self._retrying(
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
            fresh = await self._retrying(shard, lambda: self._api.get_scheduled_job(namespace=key[0], name=key[1]))
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
        refs = obj.spec.calendar_refs if obj.spec is not None else ()
        return self.compiled.deferral(key, obj, self._store.calendars.versions(key[0], refs))

    def _context(self, key: Key, shard: int, obj: model.ScheduledJob, *, lane: bool) -> Context:
        now = self._clock()
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

    async def _retrying(self, shard: int, call: Callable[[], Awaitable[T]], *, kind: FencedKind | None = None) -> T:
        """Retry transient API errors (5xx, 429, timeouts, quota) a few times; they consume no attempts.

        Every request is checked again right before it is sent (after the rate limiter's wait): see
        :data:`sundial.kube.requests.SEND_GUARD`. A write the fencing policy refuses (``kind``: which write)
        raises :class:`sundial.runtime.fencing.NotActingError` after the shard was given up.
        """
        with requests.guarded(functools.partial(self._lead.check, shard)):
            for delay in (*TRANSIENT_DELAYS, None):
                try:
                    return await call()
                except errors.FencedError as error:
                    self._metrics.fencing.fenced_writes.labels(kind=kind or FencedKind.STATUS).inc()
                    logger.warning("shard %d: the API server refused a write under a stale token: %s", shard, error)
                    self._lead.fenced(shard)
                    raise fencing.NotActingError(f"shard {shard}: fenced by the API server") from None
                except errors.TransientError as error:
                    if delay is None:
                        raise
                    logger.info("transient API error, retrying in %.1fs: %s", delay, error)
                    await self._sleep(delay)
                    self._lead.check(shard)
            raise AssertionError("unreachable")

    async def _act(self, key: Key, shard: int, obj: model.ScheduledJob, plan: Plan, *, version: str = "") -> bool:
        """Run the plan's actions in order. True: re-plan (a Job template was rejected as invalid, or a
        foreign Job holds the attempt's name). ``version``: the object's resourceVersion after the claim."""
        for action in plan.actions:
            match action:
                case actions.CreateJob():
                    if await self._create(key, shard, obj, action):
                        return True
                case actions.DeleteJob(uid=""):
                    logger.warning("%s/%s: not deleting Job %s: never observed (no UID)", *key, action.name)
                case actions.DeleteJob():
                    self._lead.check(shard)
                    # Checked against the Lease its operator-only shard label names; a stale label is rewritten
                    # first under this shard's token, the delete bound to that version (docs/fencing.md).
                    seen = next((j for j in self._observed(key) if j.uid == action.uid), None)
                    delete = functools.partial(
                        self._api.delete_job, namespace=key[0], name=action.name, uid=action.uid,
                        resource_version=seen.resource_version if seen else "", label=seen.shard if seen else "",
                        shard=str(shard), token=self._lead.fencing_token(shard),
                    )  # fmt: skip
                    deleted = await self._retrying(shard, delete, kind=FencedKind.JOB_DELETE)
                    if isinstance(deleted, results.Done) and deleted.existed:
                        message = f"Deleted job {action.name} ({action.reason})"
                        self._event(
                            shard, obj, actions.EventType.NORMAL, actions.EventReason.SUCCESSFUL_DELETE, message
                        )
                case actions.EmitEvent():
                    self._event(shard, obj, action.type, action.reason, action.message)
                case actions.DeleteScheduledJob():
                    self._lead.check(shard)
                    await self._retrying(
                        shard,
                        lambda: self._api.delete_scheduled_job(
                            namespace=key[0], name=key[1], uid=obj.metadata.uid, resource_version=version
                        ),
                    )
        return False

    async def _create(self, key: Key, shard: int, obj: model.ScheduledJob, action: actions.CreateJob) -> bool:
        self._lead.check(shard)
        created = await self._retrying(
            shard,
            lambda: self._api.create_job(namespace=key[0], manifest=action.manifest, owner_uid=obj.metadata.uid),
            kind=FencedKind.JOB_CREATE,
        )
        name = str((action.manifest.get("metadata") or {}).get("name", ""))
        match created:
            case results.Created(body=body):
                self._store.put_job(body)
                self._metrics.runs.attempts.inc()
                if action.attempt == 1:
                    self._metrics.runs.started.inc()
                    lag = (self._clock() - action.scheduled_time).total_seconds()
                    self._metrics.runs.schedule_lag.observe(max(lag, 0.0))
                logger.info("created Job %s/%s (attempt %d)", key[0], name, action.attempt)
            case results.Adopted(body=body):
                self._store.put_job(body)
                logger.info("adopted existing Job %s/%s", key[0], name)
            case results.Unexpected(owner_uid=owner):
                # Somebody else's Job squats the attempt's name: left alone, the attempt ends as UnexpectedJob
                # (a synthetic failed attempt, re-planned at once) and the run goes on under the next name.
                self._event(
                    shard,
                    obj,
                    actions.EventType.WARNING,
                    actions.EventReason.UNEXPECTED_JOB,
                    f"Job {name} exists but is not controlled by this ScheduledJob "
                    f"(controller uid {owner}); left alone, attempt {action.attempt} ends as UnexpectedJob",
                )
                self._metrics.fencing.unexpected_jobs.inc()
                self._synthetic.setdefault(key, {})[name] = jobs.failed_attempt(
                    action.manifest,
                    reason=FailureReason.UNEXPECTED_JOB,
                    message=f"a Job not controlled by this ScheduledJob (controller uid {owner}) has its name",
                    scheduled_time=action.scheduled_time,
                    attempt=action.attempt,
                    owner_uid=obj.metadata.uid,
                    now=self._clock(),
                )
                return True
            case results.Invalid(message=message):
                logger.warning("Job %s/%s rejected as invalid: %s", key[0], name, message)
                self._synthetic.setdefault(key, {})[name] = jobs.invalid(
                    action.manifest,
                    message=message,
                    scheduled_time=action.scheduled_time,
                    attempt=action.attempt,
                    owner_uid=obj.metadata.uid,
                    now=self._clock(),
                )
                return True
        return False

    def _event(
        self,
        shard: int,
        obj: model.ScheduledJob,
        type_: actions.EventType,
        reason: actions.EventReason,
        message: str,
    ) -> None:
        """Recorded only while this replica acts for the shard; sent in the background, best effort."""
        if self._lead.acting(shard):
            self._events.record(
                obj.metadata,
                type_.value,
                reason.value,
                message,
                guard=functools.partial(self._lead.check, shard),
                token=self._lead.fencing_token(shard),
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
