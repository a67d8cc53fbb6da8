"""The validating admission webhook: refuse at ``kubectl apply`` time what only Python can check (DESIGN §2).

The CRD's schema and CEL rules refuse what the API server can see. An unparsable cron expression, an unknown
IANA zone, an impossible schedule (``0 0 30 2 *``) or a duration beyond Go's range need
:func:`sundial.model.parse_spec` — the same validation the runtime applies to every object it reads. This
module says what is checked and how it is served; :mod:`.webhookserver` serves it over HTTPS on a thread and
event loop of its own, never the operator's main loop:

* ScheduledJobs are validated at ``https://<host>:<port>`` + :data:`WEBHOOK_PATH`, ScheduleCalendars at
  :data:`CALENDAR_WEBHOOK_PATH` (a second webhook in the same configuration: a bad cron entry, date, range or
  zone is refused naming ``spec.exclude[i]…``). Any other path is 404: with ``failurePolicy: Fail`` a
  misconfigured path refuses writes instead of admitting them unchecked.
* A refusal is an AdmissionReview answer with code 422 and a message naming every invalid field:
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
* Before a review is decoded its size (:data:`~.reviews.MAX_REQUEST_BYTES`, 413) and JSON depth
  (:data:`~.reviews.MAX_DEPTH`, 400) are bounded; decoding and validation run in at most 2 worker processes
  (:func:`worker_processes`) with 8 more waiting, and a request beyond that is refused at once (429, "busy:
  retry"): a flood of AdmissionReviews (the port has no client authentication) costs its sender errors, not
  the operator's loop. An exclude list's dates are counted before any is parsed.
* The operator never writes the ValidatingWebhookConfiguration itself (only, with ``--webhook-cert-secret``,
  its ``caBundle``): the Helm chart, ``config/webhook`` and the tests create it, scoped and with
  ``failurePolicy: Fail``.
* The serving certificate comes from the operator's own rotator (``--webhook-cert-secret``,
  :mod:`.certrotators`, passed as ``tls``), or from ``--webhook-cert-file``/``--webhook-key-file`` (re-read
  when the files change, e.g. a cert-manager Secret: :mod:`.webhooktls`), or is made at startup for
  ``--webhook-host`` (self-signed; ``--webhook-ca-dump FILE`` writes the CA bundle to give the API server as
  ``caBundle``).
"""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sundial import model
from sundial.model import calendars
from sundial.runtime.serving import certrotators, offloop, probethread, webhookserver, webhooktls
from sundial.runtime.settings import WebhookSettings

WEBHOOK_PATH = "/validate-scheduledjob"
"""URL path of the ScheduledJob webhook, to put in ``clientConfig.url`` (or ``clientConfig.service.path``)."""

CALENDAR_WEBHOOK_PATH = "/validate-schedulecalendar"
"""URL path of the ScheduleCalendar webhook (a second webhook of the same configuration)."""

OPERATIONS = webhookserver.OPERATIONS
"""The admission operations the webhook's rules should match."""

REFUSAL_CODE = webhookserver.REFUSAL_CODE
BUSY_CODE = webhookserver.BUSY_CODE

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


def _scheduled_job_problems(
    body: Mapping[str, Any], old: Mapping[str, Any] | None, *, max_job_template_bytes: int
) -> list[model.SpecProblem]:
    return problems(body, old=old, max_job_template_bytes=max_job_template_bytes)


def _calendar_problems(body: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[model.SpecProblem]:
    return calendar_problems(body, old=old)


def scheduled_jobs(*, max_job_template_bytes: int = 0) -> webhookserver.Webhook:
    """The ScheduledJob webhook (:data:`WEBHOOK_PATH`), bounding ``spec.jobTemplate`` to MAX_JOB_TEMPLATE_BYTES."""
    return webhookserver.Webhook(
        path=WEBHOOK_PATH,
        resource=model.resource.PLURAL,
        kind=model.resource.KIND,
        check=functools.partial(_scheduled_job_problems, max_job_template_bytes=max_job_template_bytes),
        refusal=refusal_message,
    )


def schedule_calendars() -> webhookserver.Webhook:
    """The ScheduleCalendar webhook (:data:`CALENDAR_WEBHOOK_PATH`): a bad entry is refused at ``kubectl apply``
    time instead of surfacing later as ``InvalidCalendar`` on every ScheduledJob that refers to it."""
    return webhookserver.Webhook(
        path=CALENDAR_WEBHOOK_PATH,
        resource=calendars.CALENDAR_PLURAL,
        kind=calendars.CALENDAR_KIND,
        check=_calendar_problems,
        refusal=refusal_message,
    )


def serving_tls(
    settings: WebhookSettings, *, tls: certrotators.ServingTLS | None, now: datetime
) -> tuple[ssl.SSLContext, Callable[[], object] | None]:
    """The context to listen with, and the check that reloads it (given files only): the operator-managed
    certificate TLS, else ``--webhook-cert-file``/``--webhook-key-file``, else a self-signed one."""
    if tls is not None:
        return tls.context, None
    if settings.cert_file is not None and settings.key_file is not None:
        files = webhooktls.CertificateFiles(settings.cert_file, settings.key_file)
        if settings.ca_dump is not None:
            settings.ca_dump.write_bytes(settings.cert_file.read_bytes())
        return files.context, files.reload_if_changed
    return webhooktls.self_signed(settings.host, now=now, ca_dump=settings.ca_dump).context, None


def worker_processes() -> offloop.Offloaded:
    """The webhook's workers: 2 processes (8 calls waiting) whose forkserver imported this module once."""
    return offloop.Offloaded(name="sundial-webhook-check", processes=True, preload=[__name__])


def server(
    settings: WebhookSettings, *, tls: certrotators.ServingTLS | None = None, now: datetime
) -> probethread.ProbeThread | None:
    """The webhook server on its own thread (not started), from ``--webhook-*`` settings; None when
    ``--webhook-port`` is 0. With TLS it serves the operator-managed certificate."""
    if not settings.port:
        return None
    hooks = [scheduled_jobs(max_job_template_bytes=settings.max_job_template_bytes), schedule_calendars()]
    context, reload = serving_tls(settings, tls=tls, now=now)
    app = webhookserver.Server(hooks, checks=worker_processes()).app(
        reload=reload, reload_interval=webhooktls.RELOAD_INTERVAL
    )
    return probethread.ProbeThread(
        app, port=settings.port, host=settings.addr or "0.0.0.0", name="sundial-webhook", ssl_context=context
    )
