"""What the store keeps of a ScheduledJob body, and its bounds (DESIGN §11.1: only what is read is kept).

* Metadata: only the fields :class:`sundial.model.ObjectMeta` is built from (:data:`KEPT_METADATA`), and of
  the annotations only those the planner reads (:data:`KEPT_ANNOTATIONS`: ``sundial.dev/trigger``,
  ``sundial.dev/redrive``, ``sundial.dev/backfill``, ``sundial.dev/handed-over``). Not kept: ``managedFields``,
  labels, every other annotation (``kubectl.kubernetes.io/last-applied-configuration`` is a second copy of the
  object; another ``sundial.dev/`` key is not read), ownerReferences, finalizers.
* A token annotation longer than the planner handles (:func:`sundial.model.names.token_limit`: 253 characters,
  2048 for a backfill request) is kept as its first ``limit`` characters, ``…sha256:`` and the SHA-256 of the
  whole value: still too long, so the planner refuses it (one Warning Event), and distinct for each value, so a
  new too-long value is refused again - but never more than ~2.1 KB however long the annotation is.
* ``spec`` and ``status`` whole, unless the kept metadata and spec are over :func:`object_bound`: then only a
  *stub* is kept - the metadata without annotations, the status (the operator's own, bounded by the CRD), and
  :data:`sundial.model.resource.TOO_LARGE_FIELD` with the size and the bound instead of the spec. The planner
  reads the stub as an invalid object: ``Ready=False`` with reason ``ObjectTooLarge`` (once), no runs, no Jobs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from sundial.model import names
from sundial.model.resource import TOO_LARGE_FIELD

#: The metadata fields :class:`sundial.model.ObjectMeta` is built from (all the operator reads).
KEPT_METADATA = (
    "name",
    "namespace",
    "uid",
    "generation",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "annotations",
)
#: Annotations kept: those the planner reads (the tokens, DESIGN §5, §4.2; the hand-over from a CronJob, §12.4).
KEPT_ANNOTATIONS = frozenset(names.PLANNER_ANNOTATIONS)

OBJECT_MARGIN_BYTES = 640 * 1024
"""What a kept object's spec and metadata may hold beyond ``--max-job-template-bytes``: the rest of a maximal legal
spec (``spec.exclude`` alone may be 100 entries of 400 dates, ~0.56 MB of JSON; every other field ~0.02 MB) and
the kept metadata (the tokens bounded as above). The status does not count: the operator writes it, and the
CRD bounds its lists. tests/unit/runtime/watch/test_keeping.py builds a maximal legal spec from the CRD's bounds
and checks that it is kept whole."""


def object_bound(max_job_template_bytes: int) -> int:
    """The largest kept object, in bytes of compact JSON: the jobTemplate bound plus :data:`OBJECT_MARGIN_BYTES`
    (0, no bound, when the jobTemplate is not bounded either: ``--max-job-template-bytes 0``)."""
    return max_job_template_bytes + OBJECT_MARGIN_BYTES if max_job_template_bytes > 0 else 0


def kept_annotation(key: str, value: str) -> str:
    """VALUE as kept (see the module docstring): whole when the planner may handle it, else a bounded stand-in."""
    limit = names.token_limit(key)
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{value[:limit]}…sha256:{digest}"


def slim(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a ScheduledJob body the operator reads (see the module docstring), before the size bound."""
    meta = body.get("metadata") or {}
    kept = {field: meta[field] for field in KEPT_METADATA if field in meta}
    annotations = kept.get("annotations")
    if isinstance(annotations, Mapping):
        kept["annotations"] = {
            k: kept_annotation(k, v) for k, v in annotations.items() if k in KEPT_ANNOTATIONS and isinstance(v, str)
        }
    result: dict[str, Any] = {"metadata": kept}
    for part in ("spec", "status"):
        if part in body:
            result[part] = body[part]
    return result


def tenant_size(kept: Mapping[str, Any]) -> int:
    """Bytes of compact JSON of what a tenant writes and the store keeps: the kept metadata and the spec."""
    return len(orjson.dumps({"metadata": kept.get("metadata"), "spec": kept.get("spec")}))


def bounded(body: Mapping[str, Any], *, limit: int) -> tuple[dict[str, Any], bytes]:
    """What is kept of BODY and its compact JSON: :func:`slim`, or the stub when its metadata and spec are over
    LIMIT bytes (0: no bound)."""
    kept = slim(body)
    size = tenant_size(kept) if limit > 0 else 0
    if size <= limit:
        return kept, orjson.dumps(kept)
    meta = {field: value for field, value in kept["metadata"].items() if field != "annotations"}
    stub: dict[str, Any] = {"metadata": meta, TOO_LARGE_FIELD: {"size": size, "limit": limit}}
    if isinstance(kept.get("status"), Mapping):
        stub["status"] = kept["status"]
    return stub, orjson.dumps(stub)
