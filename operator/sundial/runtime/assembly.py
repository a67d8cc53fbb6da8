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

from sundial.kube import connections, errors, leases, objects, ratelimits, requests, watches
from sundial.model import names
from sundial.runtime.acting import sender
from sundial.runtime.acting.budgets import NamespaceBudgets
from sundial.runtime.acting.reconciler import Planner, Reconciler
from sundial.runtime.acting.sender import EventRecorder
from sundial.runtime.coordination import clocks, leasethread
from sundial.runtime.coordination.electors import LeaseElector
from sundial.runtime.coordination.guards import Guards
from sundial.runtime.coordination.inflight import InFlight
from sundial.runtime.coordination.leadership import Leadership, Sharding
from sundial.runtime.coordination.members import member_lease_name
from sundial.runtime.dispatch.dispatcher import Dispatcher
from sundial.runtime.serving import access, admission, certrotators, metricstls, probes, probethread, watchdog
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings
from sundial.runtime.watch import informers
from sundial.runtime.watch.intake import Intake
from sundial.runtime.watch.keeping import object_bound
from sundial.runtime.watch.listwatch import JOBS, SCHEDULED_JOBS, ListWatch
from sundial.runtime.watch.readiness import InitialListing
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
    """kopf's registry: the ScheduledJobs' and ScheduleCalendars' informers (and the admission webhook, if on)."""
    informers: Sequence[ListWatch]
    """The ScheduledJobs' and the Jobs' informers."""
    kopf_settings: Any
    logged_in: asyncio.Event
    stopping: asyncio.Event
    """Set once to stop: by a signal, a failed part, or kopf's end."""
    apps: Sequence[tuple[web.Application, int, ssl.SSLContext | None]]
    """The HTTP endpoints to serve on the main loop (``/metrics``), with their ports (port 0: not here)."""
    watchdog: watchdog.LoopWatchdog
    """Beats on the main loop; its lag fails readiness and withdraws the replica from its shards (DESIGN §12.2)."""
    probes: probethread.ProbeThread | None = None
    """``/healthz`` and ``/readyz`` on their own thread (``--health-port`` 0: None)."""
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
    metrics = Metrics()
    wall, server_clock, loop_watchdog, guards = _self_checks(settings, metrics)
    bucket = ratelimits.TokenBucket(rate=settings.api.qps, burst=settings.api.burst)
    requester = requests.Requester(bucket=bucket, observer=metrics)
    api = objects.ObjectsApi(api_client=client, requester=requester)
    # One object's kept size is bounded (DESIGN §11.1): the jobTemplate bound plus a margin (watch/keeping.py).
    store = Store(max_object_bytes=object_bound(settings.webhook.max_job_template_bytes))
    listing = InitialListing(store, listed={"schedulecalendars"})  # the informers of listwatch.py say when synced
    in_flight = InFlight()
    lease_changes: asyncio.Queue[LeaseChange] = asyncio.Queue()
    lease_api = _lease_api(settings, configuration, metrics, server_clock)
    leadership = _leadership(settings, lease_api, metrics, in_flight, lease_changes, checks=(server_clock, guards))
    lease_thread = leasethread.LeaseThread(leadership, close=lease_api.close)
    # Events too (--event-qps/--event-burst), sent in the background: they never delay a claim or a Job.
    recorder = EventRecorder(
        api=sender.events_api(api_client=client, settings=settings.events, metrics=metrics),
        metrics=metrics,
        identity=settings.identity,
        series_interval=settings.events.series_interval,
        on_fenced=functools.partial(_fenced, leadership),
    )
    reconciler = Reconciler(
        store=store,
        api=api,
        leadership=leadership,
        planner=planner or default_planner(),
        events=recorder,
        metrics=metrics,
        clock=wall,
        crash_after_claim=settings.test_crash_after_claim,
        budgets=NamespaceBudgets(rate=settings.dispatch.backlog_qps, burst=settings.dispatch.backlog_burst),
        crash_after_create=settings.test_crash_after_create,
        prepared_runs=settings.dispatch.prepared_runs,
    )
    dispatcher = _dispatcher(settings, reconciler, in_flight, metrics, store, warm=api.warm, clock=wall)
    intake = Intake(store=store, dispatcher=dispatcher, reconciler=reconciler, listing=listing)
    logged_in = asyncio.Event()
    registry = informers.registry(configuration=configuration, on_calendar=intake.calendar, on_login=logged_in.set)
    kopf_settings = informers.operator_settings()
    rotator = _rotator(certificate, client, requester)
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
        informers=_informers(settings, client, requester, intake, listing),
        kopf_settings=kopf_settings,
        logged_in=logged_in,
        stopping=stopping,
        apps=_apps(settings, metrics, client=client),
        watchdog=loop_watchdog,
        probes=_probes(settings, listing, stopping, loop_watchdog),
        rotator=rotator,
    )


