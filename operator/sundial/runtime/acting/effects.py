"""What a pass's plan does outside the process: its API calls (with in-pass retries of transient errors, and the
fencing policy's refusals), its Job creates and deletes, its Events (DESIGN §7).

A create's outcome is told back to the pass: a Job the API server refused as invalid, or a foreign Job squatting
the attempt's name, becomes a *synthetic* failed attempt (kept here until the object's status records it) and the
pass plans again. A created Job is awaited from the Job watch (:mod:`sundial.runtime.watch.unseen`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TypeVar

from sundial import model
from sundial.kube import errors, requests, results
from sundial.planner import actions
from sundial.planner.observed import FailureReason, ObservedJob
from sundial.planner.plans import Plan
from sundial.runtime import fencing
from sundial.runtime.acting.ports import EventSink, ReconcilerApi
from sundial.runtime.serving.metrics import FencedKind, Metrics
from sundial.runtime.watch import jobs
from sundial.runtime.watch.store import Key, Store
from sundial.runtime.watch.unseen import Unseen

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: In-pass retries of transient API errors; after that the pass fails and the dispatcher backs off.
TRANSIENT_DELAYS = (0.2, 0.5, 1.0)


class Effects:
    def __init__(
        self,
        *,
        store: Store,
        api: ReconcilerApi,
        leadership: fencing.Acting,
        events: EventSink,
        metrics: Metrics,
        clock: Callable[[], datetime],
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self._store = store
        self._api = api
        self._lead = leadership
        self._events = events
        self._metrics = metrics
        self._clock = clock
        self._sleep = sleep
        self.synthetic: dict[Key, dict[str, ObservedJob]] = {}
        """Failed attempts that have no Job (invalid template, squatted name), until the status records them."""
        self.unseen = Unseen()
        """The Jobs created here that the Job watch has not delivered yet (the lane waits for them)."""

    def observed(self, key: Key) -> list[ObservedJob]:
        """KEY's Jobs as the planner is told of them: the store's, and the synthetic failed attempts."""
        seen = self._store.observed_jobs(key)
        synthetic = self.synthetic.get(key, {})
        return [job for job in seen if job.name not in synthetic] + list(synthetic.values())

    async def retrying(self, shard: int, call: Callable[[], Awaitable[T]], *, kind: FencedKind | None = None) -> T:
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

    async def act(
        self, key: Key, shard: int, obj: model.ScheduledJob, plan: Plan, *, version: str = "",
        bodies: Sequence[bytes] = (),
    ) -> bool:  # fmt: skip
        """Run the plan's actions in order. True: re-plan (a Job template was rejected as invalid, or a
        foreign Job holds the attempt's name). ``version``: the object's resourceVersion after the claim;
        ``bodies``: the CreateJobs' manifests encoded ahead, in order (none: encoded as they are sent)."""
        encoded = iter(bodies)
        for action in plan.actions:
            match action:
                case actions.CreateJob():
                    if await self._create(key, shard, obj, action, next(encoded, None)):
                        return True
                case actions.DeleteJob(uid=""):
                    logger.warning("%s/%s: not deleting Job %s: never observed (no UID)", *key, action.name)
                case actions.DeleteJob():
                    self._lead.check(shard)
                    # Checked against the Lease its operator-only shard label names; a stale label is rewritten
                    # first under this shard's token, the delete bound to that version (docs/fencing.md).
                    seen = next((j for j in self.observed(key) if j.uid == action.uid), None)
                    delete = functools.partial(
                        self._api.delete_job, namespace=key[0], name=action.name, uid=action.uid,
                        resource_version=seen.resource_version if seen else "", label=seen.shard if seen else "",
                        shard=str(shard), token=self._lead.fencing_token(shard),
                    )  # fmt: skip
                    deleted = await self.retrying(shard, delete, kind=FencedKind.JOB_DELETE)
                    if isinstance(deleted, results.Done) and deleted.existed:
                        message = f"Deleted job {action.name} ({action.reason})"
                        self.event(shard, obj, actions.EventType.NORMAL, actions.EventReason.SUCCESSFUL_DELETE, message)
                case actions.EmitEvent():
                    self.event(shard, obj, action.type, action.reason, action.message)
                case actions.DeleteScheduledJob():
                    self._lead.check(shard)
                    await self.retrying(
                        shard,
                        lambda: self._api.delete_scheduled_job(
                            namespace=key[0], name=key[1], uid=obj.metadata.uid, resource_version=version
                        ),
                    )
        return False

    async def _create(
        self, key: Key, shard: int, obj: model.ScheduledJob, action: actions.CreateJob, encoded: bytes | None
    ) -> bool:
        self._lead.check(shard)
        created = await self.retrying(
            shard,
            lambda: self._api.create_job(
                namespace=key[0], manifest=action.manifest, owner_uid=obj.metadata.uid, encoded=encoded
            ),
            kind=FencedKind.JOB_CREATE,
        )
        name = str((action.manifest.get("metadata") or {}).get("name", ""))
        match created:
            case results.Created(body=body):
                self._store.put_job(body)
                self.unseen.created(key[0], name)
                self._metrics.runs.attempts.inc()
                if action.attempt == 1:
                    self._metrics.runs.started.inc()
                    lag = (self._clock() - action.scheduled_time).total_seconds()
                    self._metrics.runs.schedule_lag.observe(max(lag, 0.0))
                # Debug, as the CronJob controller logs it at V(4): the SuccessfulCreate Event and
                # sundial_runs_started_total record every create; a herd of 2,000 is not 2,000 info lines.
                logger.debug("created Job %s/%s (attempt %d)", key[0], name, action.attempt)
            case results.Adopted(body=body):
                self._store.put_job(body)
                logger.info("adopted existing Job %s/%s", key[0], name)
            case results.Unexpected(owner_uid=owner):
                # Somebody else's Job squats the attempt's name: left alone, the attempt ends as UnexpectedJob
                # (a synthetic failed attempt, re-planned at once) and the run goes on under the next name.
                self.event(
                    shard,
                    obj,
                    actions.EventType.WARNING,
                    actions.EventReason.UNEXPECTED_JOB,
                    f"Job {name} exists but is not controlled by this ScheduledJob "
                    f"(controller uid {owner}); left alone, attempt {action.attempt} ends as UnexpectedJob",
                )
                self._metrics.fencing.unexpected_jobs.inc()
                self.synthetic.setdefault(key, {})[name] = jobs.failed_attempt(
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
                self.synthetic.setdefault(key, {})[name] = jobs.invalid(
                    action.manifest,
                    message=message,
                    scheduled_time=action.scheduled_time,
                    attempt=action.attempt,
                    owner_uid=obj.metadata.uid,
                    now=self._clock(),
                )
                return True
        return False

    def event(
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
