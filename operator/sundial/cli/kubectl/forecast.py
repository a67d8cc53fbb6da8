"""``kubectl sundial forecast [NAME...]``: how many runs are due per minute (second, hour) over the coming hours,
the largest same-second herds with the ScheduledJobs in them, and how ``jitter`` or ``H`` would spread them.

Reads the ScheduledJobs (``-A``: of every namespace) and their ScheduleCalendars; times are the operator's
own (:mod:`.herds`). Prints a terminal bar chart, or with ``-o json|yaml`` one document (docs/guide.md,
"Herd forecast"); ``--output-file`` also writes the chart as SVG (or PNG, with matplotlib installed).
The model is imported when the command runs, not at the plugin's start-up.
"""

from __future__ import annotations

import argparse
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import Clock, Kubectl, PluginError, add_command, scheduled_jobs

if TYPE_CHECKING:
    from sundial.cli.kubectl.charts import Series
    from sundial.cli.kubectl.herds import Fire, Herd, Skipped

MAX_HOURS = 168
MAX_TOP = 100
SHOWN_MEMBERS = 5
"""Members of a herd the text names (``-o json`` lists them all)."""


def register(commands: Any) -> None:
    sub = add_command(
        commands, "forecast", run, "show how many runs are due per minute ahead and the largest same-second herds"
    )
    sub.add_argument("names", nargs="*", metavar="NAME", help="only these ScheduledJobs (default: all)")
    sub.add_argument("-A", "--all-namespaces", action="store_true", help="across all namespaces")
    sub.add_argument("--hours", type=float, default=24.0, help=f"how far ahead (default: 24, at most {MAX_HOURS})")
    sub.add_argument("--by", choices=("second", "minute", "hour"), default="minute", help="bucket size")
    sub.add_argument("--top", type=int, default=5, help="how many herds to show (default: 5)")
    sub.add_argument("--output-file", metavar="FILE", help="also write the chart to FILE.svg or FILE.png")
    outputs.flag(sub, "json", "yaml")


def _check(args: argparse.Namespace) -> None:
    if not 0 < args.hours <= MAX_HOURS:
        raise PluginError(f"--hours: must be more than 0 and at most {MAX_HOURS} (one week), not {args.hours:g}")
    if not 1 <= args.top <= MAX_TOP:
        raise PluginError(f"--top: must be between 1 and {MAX_TOP}, not {args.top}")
    if args.output_file and Path(args.output_file).suffix.lower() not in (".svg", ".png"):
        raise PluginError(f"--output-file: {args.output_file} must end in .svg or .png")


def _member(fire: Fire) -> dict[str, str]:
    from sundial.schedule import format_rfc3339  # noqa: PLC0415 - only when the command runs

    namespace, _, name = fire.key.partition("/")
    return {"namespace": namespace, "name": name, "nominal": format_rfc3339(fire.nominal), "fires": _at(fire.at)}


def _at(instant: datetime) -> str:
    from sundial.schedule import format_rfc3339  # noqa: PLC0415 - only when the command runs

    return format_rfc3339(instant)


def _herd(herd: Herd) -> dict[str, Any]:
    return {
        "at": _at(herd.second),
        "runs": len(herd.fires),
        "scheduledJobs": [_member(fire) for fire in herd.fires],
        "spread": [
            {
                "change": s.change,
                "maxPerSecond": s.max_per_second,
                "maxPerMinute": s.max_per_minute,
                "unchanged": s.unchanged,
            }
            for s in herd.spreads
        ],
    }


def series_of(found: list[Fire], *, start: datetime, end: datetime, by: str) -> Series:
    """The runs per bucket of ``by`` in ``[start, end)``, every bucket from the one that holds ``start``."""
    from sundial.cli.kubectl import herds  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl.charts import Series  # noqa: PLC0415 - likewise

    width = herds.BUCKETS[by]
    counts = herds.buckets((fire.at for fire in found), start=start, end=end, width=width)
    return Series(herds.floor(start, width), width, counts, by)


