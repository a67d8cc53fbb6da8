"""``kubectl sundial preview NAME``: the next nominal run times of a ScheduledJob in the cluster, computed by
the operator's own code (:mod:`.nextruns`) with the ScheduleCalendars it refers to. ``preview -f FILE|DIR|-``:
those of the ScheduledJobs of manifests not applied yet, with the ScheduleCalendars of the same files (an ``H``
field is hashed from a UID the object gets only when it is created: such times are shown for an empty UID, and
said so).

The model is imported when the command runs, not at the plugin's start-up.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command


def register(commands: Any) -> None:
    sub = add_command(commands, "preview", run, "print the next nominal run times of a ScheduledJob")
    sub.add_argument("name", nargs="?", metavar="NAME")
    sub.add_argument("-f", "--filename", action="append", metavar="FILE", help="manifests not applied yet (or -)")
    sub.add_argument("-R", "--recursive", action="store_true", help="walk the directories given with -f")
    sub.add_argument("--count", type=int, default=5, help="how many run times (default: 5)")
    outputs.flag(sub, "table", "json", "yaml", default="table")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import nextruns  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl.calendars import CalendarReader  # noqa: PLC0415 - likewise
    from sundial.model import ScheduledJob  # noqa: PLC0415 - likewise
    from sundial.schedule import format_rfc3339, load_zone  # noqa: PLC0415 - likewise

    if args.filename:
        return _files(args, now)
    if not args.name:
        raise PluginError("name a ScheduledJob, or give manifests with -f")
    obj = ScheduledJob.from_dict(kubectl.get(args.name))
    if obj.spec_error is not None:
        print(f"scheduledjob/{args.name} is invalid: {obj.spec_error}", file=sys.stderr)
        return 2
    calendars = CalendarReader(kubectl).of(obj)
    if calendars.problem is not None:
        print(f"scheduledjob/{args.name} runs nothing: {calendars.problem}", file=sys.stderr)
        return 2
    times = nextruns.next_times(obj, after=now(), count=args.count, exclusion=calendars.exclusion)
    if args.output in (outputs.Output.JSON, outputs.Output.YAML):
        print(outputs.dump([format_rfc3339(t) for t in times], args.output))
    else:
        zone = load_zone(nextruns.zone_name(obj))
        for instant in times:
            print(f"{format_rfc3339(instant)}  {instant.astimezone(zone).isoformat()}")
    return 0


_HASHED = re.compile(r"(^|[\s,])H($|[\s,(/])")
"""An ``H`` field of a cron expression (``H``, ``H(0-29)``, ``H/15``)."""


def _files(args: argparse.Namespace, now: Clock) -> int:
    """``preview -f``: every ScheduledJob of the files, one block each (a JSON/YAML map by name with ``-o``)."""
    from sundial.cli.kubectl import manifestfiles, nextruns  # noqa: PLC0415 - the model, only when the command runs
    from sundial.model import ScheduledJob  # noqa: PLC0415 - likewise
    from sundial.model.calendars import CALENDAR_KIND, ScheduleCalendar  # noqa: PLC0415 - likewise
    from sundial.schedule import format_rfc3339  # noqa: PLC0415 - likewise

    try:
        bodies = [
            body
            for _, text in manifestfiles.files(args.filename, recursive=args.recursive)
            for body in manifestfiles.documents(text)
        ]
    except OSError as error:
        raise PluginError(f"{error.filename}: {error.strerror}") from None
    bodies = [b for b in bodies if isinstance(b, dict) and str(b.get("apiVersion", "")).startswith("sundial.dev/")]
    calendars = {
        str((b.get("metadata") or {}).get("name", "")): ScheduleCalendar.from_dict(b).spec
        for b in bodies
        if b.get("kind") == CALENDAR_KIND
    }
    found: dict[str, list[str]] = {}
    code = 0
    for body in (b for b in bodies if b.get("kind") == "ScheduledJob"):
        name = str((body.get("metadata") or {}).get("name", ""))
        obj = ScheduledJob.from_dict(body)
        if obj.spec is None:
            print(f"scheduledjob/{name} is invalid: {obj.spec_error}", file=sys.stderr)
            code = 2
            continue
        problem, exclusion = obj.spec.calendar_exclusion(calendars, uid="", where="the files given")
        if problem is not None:
            print(f"scheduledjob/{name} runs nothing: {problem[1]}", file=sys.stderr)
            code = 2
            continue
        if _HASHED.search(" ".join([obj.spec.schedule or "", *(obj.spec.schedules or ())])):
            print(f"scheduledjob/{name}: H fields are hashed from the UID it gets when created: shown for none")
        if obj.spec.is_one_off:
            at = obj.spec.run_at
            found[name] = [
                "once, as soon as it is created" if at is None or at <= now() else f"once, at {format_rfc3339(at)}"
            ]
            continue
        found[name] = [
            format_rfc3339(t) for t in nextruns.next_times(obj, after=now(), count=args.count, exclusion=exclusion)
        ]
    if args.output in (outputs.Output.JSON, outputs.Output.YAML):
        print(outputs.dump(found, args.output))
    else:
        print(
            "\n\n".join(f"scheduledjob/{name}:\n" + "\n".join(f"  {t}" for t in times) for name, times in found.items())
        )
    return code
