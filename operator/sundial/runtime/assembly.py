"""Assembly of the operator process: :func:`build` makes every part from the settings, in dependency order,
and sends nothing; :mod:`sundial.runtime.process` runs the :class:`Parts` it returns.

Nothing is wired late: each part gets, when it is made, the parts it needs (the Leadership comes before the
Event recorder, which stops a shard's acting when a write under its token is fenced). The one loop in the
graph (a shard this replica starts holding must wake the dispatcher, whose passes need the Lease check) goes
through :attr:`Parts.lease_changes`, a queue made before the Leases and read by
:func:`sundial.runtime.process.follow_leases`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import ssl
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from aiohttp import web

from sundial.kube import connections, errors, objects, ratelimits, requests, watches
from sundial.model import names
from sundial.runtime.acting import sender
from sundial.runtime.acting.budgets import NamespaceBudgets
from sundial.runtime.acting.reconciler import Planner, Reconciler
from sundial.runtime.acting.sender import EventRecorder
from sundial.runtime.coordination import clocks, leaseparts, leasethread
from sundial.runtime.coordination.guards import Guards, self_checks
from sundial.runtime.coordination.inflight import InFlight
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.coordination.members import member_lease_name
from sundial.runtime.dispatch.collector import Collector
from sundial.runtime.dispatch.dispatcher import Dispatcher
from sundial.runtime.serving import access, admission, certrotators, metricstls, probes, probethread, watchdog
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings
from sundial.runtime.watch import fencingpolicies, intake, kinds
from sundial.runtime.watch.keeping import object_bound
from sundial.runtime.watch.listwatch import ListWatch, Sink
from sundial.runtime.watch.quarantine import Quarantine
from sundial.runtime.watch.readiness import Readiness
from sundial.runtime.watch.store import Key, Store
from sundial.schedule import utcnow

#: (shard, held): what the lease thread reports, queued on the main loop.
LeaseChange = tuple[int, bool]


def default_planner() -> Planner:
    from sundial.planner import planning  # noqa: PLC0415 - the planner is resolved when the operator starts

    plan: Planner = planning.plan
    return plan


@dataclasses.dataclass(frozen=True, kw_only=True)
class Parts:
    """Everything :func:`build` made; :func:`sundial.runtime.process.run` runs it."""

    settings: Settings
    client: Any
    """The main loop's API client (closed at the end of :func:`sundial.runtime.process.run`)."""
    metrics: Metrics
    api: objects.ObjectsApi
    store: Store
    readiness: Readiness
    """Ready once every informer has listed once."""
    quarantine: Quarantine
    """The objects the intake could not read (kept as stubs)."""
    recorder: EventRecorder
    in_flight: InFlight
    lease_changes: asyncio.Queue[LeaseChange]
    leadership: Leadership
    lease_thread: leasethread.LeaseThread
    reconciler: Reconciler
    dispatcher: Dispatcher
    informers: Sequence[ListWatch]
    """The ScheduledJobs', the Jobs' and the ScheduleCalendars' informers (readiness waits for these), then the
    fencing policy's and its binding's, if one is configured (a change triggers a fencing probe)."""
    stopping: asyncio.Event
    """Set once to stop: by a signal or a failed part."""
    apps: Sequence[tuple[web.Application, int, ssl.SSLContext | None]]
    """The HTTP endpoints to serve on the main loop (``/metrics``), with their ports (port 0: not here)."""
    watchdog: watchdog.LoopWatchdog
    """Beats on the main loop; its lag fails readiness and withdraws the replica from its shards (DESIGN §12.2)."""
    probes: probethread.ProbeThread | None = None
    """``/healthz`` and ``/readyz`` on their own thread (``--health-port`` 0: None)."""
    webhook: probethread.ProbeThread | None = None
    """The admission webhooks' HTTPS server on its own thread (``--webhook-port`` 0: None)."""
    rotator: certrotators.Rotator | None = None
    """The operator-managed webhook certificate (``--webhook-cert-secret``), prepared and kept current by
    :func:`sundial.runtime.process.run`."""


def _rotator(
    certificate: certrotators.ManagedCertificate | None, client: Any, requester: requests.Requester
) -> certrotators.Rotator | None:
    """The webhook certificate's rotator, when the operator manages that certificate (``--webhook-cert-secret``)."""
    if certificate is None:
        return None
    return certrotators.rotator(certificate, api_client=client, requester=requester, clock=utcnow)