def report(
    found: list[Fire], skipped: list[Skipped], *, series: Series, start: datetime, end: datetime, top: int, objects: int
) -> dict[str, Any]:
    """The forecast as one document (the shape ``-o json`` prints)."""
    from sundial.cli.kubectl import herds  # noqa: PLC0415 - the model, only when the command runs

    counts, width = series.counts, series.width
    busiest = max(range(len(counts)), key=lambda i: (counts[i], -i)) if found else None
    return {
        "from": _at(start),
        "to": _at(end),
        "by": series.unit,
        "bucketSeconds": int(width.total_seconds()),
        "scheduledJobs": objects,
        "runs": len(found),
        "peak": None if busiest is None else {"start": _at(series.start + width * busiest), "runs": counts[busiest]},
        "buckets": [{"start": _at(series.start + width * i), "runs": n} for i, n in enumerate(counts) if n],
        "herds": [_herd(herds.spread(herd)) for herd in herds.herds(found, top=top)],
        "skipped": [{"scheduledJob": s.key, "reason": s.reason} for s in skipped],
    }


def _spread_line(spread: dict[str, Any], size: int) -> str:
    line = f"with {spread['change']}: at most {spread['maxPerSecond']} per second, {spread['maxPerMinute']} per minute"
    if spread["unchanged"]:
        line += f" ({spread['unchanged']} of {size} keep their time: no fixed minute or second to hash)"
    return line


def text(document: dict[str, Any], chart: str) -> str:
    """What the command prints without ``-o``: a summary line, the chart, the busiest bucket and the herds."""
    by = document["by"]
    lines = [
        f"Runs due per {by} from {document['from']} to {document['to']}: "
        f"{document['runs']} runs of {document['scheduledJobs']} ScheduledJobs",
        chart,
    ]
    peak = document["peak"]
    if peak is not None:
        lines.append(f"Busiest {by}: {peak['start']} with {peak['runs']} runs")
    if document["herds"]:
        lines.append("")
        lines.append("Largest same-second herds:")
    for herd in document["herds"]:
        names = [f"{m['namespace']}/{m['name']}" for m in herd["scheduledJobs"]]
        more = f" and {len(names) - SHOWN_MEMBERS} more" if len(names) > SHOWN_MEMBERS else ""
        lines.append(f"  {herd['at']}  {herd['runs']} runs: {', '.join(names[:SHOWN_MEMBERS])}{more}")
        lines.extend(f"      {_spread_line(s, herd['runs'])}" for s in herd["spread"])
    if not document["herds"] and document["runs"]:
        lines.append("No two runs fire in the same second.")
    for skipped in document["skipped"]:
        lines.append(f"fires nothing: {skipped['scheduledJob']}: {skipped['reason']}")
    return "\n".join(lines)


def _write(path: Path, series: Series, title: str) -> None:
    from sundial.cli.kubectl import charts  # noqa: PLC0415 - only when a file is asked for

    if path.suffix.lower() == ".png":
        if not charts.png_available():
            raise PluginError(f"--output-file: {path} needs matplotlib (pip install matplotlib); .svg needs nothing")
        charts.png(series, title=title, path=path)
    else:
        path.write_text(charts.svg(series, title=title), encoding="utf-8")


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    from sundial.cli.kubectl import charts, herds  # noqa: PLC0415 - the model, only when the command runs
    from sundial.cli.kubectl.calendars import CalendarReader  # noqa: PLC0415 - likewise
    from sundial.model import ScheduledJob  # noqa: PLC0415 - likewise

    _check(args)
    objects = [
        ScheduledJob.from_dict(body)
        for body in scheduled_jobs(kubectl, names=args.names, all_namespaces=args.all_namespaces)
    ]
    reader = CalendarReader(kubectl)
    start = now()
    end = start + timedelta(hours=args.hours)
    try:
        found, skipped = herds.fires(objects, start=start, end=end, calendars=reader.of)
    except herds.TooManyRunsError as error:
        raise PluginError(
            f"forecast: {error} in the next {args.hours:g} hours: ask for fewer --hours, one namespace (-n) "
            "or some NAMEs"
        ) from None
    series = series_of(found, start=start, end=end, by=args.by)
    document = report(found, skipped, series=series, start=start, end=end, top=args.top, objects=len(objects))
    if args.output_file:
        title = f"Sundial runs due per {args.by}, {document['from']} to {document['to']}"
        _write(Path(args.output_file), series, title)
    if args.output:
        print(outputs.dump(document, args.output))
    else:
        print(text(document, charts.terminal(series, width=shutil.get_terminal_size((80, 24)).columns)))
    return 0
