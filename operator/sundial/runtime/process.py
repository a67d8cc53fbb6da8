"""Assemble the operator from its parts and run it until SIGTERM/SIGINT (kopf handles the signals)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from datetime import UTC, datetime
from typing import Any

import kopf

from sundial.kube import connections, leases, objects, ratelimits, requests
from sundial.runtime.acting import events
from sundial.runtime.acting.reconciler import Planner, Reconciler
from sundial.runtime.coordination import leasethread
from sundial.runtime.coordination.leadership import InFlight, Leadership, Sharding, member_lease_name
from sundial.runtime.dispatch.dispatcher import Dispatcher
from sundial.runtime.serving import admission, certrotators, heap, probes
from sundial.runtime.serving.metrics import Metrics
from sundial.runtime.settings import Settings
from sundial.runtime.watch import informers
from sundial.runtime.watch.intake import Intake
from sundial.runtime.watch.readiness import InitialListing
from sundial.runtime.watch.store import Key, Store

logger = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


def default_planner() -> Planner:
    from sundial.planner import planning  # noqa: PLC0415 - the planner is resolved when the operator starts

    plan: Planner = planning.plan
    return plan


async def run(
    settings: Settings,
    *,
    planner: Planner | None = None,
    certificate: certrotators.ManagedCertificate | None = None,
) -> int:
    """Run until a signal; release the Leases on the way out. Returns the process exit code.
    With CERTIFICATE the webhook serves (and keeps current) a certificate the operator manages itself."""
    configuration = await connections.load_configuration(settings.kubeconfig)
    client = connections.api_client(configuration)
    metrics = Metrics()
    requester = requests.Requester(
        bucket=ratelimits.TokenBucket(rate=settings.qps, burst=settings.burst), observer=metrics
    )
    api = objects.ObjectsApi(api_client=client, requester=requester)

    # Lease calls run on a thread of their own (coordination/leasethread.py), with their own API client and token
    # bucket: neither a herd of Job creations nor a busy event loop may delay a renewal.
    def lease_api_factory() -> leases.KubeLeaseApi:
        lease_requester = requests.Requester(
            bucket=ratelimits.TokenBucket(rate=max(10.0, 4 * settings.shards), burst=20 + 4 * settings.shards),
            observer=metrics,
        )
        return leases.KubeLeaseApi(api_client=connections.api_client(configuration), requester=lease_requester)

    lease_api = leasethread.DeferredLeaseApi(lease_api_factory)
    # Events too (--event-qps/--event-burst), sent in the background: they never delay a claim or a Job.
    recorder = events.EventRecorder(
        api=events.events_api(api_client=client, settings=settings, metrics=metrics),
        metrics=metrics,
        identity=settings.identity,
        series_interval=settings.event_series_interval,
    )
    store = Store()
    listing = InitialListing(store)
    stopping = asyncio.Event()

    electors = [
        leases.LeaseElector(
            api=lease_api,
            namespace=settings.lease_namespace,
            name=settings.lease_name(shard),
            identity=settings.identity,
            lease_duration=settings.lease_duration,
            renew_deadline=settings.renew_deadline,
            retry_period=settings.retry_period,
        )
        for shard in range(settings.shards)
    ]

    def on_lease(shard: int, held: bool) -> None:
        metrics.leases_held.set(leadership.held())
        if held:  # everything in this shard may have become due while another replica held it
            for key in store.scheduled_job_keys():
                if reconciler.shard_of(key) == shard:
                    dispatcher.touch(key)

    in_flight = InFlight()
    member = leases.LeaseElector(
        api=lease_api,
        namespace=settings.lease_namespace,
        name=member_lease_name(settings.lease_name_prefix, settings.identity),
        identity=settings.identity,
        lease_duration=settings.lease_duration,
        renew_deadline=settings.renew_deadline,
        retry_period=settings.retry_period,
    )
    main_loop = asyncio.get_running_loop()  # the lease thread reaches the in-flight counts and on_lease here
    sharding = Sharding(
        api=lease_api,
        member=member,
        prefix=settings.lease_name_prefix,
        retry_period=settings.retry_period,
        drain=leasethread.on_loop(main_loop, in_flight.drained),
        drain_timeout=settings.renew_deadline,
        metrics=metrics,
    )
    leadership = Leadership(electors, on_change=leasethread.to_loop(main_loop, on_lease), sharding=sharding)
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

    async def reconcile(key: Key) -> datetime | None:
        shard = reconciler.shard_of(key)
        if shard is None:
            return await reconciler.reconcile(key)
        with in_flight.track(shard):  # a handoff of this shard waits for the pass to finish
            return await reconciler.reconcile(key)

    dispatcher = Dispatcher(
        reconcile=reconcile,
        max_concurrency=settings.max_concurrency,
        clock=utcnow,
        on_index_size=metrics.due_index_size.set,
    )

    intake = Intake(store=store, dispatcher=dispatcher, reconciler=reconciler, listing=listing)

    logged_in = asyncio.Event()
    registry = informers.registry(
        configuration=configuration, on_scheduled_job=intake.scheduled_job, on_job=intake.job, on_login=logged_in.set
    )
    kopf_settings = informers.operator_settings()
    informers.use_fast_json()
    rotator = None
    if certificate is not None:  # before the webhook serves: the Secret, the caBundle and the served certificate
        rotator = await certrotators.start(certificate, api_client=client, requester=requester, clock=utcnow)
    admission.configure(kopf_settings, registry, settings, tls=rotator.tls if rotator else None)
    runners = []
    if settings.health_port:
        webhook = probes.listening(settings.webhook_addr, settings.webhook_port) if settings.webhook_port else None
        app = probes.health_app(alive=lambda: not stopping.is_set(), ready=listing.ready.is_set, webhook=webhook)
        runners.append(await probes.serve(app, port=settings.health_port))
    if settings.metrics_port:
        runners.append(await probes.serve(probes.metrics_app(metrics.registry), port=settings.metrics_port))

    async def take_over_signals() -> None:
        # kopf installs its SIGINT/SIGTERM handlers while it spawns its tasks (before it logs in) and only
        # stops after its watchers wind down (seconds). Ours replace them once kopf is up: stop acting at
        # once, and let kopf stop through its stop flag (the same event).
        await logged_in.wait()
        await asyncio.sleep(0.2)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stopping.set)

    async def dispatch_when_ready() -> None:
        await listing.ready.wait()
        await dispatcher.run(stopping)

    kopf_task = asyncio.create_task(
        kopf.operator(
            registry=registry,
            settings=kopf_settings,
            memories=informers.resource_memories(),
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            standalone=True,
            stop_flag=stopping,
        ),
        name="kopf",
    )
    lease_thread.start()
    tasks = [
        asyncio.create_task(listing.load(api, settings.namespaces), name="initial listing"),
        asyncio.create_task(lease_thread.wait(), name="leases"),
        asyncio.create_task(dispatch_when_ready(), name="dispatcher"),
        asyncio.create_task(take_over_signals(), name="signals"),
        asyncio.create_task(heap.trim_periodically(stopping), name="heap trim"),
    ]
    if rotator is not None:
        tasks.append(asyncio.create_task(rotator.run(stopping), name="webhook certificate"))
    # Not cancelled at shutdown like the others: it flushes pending Events (bounded) once STOPPING is set.
    events_task = asyncio.create_task(recorder.run(stopping), name="events")
    logger.info(
        "sundial operator %s started (shards=%d, namespaces=%s)",
        settings.identity,
        settings.shards,
        ",".join(settings.namespaces) or "*",
    )
    code = 0
    try:
        pending: set[asyncio.Task[Any]] = {kopf_task, events_task, *tasks}
        while pending and not stopping.is_set():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            failed = [task for task in done if not task.cancelled() and task.exception() is not None]
            for task in failed:
                logger.error("%s failed", task.get_name(), exc_info=task.exception())
                code = 1
            if failed or kopf_task in done:
                break
    finally:
        stopping.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        lease_thread.stop()  # it stops acting, releases the Leases and ends
        if not await lease_thread.join(timeout=settings.renew_deadline + 5):
            logger.warning("lease thread did not end in time; its Leases expire on their own")
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(events_task, timeout=events.SHUTDOWN_FLUSH + 1)
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(kopf_task, timeout=10)
        for runner in runners:
            await runner.cleanup()
        await client.close()
        logger.info("sundial operator stopped")
    return code
