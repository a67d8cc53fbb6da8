"""``/healthz`` and ``/readyz`` on a thread of their own, so that a busy main loop never misses a probe.

The kubelet's probes time out after seconds; missed readiness takes the pod out of the webhook Service (and,
with ``failurePolicy: Fail``, every ScheduledJob write in the cluster is refused), missed liveness restarts
it. Served on the main loop they would wait behind whatever runs there (a planning pass, a burst of watch
events). :class:`ProbeThread` serves the app on a daemon thread with its own event loop, as the lease
renewals run (:mod:`sundial.runtime.coordination.leasethread`); it gets the interpreter within the GIL's
switch interval whenever a probe arrives.

What crosses threads: the app's ``alive``/``ready`` callables are called on the probe thread. The operator's
read one ``asyncio.Event``'s flag each (``stopping``, the initial listing's ``ready``): a single attribute
read, which never waits for the main loop. The webhook check opens its TCP connection on the probe thread's
own loop. ``/metrics`` stays on the main loop (its access reviews use the main loop's API client).

The admission webhook is served the same way, on a thread of its own with TLS (``ssl_context``):
:mod:`.webhookserver`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading

from aiohttp import web

logger = logging.getLogger(__name__)

#: Seconds :meth:`ProbeThread.start` waits for the port to be bound.
START_TIMEOUT = 10.0


class ProbeThread:
    """Serves ``app`` on ``host:port`` (HTTPS with SSL_CONTEXT) from a daemon thread with its own event loop."""

    def __init__(
        self,
        app: web.Application,
        *,
        port: int,
        host: str = "0.0.0.0",
        name: str = "sundial-probes",
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._app = app
        self._ssl_context = ssl_context
        self._host = host
        self._port = port
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.bound_port = 0
        """The port it listens on (the one asked for, or the one the system chose for 0)."""

    @property
    def port(self) -> int:
        """The port asked for (0: any)."""
        return self._port

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start the thread and wait until it listens; raise what prevented it (the port is taken...)."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the {self._thread.name} server did not listen on port {self._port} within {timeout}s")
        if self._error is not None:
            raise self._error

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop serving and end the thread; True if it ended within TIMEOUT seconds."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(stopping.set)
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as error:  # reported by start(), or logged once serving
            self._error = error
            if self._ready.is_set():
                logger.error("%s server failed", self._thread.name, exc_info=error)
        finally:
            self._ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self) -> None:
        self._stopping = asyncio.Event()
        runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host=self._host, port=self._port, ssl_context=self._ssl_context)
            await site.start()
            server = site._server
            sockets = getattr(server, "sockets", None) or ()
            self.bound_port = int(sockets[0].getsockname()[1]) if sockets else self._port
            self._ready.set()
            await self._stopping.wait()
        finally:
            await runner.cleanup()
