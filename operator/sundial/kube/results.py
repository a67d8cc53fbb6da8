"""Typed outcomes of calls whose "failures" are normal control flow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Created:
    """The Job was created by this call."""

    body: dict[str, Any]


@dataclass(frozen=True)
class Adopted:
    """AlreadyExists, and the existing Job is controlled by this ScheduledJob's UID: it is ours."""

    body: dict[str, Any]


@dataclass(frozen=True)
class Unexpected:
    """AlreadyExists, but the existing Job is not controlled by this ScheduledJob: leave it alone."""

    owner_uid: str | None


@dataclass(frozen=True)
class Invalid:
    """422: the API server rejects the manifest. A poison template: never retried."""

    message: str


@dataclass(frozen=True)
class Written:
    """A compare-and-set write succeeded; ``body`` is the object as stored (new resourceVersion)."""

    body: dict[str, Any]


@dataclass(frozen=True)
class Conflict:
    """409: someone else moved first. Re-read from the API (not a cache) and decide again."""


@dataclass(frozen=True)
class Gone:
    """404: the object no longer exists."""


@dataclass(frozen=True)
class Done:
    """The call did what was asked (or it was already so, e.g. deleting a missing object)."""

    existed: bool = True
    """False when there was nothing to do (a delete answered 404)."""


CreateResult = Created | Adopted | Unexpected | Invalid
WriteResult = Written | Conflict | Gone
DeleteResult = Done | Conflict
PatchResult = Done | Gone
