"""The admission webhook's HTTPS server, on a thread and event loop of its own (DESIGN §12.2).

Nothing of a review touches the operator's main loop (planning, watches, Leases' bookkeeping): the server
runs on a :class:`~.probethread.ProbeThread` with TLS, and each request goes through

1. the path: one :class:`Webhook` per path (``/validate-scheduledjob``, ``/validate-schedulecalendar``); any
   other path is 404, any other method 405 (never "allowed");
2. the in-flight bound: at most :attr:`Server.limit` requests are read or checked at once; one more is
   answered 429 with ``Retry-After`` before its body is read;
3. the size bound: a ``Content-Length`` over :data:`~.reviews.MAX_REQUEST_BYTES` is answered 413 before the
   body is read, and a chunked body is cut off there (413 too);
4. on a worker of :class:`~.offloop.Offloaded` (the operator's: 2 worker *processes*, 8 waiting, 429 beyond;
   see :mod:`.offloop` for why not threads): the depth bound, decoding and validation (:func:`answer_review`);
   a body that is not a v1 AdmissionReview is 400 naming the field, a refused object a review answer with code
   422 naming every invalid field.

With ``failurePolicy: Fail`` every answer but an allowing review refuses the write: a flood costs its sender
errors and the writers of the moment retries, never the planning loop its time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from aiohttp import web

from sundial import model
from sundial.runtime.serving import offloop, reviews

logger = logging.getLogger(__name__)

REFUSAL_CODE = 422
BUSY_CODE = 429
JSON = "application/json"

Check = Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[model.SpecProblem]]
"""What is wrong with an object (empty: admit it), given the stored object of an UPDATE (else None)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Webhook:
    """One validating webhook: where it is served, what it validates, and how."""

    path: str
    resource: str
    """The plural it validates (``request.resource.resource``): a review of any other is refused (400)."""
    kind: str
    check: Check
    refusal: Callable[..., str]
    """The refusal message: ``refusal(body, problems, kind=kind)``. With worker processes :attr:`check` and
    this must pickle (module-level functions or :func:`functools.partial` of them)."""


OPERATIONS = ("CREATE", "UPDATE")
"""The operations validated; any other (the rules never send one) is admitted."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """What :func:`answer_review` found: the HTTP status and body, and the refusal message to log (if any)."""

    status: int
    body: bytes
    refused: str = ""


def answer_review(webhook: Webhook, raw: bytes) -> Answer:
    """The answer to RAW (within the size bound) for WEBHOOK: 200 and an AdmissionReview response, or 400 and
    the reason it is not a review this webhook answers. Runs on a worker (a thread or a process)."""
    try:
        review = reviews.read(raw)
    except reviews.MalformedReviewError as error:
        return Answer(400, str(error).encode())
    if review.resource != webhook.resource:
        wrong = f"request.resource.resource: {webhook.path} validates {webhook.resource}, not {review.resource}"
        return Answer(400, wrong.encode())
    if review.operation not in OPERATIONS:
        return Answer(200, reviews.answer(review.uid))
    found = webhook.check(review.body, review.old if review.operation == "UPDATE" else None)
    if not found:
        return Answer(200, reviews.answer(review.uid))
    message = webhook.refusal(review.body, found, kind=webhook.kind)
    return Answer(200, reviews.answer(review.uid, code=REFUSAL_CODE, message=message), refused=message)


class Server:
    """The webhooks' aiohttp application (see the module docstring); :meth:`app` is served by a thread."""

    def __init__(
        self,
        webhooks: Sequence[Webhook],
        *,
        checks: offloop.Offloaded | None = None,
        max_bytes: int = reviews.MAX_REQUEST_BYTES,
        limit: int = offloop.DEFAULT_WORKERS + offloop.DEFAULT_WAITING,
    ) -> None:
        self.webhooks = tuple(webhooks)
        self.checks = checks or offloop.Offloaded(name="sundial-webhook-check")
        self.max_bytes = max_bytes
        self.limit = limit
        """Requests read or checked at once; one more is refused (429) before its body is read."""
        self.in_flight = 0
        """Requests being read or checked now (changed on the server's loop only)."""
        self._warming: asyncio.Task[int] | None = None

    def app(self, *, reload: Callable[[], object] | None = None, reload_interval: float = 10.0) -> web.Application:
        """The application; RELOAD (a certificate check) is called every RELOAD_INTERVAL seconds while it runs."""
        app = web.Application(client_max_size=self.max_bytes)
        for webhook in self.webhooks:
            app.router.add_post(webhook.path, functools.partial(self._handle, webhook))
        if reload is not None:
            app.cleanup_ctx.append(functools.partial(_periodically, reload, reload_interval))
        app.on_startup.append(self._warm)
        app.on_cleanup.append(self._close)
        return app

    async def _warm(self, _: web.Application) -> None:
        """Start a worker now (for processes: the forkserver's imports take seconds), not at the first review."""
        self._warming = asyncio.create_task(self.checks.run(int), name="webhook workers warm-up")
        self._warming.add_done_callback(_log_failure)

    async def _close(self, _: web.Application) -> None:
        self.checks.shutdown()

    async def _handle(self, webhook: Webhook, request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > self.max_bytes:
            return _too_large(self.max_bytes)
        if self.in_flight >= self.limit:
            return _busy()
        self.in_flight += 1
        try:
            try:
                raw = await request.read()
            except web.HTTPRequestEntityTooLarge:
                return _too_large(self.max_bytes)
            answer = await self.checks.run(answer_review, webhook, raw)
        except offloop.BusyError:
            return _busy()
        finally:
            self.in_flight -= 1
        if answer.refused:
            logger.info("admission refused (%s): %s", webhook.resource, answer.refused)
        content_type = JSON if answer.status == 200 else "text/plain"
        return web.Response(status=answer.status, body=answer.body, content_type=content_type)


def _log_failure(task: asyncio.Task[int]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.warning("webhook workers did not start: %s", task.exception())


def _too_large(limit: int) -> web.Response:
    return web.Response(status=413, text=f"request body: over {limit} bytes\n")


def _busy() -> web.Response:
    text = "the sundial webhook is busy: retry the request\n"
    return web.Response(status=BUSY_CODE, text=text, headers={"Retry-After": "1"})


async def _periodically(call: Callable[[], object], interval: float, _: web.Application) -> AsyncIterator[None]:
    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            call()

    task = asyncio.create_task(loop(), name="webhook certificate files")
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
