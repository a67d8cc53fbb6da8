"""The ScheduledJob object as the operator reads it: metadata, a parsed spec (or why not) and status."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from sundial import schedule
from sundial.model.errors import ObjectQuarantinedError, ObjectTooLargeError, SpecError, SpecProblem, problems_from
from sundial.model.spec import ScheduledJobSpec
from sundial.model.status import ScheduledJobStatus

GROUP: Final = "sundial.dev"
VERSION: Final = "v1alpha1"
PLURAL: Final = "scheduledjobs"
KIND: Final = "ScheduledJob"
TOO_LARGE_FIELD: Final = "sundial.dev/tooLarge"
"""A top-level field of a kept stub (never of an API object, whose schema prunes unknown fields):
``{"size": N, "limit": L}`` in place of the spec of an object over the operator's bound (DESIGN §11.1)."""
QUARANTINED_FIELD: Final = "sundial.dev/quarantined"
"""A top-level field of a kept stub: ``{"reason": R, "message": M}`` in place of the spec of an object the intake
could not read (DESIGN §12.1)."""


@dataclass(frozen=True)
class ObjectMeta:
    """The metadata fields Sundial uses."""

    name: str
    namespace: str
    uid: str
    generation: int = 0
    resource_version: str = ""
    creation_timestamp: datetime | None = None
    annotations: Mapping[str, str] = field(default_factory=dict)
    deletion_timestamp: datetime | None = None


@dataclass(frozen=True)
class ScheduledJob:
    """A ScheduledJob: ``spec`` is None when it is invalid, and then ``spec_error`` says why."""

    metadata: ObjectMeta
    spec: ScheduledJobSpec | None
    spec_error: SpecError | None
    status: ScheduledJobStatus
    raw_spec: Mapping[str, Any]

    @classmethod
    def from_dict(
        cls, body: Mapping[str, Any], *, parse: Callable[[Mapping[str, Any]], ScheduledJobSpec] | None = None
    ) -> ScheduledJob:
        """Parse an object as the API returns it. Never raises for a bad spec or status. PARSE (default
        :func:`parse_spec`) reads the spec: the runtime passes one that remembers specs it has read."""
        meta = body.get("metadata") or {}
        created = meta.get("creationTimestamp")
        deleted = meta.get("deletionTimestamp")
        metadata = ObjectMeta(
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")),
            generation=int(meta.get("generation") or 0),
            resource_version=str(meta.get("resourceVersion", "")),
            creation_timestamp=_maybe_time(created),
            annotations=dict(meta.get("annotations") or {}),
            deletion_timestamp=_maybe_time(deleted),
        )
        raw_spec = body.get("spec") or {}
        spec: ScheduledJobSpec | None = None
        error: SpecError | None = _too_large(body.get(TOO_LARGE_FIELD)) or _quarantined(body.get(QUARANTINED_FIELD))
        if error is None:
            try:
                spec = (parse or parse_spec)(raw_spec)
            except SpecError as problem:
                # Kept with the object: without its traceback and pydantic's error (their frames and inputs
                # would keep the whole body alive as long as the error is).
                problem.__context__ = None
                error = problem.with_traceback(None)
        return cls(
            metadata=metadata,
            spec=spec,
            spec_error=error,
            status=parse_status(body.get("status") or {}),
            raw_spec=raw_spec,
        )


def _too_large(marker: Any) -> ObjectTooLargeError | None:
    if not isinstance(marker, Mapping):
        return None
    return ObjectTooLargeError(size=int(marker.get("size") or 0), limit=int(marker.get("limit") or 0))


def _quarantined(marker: Any) -> ObjectQuarantinedError | None:
    if not isinstance(marker, Mapping):
        return None
    return ObjectQuarantinedError(reason=str(marker.get("reason") or ""), message=str(marker.get("message") or ""))


def _maybe_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return schedule.parse_rfc3339(value, field="metadata")
    except schedule.ScheduleError:
        return None


def parse_spec(raw: Mapping[str, Any]) -> ScheduledJobSpec:
    """Validate a spec; a :class:`SpecError` names every invalid field (``spec.…``)."""
    if not isinstance(raw, Mapping):
        raise SpecError([SpecProblem(path="spec", message="must be an object")])
    try:
        return ScheduledJobSpec.model_validate(dict(raw))
    except ValidationError as error:
        raise SpecError(problems_from(error, root="spec")) from None


def parse_status(raw: Mapping[str, Any]) -> ScheduledJobStatus:
    """Read a status; an unreadable one (hand-edited, from a future version) starts afresh."""
    try:
        return ScheduledJobStatus.model_validate(dict(raw))
    except ValidationError:
        return ScheduledJobStatus()


def dump_status(status: ScheduledJobStatus) -> dict[str, Any]:
    """The status as JSON-ready camelCase, without unset optional fields."""
    result: dict[str, Any] = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


#: The top-level status fields this version owns (writes): every field of :class:`ScheduledJobStatus`.
STATUS_FIELDS: Final = tuple(info.alias or name for name, info in ScheduledJobStatus.model_fields.items())


def status_patch(status: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) of ``.status`` that writes ``status`` (a :func:`dump_status`): every
    owned field it has, and null for every owned field it lacks (removed); fields of other versions are
    absent from the patch, so the API server keeps them. Lists are replaced whole (unknown fields inside
    their entries ride along in the entries, :class:`sundial.model.base.StatusModel`); ``counters`` is
    merged key by key."""
    patch: dict[str, Any] = dict.fromkeys(STATUS_FIELDS)
    patch.update(status)
    return patch
