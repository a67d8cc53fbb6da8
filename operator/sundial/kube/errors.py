"""Classification of API failures, done once: :func:`classify` is the only code that reads HTTP codes.

Every failed request becomes a :class:`KubeError` of the class its callers catch: :class:`TransientError`
(worth retrying without consuming a run's attempts, DESIGN §4; :class:`GatewayTimeoutError` for a 504),
:class:`NotFoundError`, :class:`ConflictError`, :class:`GoneError`, :class:`InvalidError`,
:class:`ForbiddenError` (and its :class:`FencedError`), or a plain :class:`KubeError` for any other final
answer. Its ``code`` stays for log lines and metrics; decisions catch the class.

Also where an API failure becomes text: :func:`redact` takes the values the API server quotes in its
validation messages (``spec...env[0].name: Invalid value: "TOKEN=hunter2": ...``, or unquoted: ``-1``,
``map[...]``, ``[]string{...}``; possibly a secret from a Job template), and the text of an admission webhook's
or policy's denial, out of every message before it reaches a log line, a status (dead letter, condition) or an
Event; the field path and the explanation stay. :func:`is_fenced` recognises the server-side fencing policy's
refusal (``charts/sundial/templates/fencing-policy.yaml``).
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

#: HTTP codes that say "try again later": throttled, server-side trouble, gateway trouble.
TRANSIENT_CODES = frozenset({429, 500, 502, 503, 504})

#: What a quoted value is replaced with.
REDACTED = "<redacted>"
#: The API server's field-error kinds that quote the rejected value (``field.ErrorType`` strings).
_VALUE_QUOTING = ("Invalid value", "Unsupported value", "Duplicate value", "Not found")
#: ``<kind>: `` before a value: a Go-quoted string (escapes included) or an unquoted one (see :func:`_value_end`).
_VALUE_KIND = re.compile(r"(?P<kind>" + "|".join(map(re.escape, _VALUE_QUOTING)) + r"): ")
_GO_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPENING, _CLOSING = "([{", ")]}"
#: An admission webhook's or a ValidatingAdmissionPolicy's denial: its text is another controller's, and may
#: quote anything from the request (an image, an env value); only the head naming who denied stays.
_DENIAL = re.compile(
    r"(?P<head>admission webhook \"[^\"]*\" denied the request"
    r"|ValidatingAdmissionPolicy '[^']*' with binding '[^']*' denied request"
    r"|ValidatingAdmissionPolicy '[^']*' denied request): (?P<text>.*)",
    re.DOTALL,
)
#: The fencing policy's messages start with this (its ``messageExpression``): "the shard moved on".
FENCED_MARKER = "sundial.dev/fenced:"
#: The chart's policy (and binding) name for the release ``sundial``; ``sundial run --fencing-policy`` sets it.
DEFAULT_FENCING_POLICY = "sundial-fencing"
#: The API server's 403 text for a denial by a ValidatingAdmissionPolicy: ``<resource> ["<name>"] is
#: forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>``.
_VAP_DENIAL = (
    r'^[a-z0-9.-]+(?: "[^"]*")? is forbidden: '
    "ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: {marker} "
)
_fencing_policy = DEFAULT_FENCING_POLICY


class KubeError(Exception):
    """An API call failed in a way its caller must handle."""

    def __init__(self, *, code: int, reason: str, message: str) -> None:
        super().__init__(f"HTTP {code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class TransientError(KubeError):
    """Retry later with backoff: 5xx, 429, timeouts, connection errors, exceeded quota."""


class GatewayTimeoutError(TransientError):
    """504: the API server gave up waiting (also ``ResourceVersionTooLarge``: its watch cache lags etcd)."""


class NotFoundError(KubeError):
    """404: the object (or its kind) does not exist."""


class ConflictError(KubeError):
    """409: a compare-and-set precondition failed, or the object already exists."""


class GoneError(KubeError):
    """410: the requested version is too old (an expired ``continue`` token). Not
    :class:`sundial.kube.results.Gone`, which is the outcome "the object no longer exists"."""


class InvalidError(KubeError):
    """422, or 400 with reason ``Invalid``/``BadRequest``: the API server rejects the request's body."""


class ForbiddenError(KubeError):
    """403 that is neither an exceeded quota (transient) nor the fencing policy's refusal."""


class FencedError(ForbiddenError):
    """403 from the server-side fencing policy: this replica's token is older than the shard Lease's."""


#: The final answers that have a class of their own (a 400 depends on its reason: :func:`_class_of`).
_FINAL = {403: ForbiddenError, 404: NotFoundError, 409: ConflictError, 410: GoneError, 422: InvalidError}
#: The reasons of a 400 that mean "this body is invalid".
_INVALID_REASONS = frozenset({"Invalid", "BadRequest"})


