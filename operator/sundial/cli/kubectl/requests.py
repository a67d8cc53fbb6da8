"""Manual actions as requests to the operator (see docs/design.md, "Manual actions"): a token annotation that
the operator acts on once per value and echoes in ``status`` (``lastHandledTrigger``, ``lastHandledRedrive``,
``lastHandledBackfill``), and waiting until it did.

A new value of ``sundial.dev/trigger`` requests one run, of ``sundial.dev/redrive`` new attempts for every dead
letter. Imports the model (pydantic): the commands import this module when they run, never at start-up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sundial.cli.kubectl.runner import RESOURCE, PluginError
from sundial.model import Trigger, names

if TYPE_CHECKING:
    from sundial.cli.kubectl.runner import Kubectl

POLL_SECONDS = 0.5


def request_token(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds passed; the last poll is at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(POLL_SECONDS)
    return predicate()


def jobs_of(kubectl: Kubectl, name: str) -> list[dict[str, Any]]:
    """The Jobs of a ScheduledJob: selected by the label the operator sets, and owned by it."""
    selector = names.job_selector(name)
    items: list[dict[str, Any]] = kubectl.get_json("jobs", "-l", selector).get("items") or []
    return [
        job
        for job in items
        if any(
            ref.get("kind") == names.OWNER_KIND and ref.get("name") == name
            for ref in (job.get("metadata") or {}).get("ownerReferences") or []
        )
    ]


def _manual_job_names(kubectl: Kubectl, name: str) -> set[str]:
    return {
        job["metadata"]["name"]
        for job in jobs_of(kubectl, name)
        if (job["metadata"].get("annotations") or {}).get(names.TRIGGER_ANNOTATION) == Trigger.MANUAL
    }


def annotate(kubectl: Kubectl, name: str, key: str, token: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(
        kubectl.run("annotate", RESOURCE, name, f"{key}={token}", "--overwrite", "-o", "json")
    )
    return body


def wait_handled(kubectl: Kubectl, name: str, field: str, token: str, timeout: float) -> dict[str, Any]:
    """Wait until the operator echoed ``token`` in ``status.<field>``; returns the object then."""
    seen: dict[str, Any] = {}

    def done() -> bool:
        seen.update(kubectl.get(name))
        return bool((seen.get("status") or {}).get(field) == token)

    if not wait_for(done, timeout):
        raise PluginError(f"the operator has not handled the request (token {token}) within {timeout:.0f}s")
    return seen


def request_run(kubectl: Kubectl, name: str, token: str, *, timeout: float) -> dict[str, Any]:
    """Request one manual run with ``token`` and wait for its Job; returns the Job."""
    before = _manual_job_names(kubectl, name)
    started = time.monotonic()
    annotate(kubectl, name, names.TRIGGER_ANNOTATION, token)
    handled = wait_handled(kubectl, name, "lastHandledTrigger", token, timeout)
    skipped = ((handled.get("status") or {}).get("counters") or {}).get("skipped", 0)
    created: list[str] = []

    def appeared() -> bool:
        created[:] = sorted(_manual_job_names(kubectl, name) - before)
        return bool(created)

    if not wait_for(appeared, max(timeout - (time.monotonic() - started), 0.0)):
        policy = (handled.get("spec") or {}).get("concurrencyPolicy", "Allow")
        hint = f" (skipped {skipped} so far; concurrencyPolicy {policy})" if skipped else ""
        raise PluginError(f"the operator handled the request but no manual Job appeared within {timeout:.0f}s{hint}")
    job: dict[str, Any] = kubectl.get_json("jobs", created[-1])
    return job
