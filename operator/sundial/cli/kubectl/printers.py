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


def schedule_of(spec: Mapping[str, Any]) -> str:
    """What the SCHEDULE column shows: ``spec.schedule``, the entries of ``spec.schedules`` joined by ``; `` (a
    cron expression may hold commas), ``at <runAt>`` or ``asap``; ``+ N calendars`` when it refers to some."""
    schedules = spec.get("schedules") or []
    if spec.get("schedule"):
        shown = str(spec["schedule"])
    elif schedules:
        shown = "; ".join(str(entry) for entry in schedules)
    else:
        return f"at {spec['runAt']}" if spec.get("runAt") else "asap"
    calendars = spec.get("calendarRefs") or []
    if calendars:
        shown += f" + {len(calendars)} calendar{'s' if len(calendars) > 1 else ''}"
    return shown


def header(*, wide: bool, namespaces: bool) -> list[str]:
    """The ``get`` table's columns."""
    names = ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "NEXT RUN", "READY", "AGE"]
    if wide:
        names += ["TIME ZONE", "CALENDARS", "LAST SUCCESS", "DEAD LETTERS", "REASON"]
    if namespaces:
        names.insert(0, "NAMESPACE")
    return names


def rows(bodies: Sequence[Mapping[str, Any]], *, now: datetime, wide: bool, namespaces: bool) -> str:
    """The ``get`` table."""
    return outputs.table(
        header(wide=wide, namespaces=namespaces),
        [row(body, now=now, wide=wide, namespaces=namespaces) for body in bodies],
    )


def row(body: Mapping[str, Any], *, now: datetime, wide: bool, namespaces: bool) -> list[str]:
    """One line of the ``get`` table."""
    meta, spec, status = body.get("metadata") or {}, body.get("spec") or {}, body.get("status") or {}
    ready = _condition(status, "Ready")
    cells = [
        meta.get("name", ""),
        schedule_of(spec),
        str(bool(spec.get("suspend", False))),
        str(len(status.get("active") or [])),
        outputs.since(_time(status.get("lastScheduleTime")), now),
        outputs.until(_time(status.get("nextScheduleTime")), now),
        ready.get("status", "Unknown"),
        outputs.since(_time(meta.get("creationTimestamp")), now),
    ]
    if wide:
        cells += [
            spec.get("timeZone", "UTC"),
            ",".join(spec.get("calendarRefs") or []) or "<none>",
            outputs.since(_time(status.get("lastSuccessfulTime")), now),
            str(len(status.get("deadLetters") or [])),
            ready.get("reason", ""),
        ]
    if namespaces:
        cells.insert(0, meta.get("namespace", ""))
    return cells


def _schedule_lines(spec: Mapping[str, Any]) -> list[str]:
    """``describe``'s schedule: one line, or ``Schedules:`` with one indented line per entry of spec.schedules."""
    schedules = spec.get("schedules") or []
    if spec.get("schedule"):
        return [f"Schedule:    {spec['schedule']}"]
    if schedules:
        return ["Schedules:   (the union; a time two entries produce is one run)", *(f"  {s}" for s in schedules)]
    if spec.get("runAt"):
        return [f"Schedule:    once at {spec['runAt']}"]
    return ["Schedule:    (once, as soon as possible)"]


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
        *_schedule_lines(spec),
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