async def build(
    settings: Settings,
    *,
    planner: Planner | None = None,
    certificate: certrotators.ManagedCertificate | None = None,
) -> Parts:
    """Make every part of the operator; nothing is started and nothing is sent to the API server."""
    errors.configure_fencing(settings.leases.fencing_policy)
    configuration = await connections.load_configuration(settings.api.kubeconfig)
    client = connections.api_client(configuration)
    metrics = Metrics(created_series=settings.probes.metrics_created_series)
    wall, checks, loop_watchdog = self_checks(settings, metrics.guards)
    bucket = ratelimits.TokenBucket(rate=settings.api.qps, burst=settings.api.burst)
    requester = requests.Requester(bucket=bucket, observer=metrics)
    api = objects.ObjectsApi(api_client=client, requester=requester)
    # One object's kept size is bounded (DESIGN §11.1): the jobTemplate bound plus a margin (watch/keeping.py).
    store = Store(max_object_bytes=object_bound(settings.webhook.max_job_template_bytes))
    readiness = Readiness()
    quarantine = Quarantine(on_quarantine=metrics.intake.count_quarantined, on_size=metrics.intake.set_quarantined)
    in_flight = InFlight()
    leadership, lease_thread, lease_changes = _leases(settings, configuration, metrics, in_flight, checks)
    # Events too (--event-qps/--event-burst), sent in the background: they never delay a claim or a Job.
    recorder = EventRecorder(
        api=sender.events_api(api_client=client, settings=settings.events, metrics=metrics),
        metrics=metrics,
        identity=settings.identity,
        series_interval=settings.events.series_interval,
        on_fenced=functools.partial(_fenced, leadership),
    )
    reconciler = _reconciler(
        settings,
        store=store,
        api=api,
        leadership=leadership,
        recorder=recorder,
        metrics=metrics,
        planner=planner,
        clock=wall,
    )
    dispatcher = _dispatcher(settings, reconciler, in_flight, metrics, store, warm=api.warm, clock=wall)
    rotator = _rotator(certificate, client, requester)
    stopping = asyncio.Event()
    return Parts(
        settings=settings,
        client=client,
        metrics=metrics,
        api=api,
        store=store,
        readiness=readiness,
        quarantine=quarantine,
        recorder=recorder,
        in_flight=in_flight,
        lease_changes=lease_changes,
        leadership=leadership,
        lease_thread=lease_thread,
        reconciler=reconciler,
        dispatcher=dispatcher,
        informers=_informers(
            settings,
            client=client,
            requester=requester,
            metrics=metrics,
            readiness=readiness,
            sinks=_sinks(store, dispatcher, reconciler, quarantine),
            fencing=(leadership.fencing_changed, quarantine),
        ),
        stopping=stopping,
        apps=_apps(settings, metrics, client=client),
        watchdog=loop_watchdog,
        probes=_probes(settings, readiness, stopping, loop_watchdog),
        rotator=rotator,
        # The validating webhooks, if --webhook-port, on their own thread; with CERTIFICATE the managed one.
        webhook=admission.server(settings.webhook, tls=rotator.tls if rotator else None, now=utcnow()),
    )


def _sinks(
    store: Store, dispatcher: Dispatcher, reconciler: Reconciler, quarantine: Quarantine
) -> list[tuple[Any, Sink]]:
    """Each collection with the sink its informer feeds."""
    return [
        (kinds.SCHEDULED_JOBS,
         intake.ScheduledJobs(store=store, dispatcher=dispatcher, reconciler=reconciler, quarantine=quarantine)),
        (kinds.JOBS, intake.Jobs(store=store, dispatcher=dispatcher, quarantine=quarantine, unseen=reconciler.unseen)),
        (kinds.SCHEDULE_CALENDARS, intake.ScheduleCalendars(store=store, dispatcher=dispatcher, quarantine=quarantine)),
    ]  # fmt: skip


def _informers(
    settings: Settings,
    *,
    client: Any,
    requester: requests.Requester,
    metrics: Metrics,
    readiness: Readiness,
    sinks: Sequence[tuple[Any, Sink]],
    fencing: tuple[Callable[[], None], Quarantine],
) -> list[ListWatch]:
    """One informer per kind, feeding the store through its sink; ready once all have listed. Then the fencing
    policy's and its binding's (FENCING: what a change calls, and the quarantine), which readiness does not wait
    for: they only trigger fencing probes."""
    source = watches.Watches(api_client=client, requester=requester)
    made = [
        ListWatch(watches=source, sink=sink, collection=collection, namespaces=settings.namespaces,
                  on_synced=readiness.check, observer=metrics.intake)
        for collection, sink in sinks
    ]  # fmt: skip
    readiness.wait_for(made)
    on_change, quarantine = fencing
    return made + fencingpolicies.informers(
        settings.leases.fencing_policy, watches=source, on_change=on_change, quarantine=quarantine,
        observer=metrics.intake,
    )  # fmt: skip


def _reconciler(
    settings: Settings,
    *,
    store: Store,
    api: objects.ObjectsApi,
    leadership: Leadership,
    recorder: EventRecorder,
    metrics: Metrics,
    planner: Planner | None,
    clock: Callable[[], datetime],
) -> Reconciler:
    return Reconciler(
        store=store,
        api=api,
        leadership=leadership,
        planner=planner or default_planner(),
        events=recorder,
        metrics=metrics,
        clock=clock,
        crash_after_claim=settings.test_crash_after_claim,
        budgets=NamespaceBudgets(rate=settings.dispatch.backlog_qps, burst=settings.dispatch.backlog_burst),
        crash_after_create=settings.test_crash_after_create,
        prepared_runs=settings.dispatch.prepared_runs,
    )


