"""The operator process: :func:`build` makes every part from the settings, in dependency order, and
:func:`run` runs them until SIGTERM/SIGINT (kopf handles the signals until it is up, then ours do).

Nothing is wired late: each part gets, when it is made, the parts it needs. The one loop in the graph
(a shard this replica starts holding must wake the dispatcher, whose passes need the Lease check) goes
through :attr:`Parts.lease_changes`, a queue made before the Leases and read by :func:`follow_leases`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import signal
import ssl
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import kopf
from aiohttp import web

from sundial.kube import connections, leases, objects, ratelimits, requests
from sundial.model import names
from sundial.runtime.acting import sender
from sundial.runtime.acting.reconciler import Planner, Reconciler
from sundial.runtime.acting.sender import EventRecorder
from sundial.runtime.coordination import leasethread
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.coordination.leadership import InFlight, Leadership, Sharding, member_lease_name
from sundial.runtime.dispatch.dispatcher import Dispatcher
from sundial.runtime.serving import access, admission, certrotators, heap, metricstls, probes
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings
from sundial.runtime.watch import informers
from sundial.runtime.watch.intake import Intake
from sundial.runtime.watch.readiness import InitialListing
from sundial.runtime.watch.store import Key, Store
from sundial.schedule import utcnow

logger = logging.getLogger(__name__)

#: Seconds kopf may take to wind down its watchers after the stop flag is set.
KOPF_STOP_TIMEOUT = 10.0
#: Seconds, beyond the renew deadline, the lease thread may take to release the Leases at shutdown.
LEASE_RELEASE_GRACE = 5.0

#: (shard, held): what the lease thread reports, queued on the main loop.
LeaseChange = tuple[int, bool]


def default_planner() -> Planner:
    from sundial.planner import planning  # noqa: PLC0415 - the planner is resolved when the operator starts

    plan: Planner = planning.plan
    return plan


@dataclasses.dataclass(frozen=True, kw_only=True)
class Parts:
    """Everything :func:`build` made; :func:`run` runs it."""

    settings: Settings
    client: Any
    """The main loop's API client (closed at the end of :func:`run`)."""
    metrics: Metrics
    api: objects.ObjectsApi
    store: Store
    listing: InitialListing
    recorder: EventRecorder
    in_flight: InFlight
    lease_changes: asyncio.Queue[LeaseChange]
    leadership: Leadership
    lease_thread: leasethread.LeaseThread
    reconciler: Reconciler
    dispatcher: Dispatcher
    intake: Intake
    registry: Any
    """kopf's registry: the informers (and the admission webhook, if on)."""
    kopf_settings: Any
    logged_in: asyncio.Event
    stopping: asyncio.Event
    """Set once to stop: by a signal, a failed part, or kopf's end."""
    apps: Sequence[tuple[web.Application, int, ssl.SSLContext | None]]
    """The HTTP endpoints to serve, with their ports (those whose port is 0 are not here)."""
    rotator: certrotators.Rotator | None = None
    """The operator-managed webhook certificate (``--webhook-cert-secret``), prepared and kept current by
    :func:`run`."""


async def build(
    settings: Settings,
    *,
    planner: Planner | None = None,
    certificate: certrotators.ManagedCertificate | None = None,
) -> Parts:
    """Make every part of the operator; nothing is started and nothing is sent to the API server."""
    configuration = await connections.load_configuration(settings.api.kubeconfig)
    client = connections.api_client(configuration)
    metrics = Metrics()
    bucket = ratelimits.TokenBucket(rate=settings.api.qps, burst=settings.api.burst)
    requester = requests.Requester(bucket=bucket, observer=metrics)
    api = objects.ObjectsApi(api_client=client, requester=requester)
    # Events too (--event-qps/--event-burst), sent in the background: they never delay a claim or a Job.
    recorder = EventRecorder(
        api=sender.events_api(api_client=client, settings=settings.events, metrics=metrics),
        metrics=metrics,
        identity=settings.identity,
        series_interval=settings.events.series_interval,
        on_fenced=lambda token: leadership.fenced(int(names.token_shard(token))),
    )
    listing = InitialListing(store := Store())
    in_flight = InFlight()
    lease_changes: asyncio.Queue[LeaseChange] = asyncio.Queue()
    lease_api = _lease_api(settings, configuration, metrics)
    leadership = _leadership(settings, lease_api, metrics, in_flight, lease_changes)
    lease_thread = leasethread.LeaseThread(leadership, close=lease_api.close)
    reconciler = Reconciler(
        store=store,
        api=api,
        leadership=leadership,
        planner=planner or default_planner(),
        events=recorder,
        metrics=metrics,
        clock=utcnow,
        crash_after_claim=settings.test_crash_after_claim,
    )
    dispatcher = _dispatcher(settings, reconciler, in_flight, metrics, store)
    intake = Intake(store=store, dispatcher=dispatcher, reconciler=reconciler, listing=listing)
    logged_in = asyncio.Event()
    registry = informers.registry(
        configuration=configuration,
        on_scheduled_job=intake.scheduled_job,
        on_job=intake.job,
        on_calendar=intake.calendar,
        on_login=logged_in.set,
    )
    kopf_settings = informers.operator_settings()
    rotator = (
        certrotators.rotator(certificate, api_client=client, requester=requester, clock=utcnow)
        if certificate is not None
        else None
    )
    # The validating webhook, if --webhook-port; with CERTIFICATE it serves the operator-managed one.
    admission.configure(kopf_settings, registry, settings.webhook, tls=rotator.tls if rotator else None)
    stopping = asyncio.Event()
    return Parts(
        settings=settings,
        client=client,
        metrics=metrics,
        api=api,
        store=store,
        listing=listing,
        recorder=recorder,
        in_flight=in_flight,
        lease_changes=lease_changes,
        leadership=leadership,
        lease_thread=lease_thread,
        reconciler=reconciler,
        dispatcher=dispatcher,
        intake=intake,
        registry=registry,
        kopf_settings=kopf_settings,
        logged_in=logged_in,
        stopping=stopping,
        apps=_apps(settings, metrics, listing, stopping, client=client),
        rotator=rotator,
    )


