"""AdmissionReview v1 bodies: bounded before they are decoded, decoded, and answered (DESIGN §12.2).

The webhook port has no client authentication: anything that reaches it may post anything. Before a body is
decoded it must fit two bounds, each checked in time linear in its size with C-level byte operations (no
Python loop over the bytes, no backtracking regular expression):

* :data:`MAX_REQUEST_BYTES` (the server refuses a longer body with 413 before reading it all; see
  :mod:`.webhookserver`);
* :data:`MAX_DEPTH` levels of JSON nesting, counted over the whole AdmissionReview (the review, its
  ``request`` and ``object`` take three): :func:`depth_problem`.

A body within both is decoded (orjson) and read as a v1 AdmissionReview (:func:`read`); whatever is wrong
with it is a :class:`MalformedReviewError` naming the field. :func:`answer` builds the response the API
server expects (``response.uid`` echoes the request's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import orjson

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"

ETCD_MAX_OBJECT_BYTES = 1536 * 1024
"""The largest object etcd stores by default (``--max-request-bytes``, 1.5 MiB)."""

MAX_REQUEST_BYTES = 2 * ETCD_MAX_OBJECT_BYTES + 64 * 1024
"""Largest AdmissionReview body read, in bytes (3 MiB + 64 KiB): an UPDATE review carries the object twice
(``object`` and ``oldObject``), each at most what etcd stores, plus the request's own fields (user, options).
No review of a storable object is larger; the API server's own limit on a request it is sent is 3 MiB."""

MAX_DEPTH = 64
"""Deepest JSON nesting of a whole AdmissionReview (objects and arrays). A ScheduledJob's deepest legitimate
paths (a jobTemplate's affinity terms, its managedFields' ``fieldsV1`` mirroring them) are about 20 levels."""

_OPENERS = b"[{"
_CLOSERS = b"]}"
#: Maps ``{`` to ``[`` and ``}`` to ``]`` (the depth does not care which kind of bracket).
_BRACKETS = bytes.maketrans(b"{}", b"[]")
#: Every byte but the four brackets, deleted by :func:`brackets`.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _OPENERS + _CLOSERS)


class MalformedReviewError(ValueError):
    """The body is not a v1 AdmissionReview the webhook can answer: answered 400, with this message."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Review:
    """What the webhook reads from an AdmissionReview request."""

    uid: str
    operation: str
    resource: str
    """``request.resource.resource``: the plural the API server was writing (``scheduledjobs``)."""
    body: Mapping[str, Any]
    """``request.object``: the object as it would be stored."""
    old: Mapping[str, Any] | None
    """``request.oldObject``: the stored object of an UPDATE (None otherwise)."""


def brackets(raw: bytes) -> bytes:
    """RAW's structural brackets outside strings, ``{``/``}`` written as ``[``/``]``. Escapes are removed first
    (``\\\\`` pairs, then ``\\"``: left to right, as JSON reads them), so every ``"`` left delimits a string and
    the odd pieces between them are the strings' contents."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    return outside.translate(_BRACKETS, _NOT_BRACKETS)


def depth_problem(raw: bytes, *, limit: int = MAX_DEPTH) -> str | None:
    """Why RAW nests deeper than LIMIT levels (or has unbalanced brackets), or None: innermost pairs ``[]`` are
    removed once per level, so LIMIT rounds empty a body that nests at most LIMIT deep."""
    left = brackets(raw)
    for _ in range(limit):
        if not left:
            return None
        shorter = left.replace(b"[]", b"")
        if len(shorter) == len(left):
            break  # no pair left to remove: unbalanced
        left = shorter
    if not left:
        return None
    if left.replace(b"[]", b"") == left:
        return "request body: unbalanced brackets: not JSON"
    return f"request body: JSON nested deeper than {limit} levels (objects and arrays)"


def _field(mapping: Mapping[str, Any], key: str, path: str, kind: type) -> Any:
    value = mapping.get(key)
    if not isinstance(value, kind):
        expected = "an object" if kind is dict else "a string"
        raise MalformedReviewError(f"{path}: must be {expected}, got {type(value).__name__}")
    return value


def read(raw: bytes) -> Review:
    """Decode RAW (already within the size bound) as a v1 AdmissionReview; :class:`MalformedReviewError` names
    the field that is missing or wrong."""
    problem = depth_problem(raw)
    if problem is not None:
        raise MalformedReviewError(problem)
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        raise MalformedReviewError(f"request body: not JSON: {error}") from None
    if not isinstance(document, dict):
        raise MalformedReviewError(f"request body: must be an AdmissionReview object, got {type(document).__name__}")
    if document.get("apiVersion") != API_VERSION or document.get("kind") != KIND:
        raise MalformedReviewError(f"apiVersion/kind: must be {API_VERSION} {KIND}")
    request = _field(document, "request", "request", dict)
    uid = _field(request, "uid", "request.uid", str)
    operation = _field(request, "operation", "request.operation", str)
    resources = _field(request, "resource", "request.resource", dict)
    resource = _field(resources, "resource", "request.resource.resource", str)
    body = _field(request, "object", "request.object", dict)
    old = _field(request, "oldObject", "request.oldObject", dict) if operation == "UPDATE" else None
    return Review(uid=uid, operation=operation, resource=resource, body=body, old=old)


def answer(uid: str, *, code: int = 200, message: str = "") -> bytes:
    """The AdmissionReview response: allowed for CODE 200, else refused with CODE and MESSAGE."""
    response: dict[str, Any] = {"uid": uid, "allowed": code == 200}
    if code != 200:
        response["status"] = {"code": code, "message": message}
    return orjson.dumps({"apiVersion": API_VERSION, "kind": KIND, "response": response})
