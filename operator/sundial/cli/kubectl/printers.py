"""How ``get`` and ``describe`` show ScheduledJobs: the ``get`` table, ``describe``'s text and its
``-o json|yaml`` document with the next run times computed for each object.

Imports the model (pydantic): the commands import this module when they run, never at the plugin's start-up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sundial.cli.kubectl import nextruns, outputs
from sundial.model import ScheduledJob
from sundial.schedule import ScheduleError, format_rfc3339, load_zone, parse_rfc3339

if TYPE_CHECKING:
    from sundial.cli.kubectl.calendars import CalendarReader


def rows(bodies: Sequence[Mapping[str, Any]], *, now: datetime, wide: bool, namespaces: bool) -> str:
    """The ``get`` table."""
    header = ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT RUN", "READY", "AGE"]
    if wide:
        header += ["TIME ZONE", "LAST SUCCESS", "DEAD LETTERS", "REASON"]
    if namespaces:
        header.insert(0, "NAMESPACE")
    lines = []
    for body in bodies:
        meta, spec, status = body.get("metadata") or {}, body.get("spec") or {}, body.get("status") or {}
        ready = _condition(status, "Ready")
        schedule = spec.get("schedule") or (f"at {spec['runAt']}" if spec.get("runAt") else "asap")
        row = [
            meta.get("name", ""),
            schedule,
            str(bool(spec.get("suspend", False))),
            str(len(status.get("active") or [])),
            outputs.since(_time(status.get("lastScheduleTime")), now),
            outputs.until(_time(status.get("nextScheduleTime")), now),
            ready.get("status", "Unknown"),
            outputs.since(_time(meta.get("creationTimestamp")), now),
        ]
        if wide:
            row += [
                spec.get("timeZone", "UTC"),
                outputs.since(_time(status.get("lastSuccessfulTime")), now),
                str(len(status.get("deadLetters") or [])),
                ready.get("reason", ""),
            ]
        if namespaces:
            row.insert(0, meta.get("namespace", ""))
        lines.append(row)
    return outputs.table(header, lines)


def _time(value: Any) -> datetime | None:
    try:
        return parse_rfc3339(value, field="status") if isinstance(value, str) else None
    except ScheduleError:
        return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


def description(
    body: Mapping[str, Any], *, now: datetime, count: int, reader: CalendarReader | None = None
) -> dict[str, Any]:
    """What ``describe -o json|yaml`` prints: the object and the next run times computed for it (with its
    ScheduleCalendars when a READER is given)."""
    obj = ScheduledJob.from_dict(body)
    calendars = nextruns.calendars_of(obj, reader)
    result: dict[str, Any] = {"name": obj.metadata.name, "namespace": obj.metadata.namespace}
    if obj.spec_error is not None:
        result["specError"] = str(obj.spec_error)
    if calendars.problem is not None:
        result["calendarProblem"] = calendars.problem
    result["nextRuns"] = [format_rfc3339(t) for t in nextruns.upcoming(obj, now=now, count=count, calendars=calendars)]
    result["scheduledJob"] = dict(body)
    return result


def text(body: Mapping[str, Any], *, now: datetime, count: int, reader: CalendarReader | None = None) -> str:
    """A human-readable description of one ScheduledJob (with its ScheduleCalendars when a READER is given)."""
    obj = ScheduledJob.from_dict(body)
    calendars = nextruns.calendars_of(obj, reader)
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    lines = [
        f"Name:        {obj.metadata.name}",
        f"Namespace:   {obj.metadata.namespace}",
        f"Schedule:    {spec.get('schedule') or spec.get('runAt') or '(once, as soon as possible)'}",
        f"Time zone:   {spec.get('timeZone', 'UTC')}",
        f"Suspend:     {spec.get('suspend', False)}",
    ]
    if obj.spec_error is not None:
        lines.append(f"Invalid:     {obj.spec_error}")
    else:
        zone = load_zone(nextruns.zone_name(obj))
        if obj.spec is not None and obj.spec.calendar_refs:
            lines.append(f"Calendars:   {', '.join(obj.spec.calendar_refs)}")
        if calendars.problem is not None:
            lines.append(f"Not running: {calendars.problem}")
        lines.append("Next runs:")
        for instant in nextruns.upcoming(obj, now=now, count=count, calendars=calendars):
            lines.append(f"  {format_rfc3339(instant)}  ({instant.astimezone(zone).isoformat()})")
    lines.append("Conditions:")
    for c in status.get("conditions") or []:
        lines.append(f"  {c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}")
    counters = status.get("counters") or {}
    if counters:
        lines.append("Counters:    " + ", ".join(f"{k}={v}" for k, v in counters.items()))
    for title, key, fields in (
        ("Active", "active", ("scheduledTime", "attempt", "job", "trigger")),
        ("Pending retries", "pendingRetries", ("scheduledTime", "attempt", "notBefore", "lastFailure")),
        ("Recent runs", "recentRuns", ("scheduledTime", "attempts", "result", "job", "finishedAt")),
        ("Dead letters", "deadLetters", ("scheduledTime", "attempts", "reason", "lastJob", "message")),
        ("Buffered", "buffered", ("scheduledTime", "trigger", "bufferedAt")),
        ("Backfills", "backfills", ("token", "from", "to", "nextTime", "started", "alreadyRun", "done")),
    ):
        entries = status.get(key) or []
        lines.append(f"{title}: {len(entries) or 'none'}")
        for entry in entries:
            lines.append("  " + "  ".join(f"{f}={entry.get(f, '')}" for f in fields))
    return "\n".join(lines)
