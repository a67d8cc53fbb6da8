"""The validating admission webhook: refuse at ``kubectl apply`` time what only Python can check (DESIGN §2).

The CRD's schema and CEL rules refuse what the API server can see. An unparsable cron expression, an unknown
IANA zone, an impossible schedule (``0 0 30 2 *``) or a duration beyond Go's range need
:func:`sundial.model.parse_spec` — the same validation the runtime applies to every object it reads. This
module registers it as kopf's ``@kopf.on.validate`` handler and serves it with :class:`kopf.WebhookServer`
(HTTPS):

* The handler id is :data:`WEBHOOK_ID`, so kopf serves it at ``https://<host>:<port>`` + :data:`WEBHOOK_PATH`.
  A ValidatingWebhookConfiguration must use exactly that path: kopf runs only the handler named by the path's
  last segment, and a request to any other path runs *no* handler and is allowed. ScheduleCalendars have
  their own handler at :data:`CALENDAR_WEBHOOK_PATH` (a second webhook in the same configuration): a bad
  cron entry, date, range or zone is refused naming ``spec.exclude[i]…``.
* The refusal is a :class:`kopf.AdmissionError` with code 422 and a message naming every invalid field:
  ``ScheduledJob.sundial.dev "NAME" is invalid: spec.schedule: …; spec.timeZone: …``.
* A ``spec.jobTemplate`` larger than ``--max-job-template-bytes`` (default 256 KiB of compact JSON, 0: no
  limit) is refused too: every replica keeps every ScheduledJob in memory, and CEL has no size of an object.
  Who may write a jobTemplate at all (``create`` on ``batch/jobs``) is the API server's own check, a
  ValidatingAdmissionPolicy of the chart and of ``config/admission-policies``, not this webhook's.
* An UPDATE that leaves ``spec`` unchanged is allowed even if the spec is invalid or too large: an object stored
  before the webhook existed must still take labels, annotations and finalizer removals, or it could never be
  cleaned up. An UPDATE of an object being deleted that changes ``spec`` is not validated either, but its
  ``spec.jobTemplate`` is still bounded (a tenant owning a finalizer could otherwise delete, then grow it).
  (Status writes go to the ``/status`` subresource, which the webhook's rules do not cover.)
* Validation runs off the main loop (:mod:`.offloop`): on at most 2 threads, with at most 8 more requests
  waiting; a request beyond that is refused at once (429, "busy: retry"), so a flood of AdmissionReviews
  (the port has no client authentication) costs its sender errors, not the operator's loop. The request body
  is bounded by kopf's aiohttp server (its default ``client_max_size``, :data:`MAX_REQUEST_BYTES`: a bigger
  one is answered 413 and, with ``failurePolicy: Fail``, the write refused), and an exclude list's dates are
  counted before any is parsed.
* kopf does not manage the ValidatingWebhookConfiguration unless ``--webhook-managed NAME`` is given: the
  Helm chart and the tests create it, scoped and with ``failurePolicy: Fail``.
* The serving certificate comes from ``--webhook-cert-file``/``--webhook-key-file`` (re-read by kopf when the
  files change, e.g. a cert-manager Secret), or from the operator's own rotator (``--webhook-cert-secret``,
  :mod:`.certrotators`, passed as ``tls``). Without either kopf generates a self-signed certificate, which
  needs the optional ``certbuilder`` package; ``--webhook-ca-dump FILE`` writes the CA bundle to give the API
  server (``caBundle``).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import kopf

from sundial import model
from sundial.model import calendars
from sundial.runtime.serving import certrotators, offloop
from sundial.runtime.settings import WebhookSettings

WEBHOOK_ID = "validate-scheduledjob"
"""kopf handler id of the validating webhook, and the last segment of the URL path it is served at."""

WEBHOOK_PATH = f"/{WEBHOOK_ID}"
"""URL path to put in ``clientConfig.url`` (or ``clientConfig.service.path``)."""

CALENDAR_WEBHOOK_ID = "validate-schedulecalendar"
"""kopf handler id of the ScheduleCalendar webhook (a second webhook of the same configuration)."""

CALENDAR_WEBHOOK_PATH = f"/{CALENDAR_WEBHOOK_ID}"
"""URL path of the ScheduleCalendar webhook."""

OPERATIONS: tuple[Literal["CREATE", "UPDATE"], ...] = ("CREATE", "UPDATE")
"""The admission operations the webhook's rules should match."""