def _dispatcher(
    settings: Settings, reconciler: Reconciler, in_flight: InFlight, metrics: Metrics, store: Store
) -> Dispatcher:
    """The one dispatch loop: passes counted in flight, due keys ordered by the priorities the store keeps."""
    return Dispatcher(
        reconcile=functools.partial(reconcile_tracked, reconciler, in_flight),
        max_concurrency=settings.dispatch.max_concurrency,
        clock=utcnow,
        on_index_size=metrics.passes.due_index_size.set,
        priority_of=store.priority,
    )


def _leadership(
    settings: Settings,
    lease_api: leasethread.DeferredLeaseApi,
    metrics: Metrics,
    in_flight: InFlight,
    lease_changes: asyncio.Queue[LeaseChange],
) -> Leadership:
    """The shard electors and the member Lease; changes go into LEASE_CHANGES (see :func:`follow_leases`)."""
    electors = [_elector(settings, lease_api, settings.leases.name(shard)) for shard in range(settings.leases.shards)]
    member = _elector(settings, lease_api, member_lease_name(settings.leases.name_prefix, settings.identity))
    main_loop = asyncio.get_running_loop()  # the lease thread reaches the in-flight counts and the queue here
    sharding = Sharding(
        api=lease_api,
        member=member,
        prefix=settings.leases.name_prefix,
        retry_period=settings.leases.retry_period,
        drain=leasethread.on_loop(main_loop, in_flight.drained),
        drain_timeout=settings.leases.renew_deadline,
        metrics=metrics,
    )
    queued = leasethread.to_loop(main_loop, lambda shard, held: lease_changes.put_nowait((shard, held)))
    return Leadership(electors, on_change=queued, sharding=sharding)


def _lease_api(settings: Settings, configuration: Any, metrics: Metrics) -> leasethread.DeferredLeaseApi:
    """Lease calls run on a thread of their own (coordination/leasethread.py), with their own API client and
    token bucket: neither a herd of Job creations nor a busy event loop may delay a renewal. The client is
    made on first use, on that thread's loop."""
    shards = settings.leases.shards

    def factory() -> leases.KubeLeaseApi:
        lease_requester = requests.Requester(
            bucket=ratelimits.TokenBucket(rate=max(10.0, 4 * shards), burst=20 + 4 * shards), observer=metrics
        )
        return leases.KubeLeaseApi(
            api_client=connections.api_client(configuration),
            requester=lease_requester,
            labels={settings.leases.name(i): {names.SHARD_LEASE_LABEL: str(i)} for i in range(shards)},
        )

    return leasethread.DeferredLeaseApi(factory)


def _elector(settings: Settings, api: leasethread.DeferredLeaseApi, name: str) -> LeaseElector:
    return LeaseElector(
        api=api,
        namespace=settings.leases.namespace,
        name=name,
        identity=settings.identity,
        timings=settings.leases,
    )


def _apps(
    settings: Settings, metrics: Metrics, listing: InitialListing, stopping: asyncio.Event, *, client: Any
) -> list[tuple[web.Application, int, ssl.SSLContext | None]]:
    apps: list[tuple[web.Application, int, ssl.SSLContext | None]] = []
    if settings.probes.health_port:
        webhook = settings.webhook
        listening = probes.listening(webhook.addr, webhook.port) if webhook.port else None
        health = probes.health_app(alive=lambda: not stopping.is_set(), ready=listing.ready.is_set, webhook=listening)
        apps.append((health, settings.probes.health_port, None))
    if settings.probes.metrics_port:
        guard = (
            access.MetricsAccess(reviews=access.KubeReviews(api_client=client, observer=metrics))
            if settings.probes.metrics_auth
            else None
        )
        app = probes.metrics_app(metrics.registry, access=guard)
        tls = metricstls.for_settings(settings.probes, now=utcnow())
        if tls is not None:
            tls.attach(app)
        apps.append((app, settings.probes.metrics_port, tls.context if tls is not None else None))
    return apps


