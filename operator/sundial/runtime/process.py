"""The operator process: :func:`run` runs the parts :func:`sundial.runtime.assembly.build` made until
SIGTERM/SIGINT, then shuts them down; :func:`main` does both.

Signals (:func:`handle_signals`, installed before anything starts): the first SIGTERM or SIGINT sets
:attr:`Parts.stopping`, so the replica stops acting at once and shuts down in order (tasks cancelled, Leases
released, pending Events flushed, servers closed), and the process exits 0. A further signal during that
shutdown is logged and changes nothing: every step of the shutdown is bounded (the renew deadline plus
:data:`LEASE_RELEASE_GRACE`, the Event flush), and SIGKILL remains for anyone who cannot wait. A failed part
ends the process with exit code 1, after the same shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator, Sequence
from typing import Any

from aiohttp import web

from sundial.runtime.acting import sender
from sundial.runtime.acting.reconciler import Planner
from sundial.runtime.assembly import Parts, build
from sundial.runtime.dispatch import collector
from sundial.runtime.serving import certrotators, heap, probes, watchdog
from sundial.runtime.settings import Settings

logger = logging.getLogger(__name__)

#: The signals that stop the operator.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
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
    with handle_signals(parts.stopping):
        return await _run(parts)


async def _run(parts: Parts) -> int:
    settings = parts.settings
    if parts.rotator is not None:  # before the webhook serves: the Secret, the caBundle and the served certificate
        await parts.rotator.prepare()
    if parts.probes is not None:  # its own thread: probes answer whatever the main loop is doing
        parts.probes.start()
    if parts.webhook is not None:  # its own thread too: reviews never wait on, or stall, the planning loop
        parts.webhook.start()
    runners = [await probes.serve(app, port=port, ssl_context=tls) for app, port, tls in parts.apps]
    parts.lease_thread.start()
    tasks = [
        *(asyncio.create_task(informer.run(), name=f"{informer.plural} informer") for informer in parts.informers),
        asyncio.create_task(parts.lease_thread.wait(), name="leases"),
        asyncio.create_task(follow_leases(parts), name="lease changes"),
        asyncio.create_task(_dispatch_when_ready(parts), name="dispatcher"),
        asyncio.create_task(heap.trim_periodically(parts.stopping), name="heap trim"),
        asyncio.create_task(parts.watchdog.run(parts.stopping), name="watchdog"),
    ]
    if settings.test_block_loop:  # TEST ONLY (SUNDIAL_TEST_BLOCK_LOOP): SIGUSR1 wedges this loop
        watchdog.block_on_signal(settings.test_block_loop)
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
        return await _until_stopped(parts.stopping, {events_task, *tasks})
    finally:
        await _shut_down(parts, tasks, events_task=events_task, runners=runners)


async def _until_stopped(stopping: asyncio.Event, tasks: set[asyncio.Task[Any]]) -> int:
    """Wait for STOPPING (exit code 0) or a failed task (exit code 1)."""
    stopped = asyncio.create_task(stopping.wait(), name="stopping")
    pending: set[asyncio.Task[Any]] = {stopped, *tasks}
    try:
        while not stopping.is_set():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            failed = [task for task in done if not task.cancelled() and task.exception() is not None]
            for task in failed:
                logger.error("%s failed", task.get_name(), exc_info=task.exception())
            if failed:
                return 1
        return 0
    finally:
        stopped.cancel()


@contextlib.contextmanager
def handle_signals(stopping: asyncio.Event) -> Iterator[None]:
    """Sundial's SIGTERM/SIGINT handlers on the running loop while inside: the first signal sets STOPPING, a
    further one is logged and ignored (the shutdown is bounded; see the module docstring). On the way out the
    process's defaults come back (SIGTERM ends the process, SIGINT raises KeyboardInterrupt)."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def on_signal(signum: signal.Signals) -> None:
        if stopping.is_set():
            logger.warning("%s during shutdown: already stopping; the shutdown ends on its own", signum.name)
            return
        logger.info("%s: stopping", signum.name)
        stopping.set()

    for signum in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on this platform, or not the main thread
            loop.add_signal_handler(signum, on_signal, signum)
            installed.append(signum)
    try:
        yield
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)


async def _shut_down(
    parts: Parts,
    tasks: Sequence[asyncio.Task[Any]],
    *,
    events_task: asyncio.Task[None],
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
    for runner in runners:
        await runner.cleanup()
    if parts.webhook is not None:
        await asyncio.to_thread(parts.webhook.stop)
    if parts.probes is not None:
        await asyncio.to_thread(parts.probes.stop)
    await parts.client.close()
    logger.info("sundial operator stopped")


async def _dispatch_when_ready(parts: Parts) -> None:
    await parts.readiness.ready.wait()
    collector.settle()  # what the initial listing left alive is left out of later full collections
    await parts.dispatcher.run(parts.stopping)