def _leases(
    settings: Settings,
    configuration: Any,
    metrics: Metrics,
    in_flight: InFlight,
    checks: tuple[clocks.ServerClock, Guards],
) -> tuple[Leadership, leasethread.LeaseThread, asyncio.Queue[LeaseChange]]:
    """The Leadership, the thread its Leases renew on (with their own API client) and the queue of what it
    reports."""
    lease_changes: asyncio.Queue[LeaseChange] = asyncio.Queue()
    lease_api = leaseparts.lease_api(settings, configuration, metrics, checks[0])
    leadership = _leadership(settings, lease_api, metrics, in_flight, lease_changes, checks=checks)
    return leadership, leasethread.LeaseThread(leadership, close=lease_api.close), lease_changes


def _fenced(leadership: Leadership, token: str) -> None:
    """An Event write was refused under ``token``: stop acting on its shard."""
    leadership.fenced(int(names.token_shard(token)))


def _dispatcher(
    settings: Settings,
    reconciler: Reconciler,
    in_flight: InFlight,
    metrics: Metrics,
    store: Store,
    *,
    warm: Callable[[int], Awaitable[None]],
    clock: Callable[[], datetime] = utcnow,
) -> Dispatcher:
    """The one dispatch loop: passes counted in flight, due keys ordered by the priorities the store keeps, the
    status writes the reconciler owes in the low-priority lane, connections warmed before a crowded instant."""
    return Dispatcher(
        reconcile=functools.partial(reconcile_tracked, reconciler, in_flight),
        max_concurrency=settings.dispatch.max_concurrency,
        clock=clock,
        on_index_size=metrics.passes.due_index_size.set,
        priority_of=store.priority,
        owes_write=reconciler.owes_write,
        held_until=reconciler.held_until,
        awaiting_watch=reconciler.unseen.waiting,
        warm=warm,
        prepare=reconciler.prepare,
        collector=Collector(),
    )


def _leadership(
    settings: Settings,
    lease_api: leasethread.DeferredLeaseApi,
    metrics: Metrics,
    in_flight: InFlight,
    lease_changes: asyncio.Queue[LeaseChange],
    *,
    checks: tuple[clocks.ServerClock, Guards],
) -> Leadership:
    """The shard electors and the member Lease; changes go into LEASE_CHANGES (see
    :func:`sundial.runtime.process.follow_leases`). CHECKS: the ServerClock (Lease times are the API server's)
    and the Guards (they withdraw the replica from every shard while its loop lags or its clock is off)."""
    server_clock, guards = checks
    shards = range(settings.leases.shards)
    electors = [
        leaseparts.elector(settings, lease_api, settings.leases.name(shard), server_clock.now) for shard in shards
    ]
    member_name = member_lease_name(settings.leases.name_prefix, settings.identity)
    member = leaseparts.elector(settings, lease_api, member_name, server_clock.now)
    main_loop = asyncio.get_running_loop()  # the lease thread reaches the in-flight counts and the queue here
    sharding = Sharding(
        api=lease_api,
        member=member,
        prefix=settings.leases.name_prefix,
        retry_period=settings.leases.retry_period,
        drain=leasethread.on_loop(main_loop, in_flight.drained),
        drain_timeout=settings.leases.renew_deadline,
        metrics=metrics,
        fencing=lease_api,
        fencing_policy=settings.leases.fencing_policy,
        fencing_probe_period=settings.leases.fencing_probe_period,
        wallclock=server_clock.now,
        guard=guards.reason,
    )
    queued = leasethread.to_loop(main_loop, lambda shard, held: lease_changes.put_nowait((shard, held)))
    return Leadership(electors, on_change=queued, sharding=sharding)


def _probes(
    settings: Settings, readiness: Readiness, stopping: asyncio.Event, loop_watchdog: watchdog.LoopWatchdog
) -> probethread.ProbeThread | None:
    """The probe server, on its own thread: ``alive``/``ready`` read one Event flag each and the watchdog's
    last beat (thread-safe reads)."""
    if not settings.probes.health_port:
        return None
    webhook = settings.webhook
    listening = probes.listening(webhook.addr, webhook.port) if webhook.port else None
    health = probes.health_app(
        alive=lambda: not stopping.is_set(),
        ready=readiness.ready.is_set,
        webhook=listening,
        loop_lag=loop_watchdog.lag,
        max_lag=settings.guards.unready_lag,
    )
    return probethread.ProbeThread(health, port=settings.probes.health_port)


def _apps(
    settings: Settings, metrics: Metrics, *, client: Any
) -> list[tuple[web.Application, int, ssl.SSLContext | None]]:
    apps: list[tuple[web.Application, int, ssl.SSLContext | None]] = []
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
