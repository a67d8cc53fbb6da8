"""Every label, annotation and environment variable name Sundial puts on Jobs and reads from ScheduledJobs.

Keys live here, in one place, so the manifest builder, the planner, the runtime and the kubectl plugin agree
(DESIGN §1, §5); docs/reference.md lists them from their docstrings (tools/gen-field-reference.py).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

from sundial.model import types
from sundial.model.resource import GROUP, KIND, VERSION

API_VERSION: Final = f"{GROUP}/{VERSION}"
"""``apiVersion`` of the ScheduledJob (used in the Jobs' ownerReference)."""
OWNER_KIND: Final = KIND

PREFIX: Final = f"{GROUP}/"
"""Every label and annotation key Sundial owns starts with this (the store keeps only these annotations)."""

# Labels on Jobs and their pod templates.
SCHEDULED_JOB_LABEL: Final = "sundial.dev/scheduledjob"
"""The owning ScheduledJob's name; a name over 63 characters becomes at most its first 46 characters (lowercased,
other characters than ``[a-z0-9-]`` as ``-``), ``-`` and 16 hex digits (64 bits) of its SHA-256. Earlier builds
used 5 hex digits (20 bits: two long names sharing one Job group were easy to find); Jobs labelled so are still
found (:func:`scheduled_job_label_values`)."""

SHARD_LABEL: Final = "sundial.dev/shard"
"""On Jobs (not their pods): the shard of the replica that created the Job, the first part of its fencing token,
or the owner's current shard set right before a delete. The server-side fencing policy compares a Job DELETE's
requester with the holder of this shard's Lease; only the operator may write it (``<fullname>-fencing-label``)."""
SHARD_LEASE_LABEL: Final = "sundial.dev/shard-lease"
"""On the shard Leases (``<prefix>-shard-<i>``): ``<i>``. The fencing policy's binding selects its params by it."""

# Annotations on Jobs (and on their pod templates when the object sets ``spec.podTemplateStamps``).
SCHEDULED_TIME_ANNOTATION: Final = "sundial.dev/scheduled-time"
"""Nominal time of the run, RFC 3339 in UTC (``2026-12-24T17:00:00Z``)."""
ATTEMPT_ANNOTATION: Final = "sundial.dev/attempt"
"""1-based attempt number."""
IDEMPOTENCY_KEY_ANNOTATION: Final = "sundial.dev/idempotency-key"
"""Stable per run across attempts and replicas."""
FENCING_TOKEN_ANNOTATION: Final = "sundial.dev/fencing-token"
"""``<shard>-<lease transitions>-<lease uid>`` of the replica that created the Job (on the Job: of the one that
relabelled it right before a delete, if one did; docs/fencing.md). Also on every Event the operator writes; in a
ScheduledJob's status it is ``status.fencingToken``. The Lease's UID makes a recreated Lease
(``leaseTransitions`` back at 0) refuse every token of the old one; earlier builds wrote
``<shard>-<lease transitions>`` (docs/fencing.md, "Upgrading")."""

# Token annotations on the ScheduledJob (DESIGN §5, the Flux ``requestedAt`` pattern).
TRIGGER_ANNOTATION: Final = "sundial.dev/trigger"
"""On a ScheduledJob: a new value (at most 253 characters) requests one manual run now (echoed in
``status.lastHandledTrigger``).
On a Job: why it was created, a :class:`sundial.model.enums.Trigger` (``schedule``, ``catch-up``, ``retry``,
``manual``, ``redrive`` or ``backfill``)."""
REDRIVE_ANNOTATION: Final = "sundial.dev/redrive"
"""A new value (at most 253 characters) redrives every current dead letter (echoed in
``status.lastHandledRedrive``)."""
BACKFILL_ANNOTATION: Final = "sundial.dev/backfill"
"""JSON ``{"token": "...", "from": T1, "to": T2, "maxRuns": N}`` (a token of at most 253 characters): a new token
runs every nominal time in ``[T1, T2]`` that has no run yet, with its scheduled run's Job name and idempotency
key (progress in ``status.backfills``, the token echoed in ``status.lastHandledBackfill``; ``maxRuns`` defaults
to 100)."""

JOB_ANNOTATIONS: Final = (
    SCHEDULED_TIME_ANNOTATION,
    ATTEMPT_ANNOTATION,
    IDEMPOTENCY_KEY_ANNOTATION,
    FENCING_TOKEN_ANNOTATION,
    TRIGGER_ANNOTATION,
)
"""The annotations every Job carries (its pod template too when the object sets ``spec.podTemplateStamps``)."""
TOKEN_ANNOTATIONS: Final = (TRIGGER_ANNOTATION, REDRIVE_ANNOTATION, BACKFILL_ANNOTATION)
"""The request annotations a user (or the plugin, or an Argo CD action) sets on a ScheduledJob."""
HANDED_OVER_ANNOTATION: Final = "sundial.dev/handed-over"
"""Set on a ScheduledJob by ``kubectl sundial import --hand-over``: the CronJob it took over from and that
CronJob's last run (:mod:`sundial.model.handovers`)."""
PLANNER_ANNOTATIONS: Final = (*TOKEN_ANNOTATIONS, HANDED_OVER_ANNOTATION)
"""Every ScheduledJob annotation the planner reads (the runtime's store keeps only these)."""
MAX_TOKEN_LENGTH: Final = types.MAX_TOKEN_LENGTH
"""Longest token of ``sundial.dev/trigger``, ``sundial.dev/redrive`` and of a ``sundial.dev/backfill`` request
(and of their echoes in status, DESIGN §11.1). A longer one is not handled and gets one Warning Event naming
the annotation and the limit (``InvalidToken``, ``InvalidBackfill``); it is never copied into status."""
MAX_BACKFILL_ANNOTATION_LENGTH: Final = 2048
"""Longest ``sundial.dev/backfill`` value (its JSON, with a token of at most 253 characters even if escaped)."""


def token_limit(annotation: str) -> int:
    """The longest value of a token annotation the operator handles (what the store keeps of it)."""
    return MAX_BACKFILL_ANNOTATION_LENGTH if annotation == BACKFILL_ANNOTATION else MAX_TOKEN_LENGTH


# Environment variables injected into every container and init container of a run.
SCHEDULED_TIME_ENV: Final = "SUNDIAL_SCHEDULED_TIME"
"""The same value as the ``sundial.dev/scheduled-time`` annotation."""
ATTEMPT_ENV: Final = "SUNDIAL_ATTEMPT"
"""The same value as the ``sundial.dev/attempt`` annotation."""
IDEMPOTENCY_KEY_ENV: Final = "SUNDIAL_IDEMPOTENCY_KEY"
"""The same value as the ``sundial.dev/idempotency-key`` annotation."""
FENCING_TOKEN_ENV: Final = "SUNDIAL_FENCING_TOKEN"
"""The same value as the ``sundial.dev/fencing-token`` annotation."""

MAX_LABEL_LENGTH: Final = 63
"""Longest DNS-1123 label, and longest label value."""
HASH_LENGTH: Final = 5
"""Hex digits of SHA-256 appended to a shortened prefix by default (and, in earlier builds, to the
``sundial.dev/scheduledjob`` label value: :data:`LEGACY_LABEL_HASH_LENGTH`)."""
LABEL_HASH_LENGTH: Final = 16
"""Hex digits of SHA-256 (64 bits) in a shortened ``sundial.dev/scheduledjob`` label value."""
LEGACY_LABEL_HASH_LENGTH: Final = 5
"""What earlier builds used for it: their Jobs keep that value, and are still found by it."""
JOB_NAME_HASH_LENGTH: Final = 16
"""Hex digits of SHA-256 (64 bits) appended to a shortened ScheduledJob name in a Job name: finding another
name whose Job name collides (to squat a run's Job) takes about 2^64 hashes (with 5 digits, 20 bits, one was
found in 0.44 s)."""

_INVALID = re.compile(r"[^a-z0-9-]+")


def fencing_token(shard: int, transitions: int, lease_uid: str) -> str:
    """``<shard>-<transitions>-<lease uid>`` (``<shard>-<transitions>`` while the Lease's UID is unknown)."""
    return f"{shard}-{transitions}-{lease_uid}" if lease_uid else f"{shard}-{transitions}"


def token_shard(fencing_token: str) -> str:
    """The shard part of a fencing token (the value of :data:`SHARD_LABEL`)."""
    return fencing_token.split("-", 1)[0]


def short_hash(text: str, *, length: int = HASH_LENGTH) -> str:
    """The first ``length`` (default :data:`HASH_LENGTH`) hex digits of SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def dns_label_prefix(name: str, *, room: int, hash_length: int = HASH_LENGTH) -> str:
    """``name`` as the start of a DNS-1123 label, at most ``room`` characters.

    Lowercased, with characters outside ``[a-z0-9-]`` (dots) replaced by ``-``. When that changed the
    name or it is longer than ``room``, it is cut and ``-<hash_length hex of sha256(name)>`` is appended, so
    two different names never share a prefix by accident. Never starts or ends with ``-``.
    """
    clean = _INVALID.sub("-", name.lower()).strip("-")
    if clean == name and len(clean) <= room:
        return clean
    keep = max(room - hash_length - 1, 0)
    head = clean[:keep].strip("-")
    digest = short_hash(name, length=hash_length)
    return f"{head}-{digest}" if head else digest


def scheduled_job_label_value(name: str) -> str:
    """Value of :data:`SCHEDULED_JOB_LABEL` for a ScheduledJob named ``name``.

    The name itself when it is a valid label value (at most 63 characters, which covers every name
    that is also a DNS label); otherwise :func:`dns_label_prefix` of it. Whoever selects a ScheduledJob's
    Jobs by name (the kubectl plugin) must use this same function, through :func:`job_selector`.
    """
    if len(name) <= MAX_LABEL_LENGTH:
        return name
    return dns_label_prefix(name, room=MAX_LABEL_LENGTH, hash_length=LABEL_HASH_LENGTH)


def scheduled_job_label_values(name: str) -> tuple[str, ...]:
    """Every value a Job of the ScheduledJob ``name`` may carry in :data:`SCHEDULED_JOB_LABEL`: the current one
    first, then (for a long name) the 20-bit value of earlier builds, whose Jobs are still found by it."""
    current = scheduled_job_label_value(name)
    if len(name) <= MAX_LABEL_LENGTH:
        return (current,)
    return (current, dns_label_prefix(name, room=MAX_LABEL_LENGTH, hash_length=LEGACY_LABEL_HASH_LENGTH))


def job_selector(name: str) -> str:
    """The label selector of the Jobs of the ScheduledJob named ``name`` (``kubectl get jobs -l ...``)."""
    values = scheduled_job_label_values(name)
    if len(values) == 1:
        return f"{SCHEDULED_JOB_LABEL}={values[0]}"
    return f"{SCHEDULED_JOB_LABEL} in ({','.join(values)})"