REFUSAL_CODE = 422
BUSY_CODE = 429
#: Bytes of an AdmissionReview kopf's webhook server reads at most (aiohttp's default ``client_max_size``).
MAX_REQUEST_BYTES = 1024**2

KIB = 1024
JOB_TEMPLATE_PATH = "spec.jobTemplate"


def serialized_size(value: Any) -> int:
    """Bytes of VALUE as compact JSON (UTF-8): how the limit measures a jobTemplate."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def size_problem(spec: Mapping[str, Any], *, limit: int) -> model.SpecProblem | None:
    """``spec.jobTemplate`` over LIMIT bytes (0: no limit), or None."""
    if limit <= 0 or "jobTemplate" not in spec:
        return None
    size = serialized_size(spec["jobTemplate"])
    if size <= limit:
        return None
    readable = f"{limit // KIB} KiB" if limit % KIB == 0 else f"{limit} bytes"
    return model.SpecProblem(
        path=JOB_TEMPLATE_PATH,
        message=f"is {size} bytes of JSON, over the limit of {limit} bytes ({readable}, --max-job-template-bytes)",
    )


def _exempt(body: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """An UPDATE (OLD given) that leaves ``spec`` unchanged: admitted as it is."""
    return old is not None and body.get("spec") == old.get("spec")


def _deleting(body: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """An UPDATE of an object being deleted: its spec is not validated, but still bounded in size."""
    return old is not None and bool((body.get("metadata") or {}).get("deletionTimestamp"))


def problems(
    body: Mapping[str, Any], *, old: Mapping[str, Any] | None = None, max_job_template_bytes: int = 0
) -> list[model.SpecProblem]:
    """What is wrong with BODY's spec (empty: admit it). OLD is the stored object of an UPDATE;
    MAX_JOB_TEMPLATE_BYTES bounds ``spec.jobTemplate`` (0: no bound)."""
    if _exempt(body, old):
        return []
    spec = body.get("spec") or {}
    found: list[model.SpecProblem] = []
    too_big = size_problem(spec, limit=max_job_template_bytes)
    if too_big is not None:
        found.append(too_big)
    if _deleting(body, old):
        return found  # a spec change while deleting: only the size bound (every replica would keep it)
    try:
        model.parse_spec(spec)
    except model.SpecError as error:
        found.extend(error.problems or [model.SpecProblem(path="spec", message=str(error))])
    return found


def calendar_problems(body: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[model.SpecProblem]:
    """What is wrong with a ScheduleCalendar's spec (cron entries, dates, ranges, time zone), as the operator
    would find it; the same exemptions as :func:`problems` for UPDATEs."""
    if _exempt(body, old) or _deleting(body, old):
        return []
    error = calendars.ScheduleCalendar.from_dict(body).error
    if error is None:
        return []
    return list(error.problems) or [model.SpecProblem(path="spec", message=str(error))]


def refusal_message(body: Mapping[str, Any], found: list[model.SpecProblem], *, kind: str = model.resource.KIND) -> str:
    """The API server's own style, naming the object and every field: ``ScheduledJob.sundial.dev "x" is invalid: …``."""
    metadata = body.get("metadata") or {}
    name = metadata.get("name") or metadata.get("generateName") or ""
    fields = "; ".join(str(problem) for problem in found)
    return f'{kind}.{model.resource.GROUP} "{name}" is invalid: {fields}'


Handler = Callable[..., Awaitable[None]]


async def _checked(
    checks: offloop.Offloaded | None, function: Callable[..., list[model.SpecProblem]], body: Any, **kw: Any
) -> list[model.SpecProblem]:
    """FUNCTION(body, **kw) on CHECKS' threads (None: here); busy: refused at once."""
    if checks is None:
        return function(body, **kw)
    try:
        return await checks.run(function, body, **kw)
    except offloop.BusyError:
        raise kopf.AdmissionError("the sundial webhook is busy: retry the request", code=BUSY_CODE) from None


