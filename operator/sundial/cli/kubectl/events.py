"""The recent Events of an object, as ``kubectl describe`` lists them (for ``describe``): type, reason, age,
source and message, oldest first, the most recent :data:`LIMIT`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Kubectl

LIMIT = 20


def of(kubectl: Kubectl, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Events whose involved object is ``body`` (by UID), oldest first, at most :data:`LIMIT`."""
    meta = body.get("metadata") or {}
    uid = meta.get("uid")
    if not uid:
        return []
    found = kubectl.get_json(
        "events", f"--namespace={meta.get('namespace', '')}", f"--field-selector=involvedObject.uid={uid}",
        namespaced=False,
    ).get("items") or []  # fmt: skip
    found.sort(key=_when)
    return found[-LIMIT:]


def _when(event: Mapping[str, Any]) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


def text(events: list[dict[str, Any]], *, now: datetime) -> str:
    """The ``Events:`` block of ``kubectl describe``."""
    if not events:
        return "Events:      <none>"
    rows = []
    for event in events:
        when = _when(event)
        try:
            then = datetime.fromisoformat(when.replace("Z", "+00:00")) if when else None
        except ValueError:
            then = None
        count = event.get("count") or 1
        age = outputs.since(then, now) + (f" (x{count})" if count > 1 else "")
        source = (event.get("source") or {}).get("component") or event.get("reportingComponent") or ""
        rows.append([event.get("type", ""), event.get("reason", ""), age, source, event.get("message", "")])
    block = outputs.table(["Type", "Reason", "Age", "From", "Message"], rows)
    return "Events:\n" + "\n".join("  " + line for line in block.splitlines())
