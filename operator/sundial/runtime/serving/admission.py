"""The validating admission webhook: refuse at ``kubectl apply`` time what only Python can check (DESIGN §2).

The CRD's schema and CEL rules refuse what the API server can see. An unparsable cron expression, an unknown
IANA zone, an impossible schedule (``0 0 30 2 *``) or a duration beyond Go's range need
:func:`sundial.model.parse_spec` — the same validation the runtime applies to every object it reads. This
module registers it as kopf's ``@kopf.on.validate`` handler and serves it with :class:`kopf.WebhookServer`
(HTTPS):

* The handler id is :data:`WEBHOOK_ID`, so kopf serves it at ``https://<host>:<port>`` + :data:`WEBHOOK_PATH`.
  A ValidatingWebhookConfiguration must use exactly that path: kopf runs only the handler named by the path's
  last segment, and a request to any other path runs *no* handler and is allowed.
* The refusal is a :class:`kopf.AdmissionError` with code 422 and a message naming every invalid field:
  ``ScheduledJob.sundial.dev "NAME" is invalid: spec.schedule: …; spec.timeZone: …``.
* An UPDATE that leaves ``spec`` unchanged, or of an object being deleted, is allowed even if the spec is
  invalid: an object stored before the webhook existed must still take labels, annotations and finalizer
  removals, or it could never be cleaned up. (Status writes go to the ``/status`` subresource, which the
  webhook's rules do not cover.)
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
from collections.abc import Mapping
from typing import Any, Literal

import kopf

from sundial import model
from sundial.runtime.serving import certrotators
from sundial.runtime.settings import WebhookSettings

WEBHOOK_ID = "validate-scheduledjob"
"""kopf handler id of the validating webhook, and the last segment of the URL path it is served at."""

WEBHOOK_PATH = f"/{WEBHOOK_ID}"
"""URL path to put in ``clientConfig.url`` (or ``clientConfig.service.path``)."""

OPERATIONS: tuple[Literal["CREATE", "UPDATE"], ...] = ("CREATE", "UPDATE")
"""The admission operations the webhook's rules should match."""

REFUSAL_CODE = 422


def problems(body: Mapping[str, Any], *, old: Mapping[str, Any] | None = None) -> list[model.SpecProblem]:
    """What is wrong with BODY's spec (empty: admit it). OLD is the stored object of an UPDATE."""
    if old is not None:
        metadata = body.get("metadata") or {}
        if metadata.get("deletionTimestamp") or body.get("spec") == old.get("spec"):
            return []
    try:
        model.parse_spec(body.get("spec") or {})
    except model.SpecError as error:
        return list(error.problems) or [model.SpecProblem(path="spec", message=str(error))]
    return []


def refusal_message(body: Mapping[str, Any], found: list[model.SpecProblem]) -> str:
    """The API server's own style, naming the object and every field: ``ScheduledJob.sundial.dev "x" is invalid: …``."""
    metadata = body.get("metadata") or {}
    name = metadata.get("name") or metadata.get("generateName") or ""
    fields = "; ".join(str(problem) for problem in found)
    return f'{model.resource.KIND}.{model.resource.GROUP} "{name}" is invalid: {fields}'


async def validate_scheduled_job(
    body: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    operation: str | None = None,
    **_: Any,
) -> None:
    """kopf's validating handler: returns (admit) or raises :class:`kopf.AdmissionError` (refuse, 422)."""
    found = problems(body, old=old if operation == "UPDATE" else None)
    if found:
        raise kopf.AdmissionError(refusal_message(body, found), code=REFUSAL_CODE)


def register(registry: Any) -> None:
    """Add the validating handler to a kopf registry."""
    kopf.on.validate(
        model.resource.GROUP,
        model.resource.VERSION,
        model.resource.PLURAL,
        id=WEBHOOK_ID,
        operations=list(OPERATIONS),
        registry=registry,
    )(validate_scheduled_job)


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
    register(registry)
    kopf_settings.admission.server = webhook_server(settings, tls=tls)
    if settings.managed:
        kopf_settings.admission.managed = settings.managed
