"""Every label, annotation and environment variable name Sundial puts on Jobs and reads from ScheduledJobs.

Keys live here, in one place, so the manifest builder, the planner and the runtime agree (DESIGN §1, §5).
"""

from __future__ import annotations

import hashlib
import re

from sundial.model.resource import GROUP, KIND, VERSION

API_VERSION = f"{GROUP}/{VERSION}"
"""``apiVersion`` of the ScheduledJob (used in the Jobs' ownerReference)."""
OWNER_KIND = KIND

# Labels on Jobs and their pod templates.
SCHEDULED_JOB_LABEL = "sundial.dev/scheduledjob"
"""The owning ScheduledJob's name (see :func:`scheduled_job_label_value` for names over 63 characters)."""

# Annotations on Jobs and their pod templates.
SCHEDULED_TIME_ANNOTATION = "sundial.dev/scheduled-time"
"""Nominal time of the run, RFC 3339 in UTC (``2026-12-24T17:00:00Z``)."""
ATTEMPT_ANNOTATION = "sundial.dev/attempt"
"""1-based attempt number."""
IDEMPOTENCY_KEY_ANNOTATION = "sundial.dev/idempotency-key"
"""Stable per run across attempts and replicas."""
FENCING_TOKEN_ANNOTATION = "sundial.dev/fencing-token"
"""``<shard>-<lease transitions>`` of the replica that created the Job."""
TRIGGER_ANNOTATION = "sundial.dev/trigger"
"""Why the Job was created: schedule, catch-up, retry, manual or redrive."""

# Token annotations on the ScheduledJob (DESIGN §5, the Flux ``requestedAt`` pattern).
TRIGGER_TOKEN_ANNOTATION = "sundial.dev/trigger"
"""A new value requests one manual run now (echoed in ``status.lastHandledTrigger``)."""
REDRIVE_TOKEN_ANNOTATION = "sundial.dev/redrive"
"""A new value redrives every current dead letter (echoed in ``status.lastHandledRedrive``)."""

# Environment variables injected into every container and init container of a run.
SCHEDULED_TIME_ENV = "SUNDIAL_SCHEDULED_TIME"
ATTEMPT_ENV = "SUNDIAL_ATTEMPT"
IDEMPOTENCY_KEY_ENV = "SUNDIAL_IDEMPOTENCY_KEY"
FENCING_TOKEN_ENV = "SUNDIAL_FENCING_TOKEN"

MAX_LABEL_LENGTH = 63
"""Longest DNS-1123 label, and longest label value."""
HASH_LENGTH = 5
"""Hex digits of SHA-256 appended to a shortened name."""

_INVALID = re.compile(r"[^a-z0-9-]+")


def short_hash(text: str) -> str:
    """The first :data:`HASH_LENGTH` hex digits of SHA-256 of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def dns_label_prefix(name: str, *, room: int) -> str:
    """``name`` as the start of a DNS-1123 label, at most ``room`` characters.

    Lowercased, with characters outside ``[a-z0-9-]`` (dots) replaced by ``-``. When that changed the
    name or it is longer than ``room``, it is cut and ``-<5 hex of sha256(name)>`` is appended, so two
    different names never share a prefix by accident. Never starts or ends with ``-``.
    """
    clean = _INVALID.sub("-", name.lower()).strip("-")
    if clean == name and len(clean) <= room:
        return clean
    keep = max(room - HASH_LENGTH - 1, 0)
    head = clean[:keep].strip("-")
    return f"{head}-{short_hash(name)}" if head else short_hash(name)


def scheduled_job_label_value(name: str) -> str:
    """Value of :data:`SCHEDULED_JOB_LABEL` for a ScheduledJob named ``name``.

    The name itself when it is a valid label value (at most 63 characters, which covers every name
    that is also a DNS label); otherwise :func:`dns_label_prefix` of it. The runtime must select Jobs
    with this same function.
    """
    return dns_label_prefix(name, room=MAX_LABEL_LENGTH) if len(name) > MAX_LABEL_LENGTH else name