def _self_checks(
    settings: Settings, metrics: Metrics
) -> tuple[Callable[[], datetime], clocks.ServerClock, watchdog.LoopWatchdog, Guards]:
    """The replica's checks on itself (DESIGN §12.2): its wall clock (moved only by the test hook
    ``SUNDIAL_TEST_CLOCK_OFFSET``), that clock against the API server's, the loop's watchdog, and the guards
    that withdraw the replica from its shards when either is off."""
    wall = clocks.shifted(settings.test_clock_offset)
    server_clock = clocks.ServerClock(max_skew=settings.guards.max_clock_skew, wallclock=wall, metrics=metrics.guards)
    loop_watchdog = watchdog.LoopWatchdog(metrics=metrics.guards)
    guards = Guards(settings=settings.guards, lag=loop_watchdog.lag, clock=server_clock, metrics=metrics.guards)
    return wall, server_clock, loop_watchdog, guards


def _informers(
    settings: Settings, client: Any, requester: requests.Requester, intake: Intake, listing: InitialListing
) -> list[ListWatch]:
    """The ScheduledJobs' and the Jobs' own informers (not kopf's: docs/benchmarks.md), feeding the intake; not
    ready before both have listed."""
    source = watches.Watches(api_client=client, requester=requester)
    made = [
        ListWatch(watches=source, on_event=handler, namespaces=settings.namespaces, collection=collection,
                  on_synced=listing.check)
        for collection, handler in ((SCHEDULED_JOBS, intake.scheduled_job), (JOBS, intake.job))
    ]  # fmt: skip
    listing.wait_for(*made)
    return made


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
        warm=warm,
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
    electors = [_elector(settings, lease_api, settings.leases.name(shard), server_clock.now) for shard in shards]
    member_name = member_lease_name(settings.leases.name_prefix, settings.identity)
    member = _elector(settings, lease_api, member_name, server_clock.now)
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


def _lease_api(
    settings: Settings, configuration: Any, metrics: Metrics, dates: clocks.ServerClock
) -> leasethread.DeferredLeaseApi:
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
            owners=_lease_owners(settings),
            dates=dates,
        )

    return leasethread.DeferredLeaseApi(factory)


def _lease_owners(settings: Settings) -> dict[str, leases.Owner]:
    """The shard Leases go with the ServiceAccount, the member Lease with its pod (kube/leases.py, Owner)."""
    owners = {settings.leases.name(i): leases.Owner.SERVICE_ACCOUNT for i in range(settings.leases.shards)}
    owners[member_lease_name(settings.leases.name_prefix, settings.identity)] = leases.Owner.POD
    return owners


def _elector(
    settings: Settings, api: leasethread.DeferredLeaseApi, name: str, wallclock: Callable[[], datetime]
) -> LeaseElector:
    return LeaseElector(
        api=api,
        namespace=settings.leases.namespace,
        name=name,
        identity=settings.identity,
        timings=settings.leases,
        wallclock=wallclock,
    )


def _probes(
    settings: Settings, listing: InitialListing, stopping: asyncio.Event, loop_watchdog: watchdog.LoopWatchdog
) -> probethread.ProbeThread | None:
    """The probe server, on its own thread: ``alive``/``ready`` read one Event flag each and the watchdog's
    last beat (thread-safe reads)."""
    if not settings.probes.health_port:
        return None
    webhook = settings.webhook
    listening = probes.listening(webhook.addr, webhook.port) if webhook.port else None
    health = probes.health_app(
        alive=lambda: not stopping.is_set(),
        ready=listing.ready.is_set,
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