def redact(message: str) -> str:
    """``message`` with every value the API server quoted replaced by :data:`REDACTED` (paths stay), and the
    text of an admission webhook's or policy's denial too (except the fencing policy's own, which quotes only
    a token and a Lease name and is how :func:`is_fenced` knows it)."""
    denial = _DENIAL.search(message)
    if denial is not None and not denial.group("text").startswith(FENCED_MARKER):
        message = f"{message[: denial.start()]}{denial.group('head')}: {REDACTED}"
    out: list[str] = []
    position = 0
    for match in _VALUE_KIND.finditer(message):
        if match.start() < position:
            continue  # inside a value already redacted
        out.append(message[position : match.start()] + f'{match.group("kind")}: "{REDACTED}"')
        position = _value_end(message, match.end())
    out.append(message[position:])
    return "".join(out)


def _value_end(message: str, start: int) -> int:
    """Where the value starting at START ends: after a Go-quoted string, or for an unquoted one (a number,
    ``map[a:b]``, ``[]string{"a", "b"}``, a bare word) at the first ``": "``, ``", "``, or unmatched closing
    bracket outside brackets and quotes, or the end."""
    quoted = _GO_QUOTED.match(message, start)
    if quoted is not None:
        return quoted.end()
    depth, i = 0, start
    while i < len(message):
        char = message[i]
        if char == '"':
            inner = _GO_QUOTED.match(message, i)
            i = inner.end() if inner is not None else len(message)
            continue
        if char in _OPENING:
            depth += 1
        elif char in _CLOSING:
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and message.startswith((": ", ", "), i):
            return i
        i += 1
    return i


@dataclass(frozen=True)
class Status:
    """The parts of a ``metav1.Status`` failure body that decisions depend on."""

    code: int
    reason: str
    message: str


def status_of(error: ApiException) -> Status:
    """Read ``code``, ``reason`` and ``message`` from an API exception's Status body, if it has one."""
    code = int(error.status or 0)
    reason = str(error.reason or "")
    message = ""
    body: Any = error.body
    if isinstance(body, bytes | bytearray):
        body = body.decode(errors="replace")
    if isinstance(body, str) and body:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            reason = str(parsed.get("reason") or reason)
            message = str(parsed.get("message") or "")
        else:
            message = body[:500]
    return Status(code=code, reason=reason, message=redact(message))


def is_quota_exceeded(status: Status) -> bool:
    """A ResourceQuota rejection (403 Forbidden "exceeded quota"): it clears when other Jobs finish."""
    return status.code == 403 and "exceeded quota" in status.message


def configure_fencing(policy: str) -> None:
    """Recognise refusals of the fencing policy named ``policy`` (and its binding of the same name); an empty
    name: no policy is installed, no 403 is a fencing refusal. Set once at start (``--fencing-policy``)."""
    global _fencing_policy  # noqa: PLW0603 - one process-wide setting, read by classify()
    _fencing_policy = policy


def fencing_policy() -> str:
    """The fencing policy's name whose refusals :func:`is_fenced` recognises ("" for none)."""
    return _fencing_policy


def _fenced_pattern(policy: str) -> re.Pattern[str]:
    return re.compile(_VAP_DENIAL.format(policy=re.escape(policy), marker=re.escape(FENCED_MARKER)))


def is_fenced(status: Status, *, policy: str | None = None) -> bool:
    """The fencing policy refused the write: a 403 whose message is exactly the API server's denial by the
    policy named ``policy`` (default: :func:`fencing_policy`) through its binding of the same name, with the
    policy's marker first. Another admission controller's denial that merely quotes the marker (an image
    ``sundial.dev/fenced:1``) is a plain :class:`ForbiddenError`."""
    name = _fencing_policy if policy is None else policy
    if status.code != 403 or not name:
        return False
    return _fenced_pattern(name).match(status.message) is not None


def is_transient(status: Status) -> bool:
    return status.code in TRANSIENT_CODES or status.code == 0 or is_quota_exceeded(status)


def _class_of(status: Status) -> type[KubeError]:
    if is_fenced(status):
        return FencedError
    if is_transient(status):
        return GatewayTimeoutError if status.code == 504 else TransientError
    if status.code == 400 and status.reason in _INVALID_REASONS:
        return InvalidError
    return _FINAL.get(status.code, KubeError)


def from_status(status: dict[str, Any]) -> KubeError:
    """The error a Status object names (a watch stream's ``ERROR`` event carries one instead of an HTTP code)."""
    read = Status(
        code=int(status.get("code") or 0),
        reason=str(status.get("reason") or ""),
        message=redact(str(status.get("message") or "")),
    )
    return _class_of(read)(code=read.code, reason=read.reason, message=read.message)


def classify(error: BaseException) -> KubeError | None:
    """Map a failure to the :class:`KubeError` subclass its callers catch; None if it is not an API one."""
    if isinstance(error, ApiException):
        status = status_of(error)
        return _class_of(status)(code=status.code, reason=status.reason, message=status.message)
    if isinstance(error, asyncio.TimeoutError | aiohttp.ClientError | ConnectionError):
        return TransientError(code=0, reason=type(error).__name__, message=str(error) or "no response")
    return None
