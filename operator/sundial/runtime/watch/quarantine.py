"""Quarantine: what the intake does with an object it cannot read (DESIGN §12.1).

Whatever the operator reads from the API server is untrusted: a tenant may write a Job whose timestamp lies
before year 1 in UTC, a ScheduledJob nested hundreds of levels deep under ``jobTemplate.metadata`` (the schema
keeps unknown fields there), a value of an unexpected type. Every listed item and every watch event is handed to
the store inside a guard (:mod:`sundial.runtime.watch.listwatch`); an exception raised while reading one object
puts that object here instead:

* it is kept as a :class:`Stub` - uid, namespace, name, resourceVersion, and the reason - and nothing else of it;
* it is counted (``sundial_intake_quarantined_total{kind, reason}``; ``sundial_intake_quarantined_objects{kind}`` holds
  the current number) and logged once per (uid, resourceVersion), with the exception's type and where it was
  raised - never its text or the object's values, which may hold what a tenant keeps secret;
* a quarantined ScheduledJob is still planned as a stub: ``Ready=False`` with reason ``Quarantined`` and a
  Warning Event of that reason, so its owner sees why it does not run (``kubectl sundial describe``); a
  quarantined ScheduleCalendar is kept as an invalid calendar (its referrers report it); a quarantined Job is
  left out of its owner's view;
* a later version of the object that reads cleanly, or its deletion, takes it out of quarantine.

No other object is affected: the stub replaces only what was kept of that one object.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

logger = logging.getLogger(__name__)

#: The longest text kept of a stub's name, namespace, uid or resourceVersion (a DNS subdomain's length).
FIELD_LIMIT = 253


class Reason(StrEnum):
    """Why an object was quarantined (the metric's ``reason`` label)."""

    TOO_DEEP = "TooDeep"
    """Nested deeper than the decoder or the store's encoder goes."""
    TOO_LARGE = "TooLarge"
    """More than the process could hold while reading it."""
    BAD_VALUE = "BadValue"
    """A value out of range or of a malformed format (a timestamp outside the years a datetime holds)."""
    WRONG_TYPE = "WrongType"
    """A field of an unexpected type (a list where an object belongs)."""
    UNREADABLE = "Unreadable"
    """Any other exception of the reading code."""


def reason_of(error: BaseException) -> Reason:
    if isinstance(error, RecursionError) or "ecursion" in str(error)[:200]:
        return Reason.TOO_DEEP
    if isinstance(error, MemoryError):
        return Reason.TOO_LARGE
    if isinstance(error, ValueError | OverflowError | ArithmeticError | UnicodeError):
        return Reason.BAD_VALUE
    if isinstance(error, TypeError | AttributeError | KeyError | IndexError | LookupError):
        return Reason.WRONG_TYPE
    return Reason.UNREADABLE


MESSAGES = {
    Reason.TOO_DEEP: "is nested too deeply for the operator to read",
    Reason.TOO_LARGE: "is too large for the operator to read",
    Reason.BAD_VALUE: "holds a value the operator cannot read (a timestamp or number out of range, or malformed)",
    Reason.WRONG_TYPE: "holds a field of an unexpected type",
    Reason.UNREADABLE: "could not be read by the operator",
}


@dataclass(frozen=True)
class Stub:
    """What is kept of a quarantined object."""

    kind: str
    uid: str
    namespace: str
    name: str
    resource_version: str
    generation: int
    reason: Reason
    where: str
    """The exception's type and the function that raised it (for the log and the message)."""

    @property
    def message(self) -> str:
        return (
            f"this {self.kind} {MESSAGES[self.reason]} ({self.reason}: {self.where}); it is left out until a "
            "version that can be read replaces it"
        )


def _text(value: Any) -> str:
    return str(value)[:FIELD_LIMIT] if isinstance(value, str | int) and not isinstance(value, bool) else ""


def metadata_of(body: Any) -> Mapping[str, Any]:
    """``metadata`` of BODY if both are objects (an empty one otherwise): safe on any value."""
    meta = body.get("metadata") if isinstance(body, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def identity_of(body: Any) -> tuple[str, str]:
    """(namespace, name) of BODY, read as safely as :func:`metadata_of` ("" for what is missing)."""
    meta = metadata_of(body)
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def where_of(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__) if error.__traceback__ is not None else []
    place = f" in {frames[-1].name}" if frames else ""
    return f"{type(error).__name__}{place}"


def stub_of(kind: str, body: Any, error: BaseException) -> Stub:
    meta = metadata_of(body)
    return Stub(
        kind=kind,
        uid=_text(meta.get("uid")),
        namespace=_text(meta.get("namespace")),
        name=_text(meta.get("name")),
        resource_version=_text(meta.get("resourceVersion")),
        generation=meta["generation"] if type(meta.get("generation")) is int else 0,
        reason=reason_of(error),
        where=where_of(error),
    )


class Quarantine:
    """The quarantined objects of every kind, by (kind, namespace, name); counted through ON_QUARANTINE(kind,
    reason) and reported in size through ON_SIZE(kind, count)."""

    def __init__(
        self,
        *,
        on_quarantine: Callable[[str, str], None] = lambda kind, reason: None,
        on_size: Callable[[str, int], None] = lambda kind, count: None,
    ) -> None:
        self._stubs: dict[str, dict[tuple[str, str], Stub]] = {}
        self._logged: set[tuple[str, str]] = set()
        self._on_quarantine = on_quarantine
        self._on_size = on_size

    def add(self, stub: Stub) -> None:
        kept = self._stubs.setdefault(stub.kind, {})
        kept[(stub.namespace, stub.name)] = stub
        self._on_quarantine(stub.kind, stub.reason)
        self._on_size(stub.kind, len(kept))
        seen = (stub.uid, stub.resource_version)
        if seen not in self._logged:
            if len(self._logged) > 4 * sum(len(stubs) for stubs in self._stubs.values()) + 1024:
                self._logged.clear()  # bounded: at worst a version is logged twice
            self._logged.add(seen)
            logger.warning(
                "quarantined %s %s/%s (uid %s, resourceVersion %s): %s",
                stub.kind, stub.namespace, stub.name, stub.uid, stub.resource_version, stub.message,
            )  # fmt: skip

    def release(self, kind: str, namespace: str, name: str) -> bool:
        """Take an object out (read cleanly, or deleted); True if it was in."""
        kept = self._stubs.get(kind)
        if not kept or kept.pop((namespace, name), None) is None:
            return False
        self._on_size(kind, len(kept))
        return True

    def get(self, kind: str, namespace: str, name: str) -> Stub | None:
        return self._stubs.get(kind, {}).get((namespace, name))

    def names(self, kind: str, namespace: str | None) -> set[tuple[str, str]]:
        """(namespace, name) of the quarantined objects of KIND in NAMESPACE (None: all)."""
        return {key for key in self._stubs.get(kind, {}) if namespace is None or key[0] == namespace}

    def count(self, kind: str) -> int:
        return len(self._stubs.get(kind, {}))
