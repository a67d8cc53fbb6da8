"""Classification of API failures: what is worth retrying without consuming a run's attempts (DESIGN §4)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

#: HTTP codes that say "try again later": throttled, server-side trouble, gateway trouble.
TRANSIENT_CODES = frozenset({429, 500, 502, 503, 504})


class KubeError(Exception):
    """An API call failed in a way its caller must handle."""

    def __init__(self, *, code: int, reason: str, message: str) -> None:
        super().__init__(f"HTTP {code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


class TransientError(KubeError):
    """Retry later with backoff: 5xx, 429, timeouts, connection errors, exceeded quota."""


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
    return Status(code=code, reason=reason, message=message)


def is_quota_exceeded(status: Status) -> bool:
    """A ResourceQuota rejection (403 Forbidden "exceeded quota"): it clears when other Jobs finish."""
    return status.code == 403 and "exceeded quota" in status.message


def is_transient(status: Status) -> bool:
    return status.code in TRANSIENT_CODES or status.code == 0 or is_quota_exceeded(status)


def classify(error: BaseException) -> KubeError | None:
    """Map a failure to :class:`TransientError` / :class:`KubeError`; None if it is not an API one."""
    if isinstance(error, ApiException):
        status = status_of(error)
        cls = TransientError if is_transient(status) else KubeError
        return cls(code=status.code, reason=status.reason, message=status.message)
    if isinstance(error, asyncio.TimeoutError | aiohttp.ClientError | ConnectionError):
        return TransientError(code=0, reason=type(error).__name__, message=str(error) or "no response")
    return None