def validator(*, max_job_template_bytes: int = 0, checks: offloop.Offloaded | None = None) -> Handler:
    """kopf's validating handler: returns (admit) or raises :class:`kopf.AdmissionError` (refuse, 422; 429
    when CHECKS, the threads validation runs on, are all busy)."""

    async def validate_scheduled_job(
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        operation: str | None = None,
        **_: Any,
    ) -> None:
        stored = old if operation == "UPDATE" else None
        found = await _checked(checks, problems, body, old=stored, max_job_template_bytes=max_job_template_bytes)
        if found:
            raise kopf.AdmissionError(refusal_message(body, found), code=REFUSAL_CODE)

    return validate_scheduled_job


validate_scheduled_job = validator()
"""The handler without a size limit, validating on the loop it is called on."""


def calendar_validator(*, checks: offloop.Offloaded | None = None) -> Handler:
    """kopf's validating handler for ScheduleCalendars: a bad entry is refused at ``kubectl apply`` time
    instead of surfacing later as ``InvalidCalendar`` on every ScheduledJob that refers to it."""

    async def validate_schedule_calendar(
        body: Mapping[str, Any],
        old: Mapping[str, Any] | None = None,
        operation: str | None = None,
        **_: Any,
    ) -> None:
        found = await _checked(checks, calendar_problems, body, old=old if operation == "UPDATE" else None)
        if found:
            kind = calendars.CALENDAR_KIND
            raise kopf.AdmissionError(refusal_message(body, found, kind=kind), code=REFUSAL_CODE)

    return validate_schedule_calendar


validate_schedule_calendar = calendar_validator()
"""The ScheduleCalendar handler, validating on the loop it is called on."""


def register(registry: Any, *, max_job_template_bytes: int = 0, checks: offloop.Offloaded | None = None) -> None:
    """Add the validating handlers (ScheduledJobs, ScheduleCalendars) to a kopf registry; CHECKS: the threads
    they validate on (None: a new :class:`~.offloop.Offloaded` with the default bounds)."""
    checks = checks or offloop.Offloaded(name="sundial-webhook")
    kopf.on.validate(
        model.resource.GROUP,
        model.resource.VERSION,
        model.resource.PLURAL,
        id=WEBHOOK_ID,
        operations=list(OPERATIONS),
        registry=registry,
    )(validator(max_job_template_bytes=max_job_template_bytes, checks=checks))
    kopf.on.validate(
        model.resource.GROUP,
        model.resource.VERSION,
        calendars.CALENDAR_PLURAL,
        id=CALENDAR_WEBHOOK_ID,
        operations=list(OPERATIONS),
        registry=registry,
    )(calendar_validator(checks=checks))


def can_self_sign() -> bool:
    """Whether kopf can generate a self-signed certificate (it needs the optional ``certbuilder``)."""
    return importlib.util.find_spec("certbuilder") is not None


def webhook_server(settings: WebhookSettings, *, tls: certrotators.ServingTLS | None = None) -> Any:
    """The HTTPS server of the webhook, from ``--webhook-*`` settings (``--webhook-port`` must be set); with
    TLS, serving the operator-managed certificate in its context."""
    if not settings.port:
        raise ValueError("the webhook is disabled (--webhook-port 0)")
    if tls is not None:
        return kopf.WebhookServer(
            addr=settings.addr or None,
            port=settings.port,
            host=settings.host or None,
            context=tls.context,
            certfile=tls.certfile,
            pkeyfile=tls.keyfile,
            cadata=tls.cadata,
            cadump=settings.ca_dump,
        )
    own_certificate = settings.cert_file is not None and settings.key_file is not None
    if not own_certificate and not can_self_sign():
        raise ValueError(
            "--webhook-port without --webhook-cert-file/--webhook-key-file needs a self-signed certificate, "
            "which needs the certbuilder package (pip install certbuilder)"
        )
    return kopf.WebhookServer(
        addr=settings.addr or None,
        port=settings.port,
        host=settings.host or None,
        certfile=settings.cert_file,
        pkeyfile=settings.key_file,
        cadump=settings.ca_dump,
    )


def configure(
    kopf_settings: Any, registry: Any, settings: WebhookSettings, *, tls: certrotators.ServingTLS | None = None
) -> None:
    """Register the handler and its server when ``--webhook-port`` is set; otherwise do nothing."""
    if not settings.port:
        return
    register(registry, max_job_template_bytes=settings.max_job_template_bytes)
    kopf_settings.admission.server = webhook_server(settings, tls=tls)
    if settings.managed:
        kopf_settings.admission.managed = settings.managed
