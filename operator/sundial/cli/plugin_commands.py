"""The commands of ``kubectl sundial``: each ``cmd_*`` takes the parsed arguments, a kubectl runner and a clock.

Manual actions are token annotations (see docs/design.md, "Manual actions"): a new value of
``sundial.dev/trigger`` requests one run, of ``sundial.dev/redrive`` new attempts for every dead letter;
the operator acts once per value and echoes it in ``status.lastHandledTrigger`` / ``lastHandledRedrive``.
Times are computed with the operator's own code (:mod:`sundial.schedule`, :mod:`sundial.model`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sundial.cli import plugin_outputs as outputs
from sundial.cli.plugin import RESOURCE, Clock, Kubectl, PluginError
from sundial.cli.plugin_calendars import CalendarReader, Calendars
from sundial.model import ScheduledJob, Trigger, names
from sundial.schedule import Exclusion, ScheduleError, format_rfc3339, load_zone, parse_rfc3339

if TYPE_CHECKING:
    from collections.abc import Sequence

FROM_PREFIXES = ("scheduledjob/", "scheduledjobs/", "sj/", "scheduledjob.sundial.dev/", "scheduledjobs.sundial.dev/")
POLL_SECONDS = 0.5
MAX_EXCLUDED_IN_A_ROW = 10_000
"""A preview stops after this many excluded times in a row (an exclusion of everything)."""


def next_times(obj: ScheduledJob, *, after: datetime, count: int, exclusion: Exclusion | None = None) -> list[datetime]:
    """The next ``count`` nominal times of a ScheduledJob that run, exactly as the operator computes them:
    excluded times are left out — those of ``exclusion`` when given (``spec.exclude`` and the object's
    ScheduleCalendars, :class:`~sundial.cli.plugin_calendars.Calendars`), else those of ``spec.exclude``."""
    spec = obj.spec
    if spec is None:
        return []
    when = spec.when(uid=obj.metadata.uid, created=obj.metadata.creation_timestamp or after)
    if exclusion is None and spec.exclude:
        exclusion = spec.exclusion(uid=obj.metadata.uid)
    result: list[datetime] = []
    skipped = 0
    for instant in when.iter_after(after):
        if exclusion is not None and exclusion.excludes(instant):
            skipped += 1
            if skipped > MAX_EXCLUDED_IN_A_ROW:
                break
            continue
        skipped = 0
        result.append(instant)
        if len(result) >= count:
            break
    return result


def _zone_name(obj: ScheduledJob) -> str:
    return obj.spec.time_zone if obj.spec else "UTC"


def _time(value: Any) -> datetime | None:
    try:
        return parse_rfc3339(value, field="status") if isinstance(value, str) else None
    except ScheduleError:
        return None


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), {})


def _upcoming(obj: ScheduledJob, *, now: datetime, count: int, calendars: Calendars) -> list[datetime]:
    """The next runs; none while a referenced calendar is missing or invalid (the operator runs nothing)."""
    if calendars.problem is not None:
        return []
    return next_times(obj, after=now, count=count, exclusion=calendars.exclusion)


def _calendars(obj: ScheduledJob, reader: CalendarReader | None) -> Calendars:
    return reader.of(obj) if reader is not None and obj.spec_error is None else Calendars()


def description(
    body: Mapping[str, Any], *, now: datetime, count: int, reader: CalendarReader | None = None
) -> dict[str, Any]:
    """What ``describe -o json|yaml`` prints: the object and the next run times computed for it (with its
    ScheduleCalendars when a READER is given)."""
    obj = ScheduledJob.from_dict(body)
    calendars = _calendars(obj, reader)
    result: dict[str, Any] = {"name": obj.metadata.name, "namespace": obj.metadata.namespace}
    if obj.spec_error is not None:
        result["specError"] = str(obj.spec_error)
    if calendars.problem is not None:
        result["calendarProblem"] = calendars.problem
    result["nextRuns"] = [format_rfc3339(t) for t in _upcoming(obj, now=now, count=count, calendars=calendars)]
    result["scheduledJob"] = dict(body)
    return result


def describe(body: Mapping[str, Any], *, now: datetime, count: int, reader: CalendarReader | None = None) -> str:
    """A human-readable description of one ScheduledJob (with its ScheduleCalendars when a READER is given)."""
    obj = ScheduledJob.from_dict(body)
    calendars = _calendars(obj, reader)
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
        zone = load_zone(_zone_name(obj))
        if obj.spec is not None and obj.spec.calendar_refs:
            lines.append(f"Calendars:   {', '.join(obj.spec.calendar_refs)}")
        if calendars.problem is not None:
            lines.append(f"Not running: {calendars.problem}")
        lines.append("Next runs:")
        for instant in _upcoming(obj, now=now, count=count, calendars=calendars):
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


def _fetch(kubectl: Kubectl, *, names_: Sequence[str], all_namespaces: bool) -> list[dict[str, Any]]:
    if names_:
        body = kubectl.get_json(RESOURCE, *names_)
    elif all_namespaces:
        body = kubectl.get_json(RESOURCE, "--all-namespaces", namespaced=False)
    else:
        body = kubectl.get_json(RESOURCE)
    items: list[dict[str, Any]] = body.get("items") or [] if body.get("kind", "").endswith("List") else [body]
    return items


def _none_found(kubectl: Kubectl, *, all_namespaces: bool) -> None:
    where = "" if all_namespaces else f" in {kubectl.namespace or 'the current'} namespace"
    print(f"No resources found{where}.", file=sys.stderr)


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


def cmd_get(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    bodies = _fetch(kubectl, names_=args.names, all_namespaces=args.all_namespaces)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML, outputs.Output.NAME):
        print(outputs.objects(bodies, args.output))
    elif not bodies:
        _none_found(kubectl, all_namespaces=args.all_namespaces)
    else:
        wide = args.output == outputs.Output.WIDE
        print(rows(bodies, now=now(), wide=wide, namespaces=args.all_namespaces))
    return 0


def cmd_describe(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    bodies = _fetch(kubectl, names_=[args.name] if args.name else [], all_namespaces=args.all_namespaces)
    if args.output == outputs.Output.NAME:
        print(outputs.objects(bodies, args.output))
    elif args.output in (outputs.Output.JSON, outputs.Output.YAML):
        reader = CalendarReader(kubectl)
        found = [description(body, now=now(), count=args.count, reader=reader) for body in bodies]
        print(outputs.dump(found[0] if len(found) == 1 else {"items": found}, args.output))
    elif not bodies:
        _none_found(kubectl, all_namespaces=args.all_namespaces)
    else:
        reader = CalendarReader(kubectl)
        print("\n\n".join(describe(body, now=now(), count=args.count, reader=reader) for body in bodies))
    return 0


def cmd_preview(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    obj = ScheduledJob.from_dict(kubectl.get(args.name))
    if obj.spec_error is not None:
        print(f"scheduledjob/{args.name} is invalid: {obj.spec_error}", file=sys.stderr)
        return 2
    calendars = CalendarReader(kubectl).of(obj)
    if calendars.problem is not None:
        print(f"scheduledjob/{args.name} runs nothing: {calendars.problem}", file=sys.stderr)
        return 2
    times = next_times(obj, after=now(), count=args.count, exclusion=calendars.exclusion)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML):
        print(outputs.dump([format_rfc3339(t) for t in times], args.output))
    else:
        zone = load_zone(_zone_name(obj))
        for instant in times:
            print(f"{format_rfc3339(instant)}  {instant.astimezone(zone).isoformat()}")
    return 0


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


def _handled(kubectl: Kubectl, name: str, field: str, token: str, timeout: float) -> dict[str, Any]:
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
    handled = _handled(kubectl, name, "lastHandledTrigger", token, timeout)
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


def _print_result(output: str | None, body: Mapping[str, Any], *, resource: str, default: str) -> None:
    print(outputs.objects([body], output, resource=resource) if output else default)


def cmd_trigger(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    token = request_token(now())
    requested = f"scheduledjob/{args.name}: run requested (token {token})"
    if not args.wait:
        body = annotate(kubectl, args.name, names.TRIGGER_ANNOTATION, token)
        _print_result(args.output, body, resource=outputs.SCHEDULED_JOB, default=requested)
        return 0
    job = request_run(kubectl, args.name, token, timeout=args.timeout)
    if args.output:
        print(outputs.objects([job], args.output, resource=outputs.JOB))
    else:
        print(requested)
        print(kubectl.run("get", "jobs", job["metadata"]["name"]), end="")
    return 0


def cmd_create_job(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    source = next((args.source[len(p) :] for p in FROM_PREFIXES if args.source.startswith(p)), "")
    if not source:
        raise PluginError(f"--from: expected scheduledjob/NAME, got {args.source!r}")
    current = (kubectl.get(source).get("metadata") or {}).get("annotations") or {}
    if current.get(names.TRIGGER_ANNOTATION) == args.name:
        raise PluginError(f"a run named {args.name!r} was already requested from scheduledjob/{source}: use a new NAME")
    job = request_run(kubectl, source, args.name, timeout=args.timeout)
    _print_result(args.output, job, resource=outputs.JOB, default=f"{outputs.name_of(outputs.JOB, job)} created")
    return 0


def cmd_redrive(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    letters = (kubectl.get(args.name).get("status") or {}).get("deadLetters") or []
    token = request_token(now())
    body = annotate(kubectl, args.name, names.REDRIVE_ANNOTATION, token)
    if args.wait:
        body = _handled(kubectl, args.name, "lastHandledRedrive", token, args.timeout)
    requested = f"scheduledjob/{args.name}: redrive of {len(letters)} dead letter(s) requested (token {token})"
    _print_result(args.output, body, resource=outputs.SCHEDULED_JOB, default=requested)
    return 0


def _set_suspend(args: argparse.Namespace, kubectl: Kubectl, value: bool) -> int:
    print(
        "warning: this edits spec.suspend; if the object is managed by GitOps (Argo CD, Flux), "
        "change it in Git instead or it will be reverted",
        file=sys.stderr,
    )
    patch = json.dumps({"spec": {"suspend": value}})
    body = json.loads(kubectl.run("patch", RESOURCE, args.name, "--type=merge", "-p", patch, "-o", "json"))
    default = f"scheduledjob/{args.name} {'suspended' if value else 'resumed'}"
    _print_result(args.output, body, resource=outputs.SCHEDULED_JOB, default=default)
    return 0


def cmd_suspend(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, True)


def cmd_resume(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    return _set_suspend(args, kubectl, False)
