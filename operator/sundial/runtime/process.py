"""The operator process: :func:`run` runs the parts :func:`sundial.runtime.assembly.build` made until
SIGTERM/SIGINT (kopf handles the signals until it is up, then ours do), then shuts them down; :func:`main`
does both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Sequence
from typing import Any

import kopf
from aiohttp import web

from sundial.runtime.acting import sender
from sundial.runtime.acting.reconciler import Planner
from sundial.runtime.assembly import Parts, build
from sundial.runtime.serving import certrotators, heap, probes
from sundial.runtime.settings import Settings

logger = logging.getLogger(__name__)

#: Seconds kopf may take to wind down (its webhook server) after the stop flag is set.
KOPF_STOP_TIMEOUT = 10.0
#: Seconds, beyond the renew deadline, the lease thread may take to release the Leases at shutdown.
LEASE_RELEASE_GRACE = 5.0


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
    if parts.rotator is not None:  # before the webhook serves: the Secret, the caBundle and the served certificate
        await parts.rotator.prepare()
    if parts.probes is not None:  # its own thread: probes answer whatever the main loop is doing
        parts.probes.start()
    runners = [await probes.serve(app, port=port, ssl_context=tls) for app, port, tls in parts.apps]
    kopf_task = asyncio.create_task(
        kopf.operator(
            registry=parts.registry,
            settings=parts.kopf_settings,
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            standalone=True,
            stop_flag=parts.stopping,
        ),
        name="kopf",
    )
    parts.lease_thread.start()
    tasks = [
        *(asyncio.create_task(informer.run(), name=f"{informer.plural} informer") for informer in parts.informers),
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
    if parts.probes is not None:
        await asyncio.to_thread(parts.probes.stop)
    await parts.client.close()
    logger.info("sundial operator stopped")


async def _take_over_signals(parts: Parts) -> None:
    # kopf installs its SIGINT/SIGTERM handlers while it spawns its tasks (before it logs in) and only
    # stops after its tasks wind down. Ours replace them once kopf is up: stop acting at once, and let kopf
    # stop through its stop flag (the same event).
    await parts.logged_in.wait()
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, parts.stopping.set)


async def _dispatch_when_ready(parts: Parts) -> None:
    await parts.readiness.ready.wait()
    await parts.dispatcher.run(parts.stopping)
