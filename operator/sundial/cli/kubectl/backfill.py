"""``kubectl sundial backfill NAME --from T1 --to T2``: request a backfill (DESIGN §4.2) and follow it.

The request is the ``sundial.dev/backfill`` annotation, a JSON token request in the §5 pattern; the
operator runs every nominal time in ``[T1, T2]`` that has no run yet, with its scheduled run's Job name,
and reports progress in ``status.backfills`` (see :mod:`sundial.planner.requests.backfills`). The model, the planner and
:mod:`.requests` are imported when the command runs, not at the plugin's start-up.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command

NOW_WORD = "now"


def register(commands: Any) -> None:
    sub = add_command(
        commands,
        "backfill",
        run,
        "run every nominal time in a range that has no run yet (annotation sundial.dev/backfill)",
    )
    sub.add_argument("name", metavar="NAME")
    sub.add_argument("--from", dest="start", required=True, metavar="TIME", help="RFC 3339 time, or now")
    sub.add_argument("--to", dest="end", required=True, metavar="TIME", help="RFC 3339 time, or now")
    sub.add_argument("--max-runs", type=int, default=100, help="at most this many runs (default: 100)")
    sub.add_argument("--wait", action="store_true", help="wait until every time of the range was handled")
    sub.add_argument("--timeout", type=float, default=600.0, help="seconds to wait (default: 600)")
    outputs.flag(sub, "json", "yaml", "name")


def parse_time(text: str, *, flag: str, now: datetime) -> datetime:
    """An RFC 3339 time with an offset, or ``now``; a clear error naming the flag otherwise."""
    from sundial.schedule import ScheduleError, parse_rfc3339  # noqa: PLC0415 - only when the command runs

    if text.strip().lower() == NOW_WORD:
        return now
    try:
        return parse_rfc3339(text, field=flag)
    except ScheduleError as error:
        raise PluginError(f"{flag}: {error.message}") from None


def progress_of(body: Mapping[str, Any], token: str) -> Mapping[str, Any] | None:
    """The ``status.backfills`` entry of ``token``, once the operator handled it."""
    status = body.get("status") or {}
    if status.get("lastHandledBackfill") != token:
        return None
    return next((b for b in status.get("backfills") or [] if b.get("token") == token), None)


def summary(name: str, token: str, progress: Mapping[str, Any]) -> str:
    """One line: what the backfill did."""
    line = (
        f"scheduledjob/{name}: backfill {token} of {progress.get('from')} to {progress.get('to')}: "
        f"{progress.get('started', 0)} run(s) started, {progress.get('alreadyRun', 0)} time(s) already had a run"
    )
    if not progress.get("done"):
        line += f", next {progress.get('nextTime')}"
    message = progress.get("message")
    return f"{line} ({message})" if message else line


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl.requests import annotate, request_token, wait_for  # noqa: PLC0415 - the model
    from sundial.model import names  # noqa: PLC0415 - only when the command runs
    from sundial.planner.requests import backfills  # noqa: PLC0415 - likewise
    from sundial.schedule import format_rfc3339  # noqa: PLC0415 - likewise

    moment = now()
    start = parse_time(args.start, flag="--from", now=moment)
    end = parse_time(args.end, flag="--to", now=moment)
    if end < start:
        raise PluginError(f"--to ({format_rfc3339(end)}) must not be before --from ({format_rfc3339(start)})")
    if not 1 <= args.max_runs <= backfills.MAX_MAX_RUNS:
        raise PluginError(f"--max-runs: must be from 1 to {backfills.MAX_MAX_RUNS}, got {args.max_runs}")
    token = request_token(moment)
    request = backfills.Request(token=token, start=start, end=end, max_runs=args.max_runs)
    body = annotate(kubectl, args.name, names.BACKFILL_ANNOTATION, backfills.annotation_value(request))
    requested = (
        f"scheduledjob/{args.name}: backfill of {format_rfc3339(start)} to {format_rfc3339(end)} requested "
        f"(token {token}, at most {args.max_runs} runs)"
    )
    if not args.wait:
        print(outputs.objects([body], args.output, resource=outputs.SCHEDULED_JOB) if args.output else requested)
        return 0
    seen: dict[str, Any] = {}

    def finished() -> bool:
        seen.clear()
        seen.update(kubectl.get(args.name))
        found = progress_of(seen, token)
        return found is not None and bool(found.get("done"))

    done = wait_for(finished, args.timeout)
    found = progress_of(seen, token)
    if found is None:
        raise PluginError(f"the operator has not handled the backfill (token {token}) within {args.timeout:.0f}s")
    if args.output:
        print(outputs.objects([seen], args.output, resource=outputs.SCHEDULED_JOB))
    else:
        print(summary(args.name, token, found))
    if str(found.get("message", "")).startswith(backfills.REFUSED):
        return 1
    if not done:
        raise PluginError(f"the backfill (token {token}) has not finished within {args.timeout:.0f}s")
    return 0