async def reconcile_tracked(reconciler: Reconciler, in_flight: InFlight, key: Key) -> datetime | None:
    """One pass of ``key``, counted in flight for its shard: a handoff of the shard waits for it to end."""
    shard = reconciler.shard_of(key)
    if shard is None:
        return await reconciler.reconcile(key)
    with in_flight.track(shard):
        return await reconciler.reconcile(key)


async def follow_leases(parts: Parts) -> None:
    """Apply what the lease thread reports: the held-Leases gauge, and a wake-up of every object of a shard
    this replica starts holding (any of them may have become due while another replica held it)."""
    while True:
        shard, held = await parts.lease_changes.get()
        parts.metrics.leases.held.set(parts.leadership.held())
        if held:
            for key in parts.store.scheduled_job_keys():
                if parts.reconciler.shard_of(key) == shard:
                    parts.dispatcher.touch(key)


async def main(
    settings: Settings,
    *,
    planner: Planner | None = None,
    certificate: certrotators.ManagedCertificate | None = None,
) -> int:
    """Build the operator and run it; returns the process exit code. With CERTIFICATE the webhook serves
    (and keeps current) a certificate the operator manages itself."""
    return await run(await build(settings, planner=planner, certificate=certificate))


async def run(parts: Parts) -> int:
    """Run until a signal; release the Leases on the way out. Returns the process exit code."""
    settings = parts.settings
    informers.use_fast_json()
    if parts.rotator is not None:  # before the webhook serves: the Secret, the caBundle and the served certificate
        await parts.rotator.prepare()
    runners = [await probes.serve(app, port=port, ssl_context=tls) for app, port, tls in parts.apps]
    kopf_task = asyncio.create_task(
        kopf.operator(
            registry=parts.registry,
            settings=parts.kopf_settings,
            memories=informers.resource_memories(),
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            standalone=True,
            stop_flag=parts.stopping,
        ),
        name="kopf",
    )
    parts.lease_thread.start()
    tasks = [
        asyncio.create_task(parts.listing.load(parts.api, settings.namespaces), name="initial listing"),
        asyncio.create_task(parts.lease_thread.wait(), name="leases"),
        asyncio.create_task(follow_leases(parts), name="lease changes"),
        asyncio.create_task(_dispatch_when_ready(parts), name="dispatcher"),
        asyncio.create_task(_take_over_signals(parts), name="signals"),
        asyncio.create_task(heap.trim_periodically(parts.stopping), name="heap trim"),
    ]
    if parts.rotator is not None:
        tasks.append(asyncio.create_task(parts.rotator.run(parts.stopping), name="webhook certificate"))
    # Not cancelled at shutdown like the others: it flushes pending Events (bounded) once STOPPING is set.
    events_task = asyncio.create_task(parts.recorder.run(parts.stopping), name="events")
    logger.info(
        "sundial operator %s started (shards=%d, namespaces=%s)",
        settings.identity,
        settings.leases.shards,
        ",".join(settings.namespaces) or "*",
    )
    try:
        return await _until_stopped(parts.stopping, kopf_task, {kopf_task, events_task, *tasks})
    finally:
        await _shut_down(parts, tasks, events_task=events_task, kopf_task=kopf_task, runners=runners)


async def _until_stopped(stopping: asyncio.Event, kopf_task: asyncio.Task[Any], pending: set[asyncio.Task[Any]]) -> int:
    """Wait for STOPPING, a failed task (exit code 1) or kopf's end."""
    code = 0
    while pending and not stopping.is_set():
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        failed = [task for task in done if not task.cancelled() and task.exception() is not None]
        for task in failed:
            logger.error("%s failed", task.get_name(), exc_info=task.exception())
            code = 1
        if failed or kopf_task in done:
            break
    return code


async def _shut_down(
    parts: Parts,
    tasks: Sequence[asyncio.Task[Any]],
    *,
    events_task: asyncio.Task[None],
    kopf_task: asyncio.Task[Any],
    runners: Sequence[web.AppRunner],
) -> None:
    parts.stopping.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    parts.lease_thread.stop()  # it stops acting, releases the Leases and ends
    if not await parts.lease_thread.join(timeout=parts.settings.leases.renew_deadline + LEASE_RELEASE_GRACE):
        logger.warning("lease thread did not end in time; its Leases expire on their own")
    with contextlib.suppress(asyncio.TimeoutError, Exception):
        await asyncio.wait_for(events_task, timeout=sender.SHUTDOWN_FLUSH + 1)
    with contextlib.suppress(asyncio.TimeoutError, Exception):
        await asyncio.wait_for(kopf_task, timeout=KOPF_STOP_TIMEOUT)
    for runner in runners:
        await runner.cleanup()
    await parts.client.close()
    logger.info("sundial operator stopped")


async def _take_over_signals(parts: Parts) -> None:
    # kopf installs its SIGINT/SIGTERM handlers while it spawns its tasks (before it logs in) and only
    # stops after its watchers wind down (seconds). Ours replace them once kopf is up: stop acting at
    # once, and let kopf stop through its stop flag (the same event).
    await parts.logged_in.wait()
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, parts.stopping.set)


async def _dispatch_when_ready(parts: Parts) -> None:
    await parts.listing.ready.wait()
    await parts.dispatcher.run(parts.stopping)
