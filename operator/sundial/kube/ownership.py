"""Whose Job is it: the controller ownerReference, and whether an existing Job is the attempt being created."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sundial.model import names


def controller_uid(body: Mapping[str, Any]) -> str | None:
    """UID of the object's controller ownerReference, if any."""
    for ref in (body.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            uid = ref.get("uid")
            return str(uid) if uid else None
    return None


#: The annotations that say which run and attempt a Job is (a Job is adopted only when all of them match).
_ATTEMPT_ANNOTATIONS = (names.IDEMPOTENCY_KEY_ANNOTATION, names.SCHEDULED_TIME_ANNOTATION, names.ATTEMPT_ANNOTATION)


def same_attempt(existing: Mapping[str, Any], manifest: Mapping[str, Any]) -> bool:
    """True when ``existing`` carries the run and attempt annotations ``manifest`` has (the trigger may differ:
    a backfill of a scheduled time uses its Job name)."""
    found = (existing.get("metadata") or {}).get("annotations") or {}
    wanted = (manifest.get("metadata") or {}).get("annotations") or {}
    return all(found.get(key) == wanted.get(key) for key in _ATTEMPT_ANNOTATIONS)
