"""Pictures of a series of counts (for ``kubectl sundial forecast``): a terminal bar chart in Unicode blocks
that fits the terminal's width, an SVG written as plain text, and a PNG when matplotlib is importable.

Counts are per bucket from ``start``, ``width`` apart; when there are more buckets than columns, each column
shows the busiest bucket it covers (a herd is never averaged away). Imports nothing of Sundial.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from xml.sax.saxutils import escape

BLOCKS = " ▁▂▃▄▅▆▇█"
ROWS = 8
AXIS = 7
"""Characters left of the bars: the count labels and the axis."""
SVG_WIDTH, SVG_HEIGHT, SVG_MARGIN = 960, 360, 56


@dataclass(frozen=True)
class Series:
    """Counts per bucket: the first bucket starts at ``start``; each is ``width`` long; ``unit`` names it."""

    start: datetime
    width: timedelta
    counts: Sequence[int]
    unit: str


def columns(counts: Sequence[int], limit: int) -> tuple[list[int], int]:
    """At most ``limit`` columns of ``counts``: each the largest of ``per`` consecutive counts; returns them and
    ``per``."""
    per = max(-(-len(counts) // max(limit, 1)), 1)
    return [max(counts[i : i + per]) for i in range(0, len(counts), per)], per


def _label(instant: datetime, span: timedelta) -> str:
    return instant.strftime("%m-%d %H:%M" if span > timedelta(hours=24) else "%H:%M")


def _axis_labels(series: Series, count: int, per: int) -> str:
    span = series.width * len(series.counts)
    sample = _label(series.start, span)
    step = len(sample) + 3
    line = [" "] * count
    for column in range(0, count - len(sample) + 1, step):
        text = _label(series.start + series.width * per * column, span)
        line[column : column + len(text)] = text
    return " " * AXIS + "".join(line).rstrip()


def terminal(series: Series, *, width: int) -> str:
    """The bar chart, ``width`` characters wide at most (``ROWS`` lines of bars, eight steps per line)."""
    bars, per = columns(series.counts, max(width - AXIS - 1, 10))
    peak = max(bars, default=0)
    lines = []
    for row in range(ROWS, 0, -1):
        cells = []
        for value in bars:
            eighths = max(round(value * ROWS * 8 / peak), 1) if value else 0
            cells.append(BLOCKS[min(max(eighths - (row - 1) * 8, 0), 8)])
        label = str(peak) if row == ROWS else ("0" if row == 1 else "")
        lines.append(f"{label:>{AXIS - 2}} │{''.join(cells).rstrip()}")
    lines.append(" " * (AXIS - 2) + " └" + "─" * len(bars))
    lines.append(_axis_labels(series, len(bars), per))
    each = f"the busiest {series.unit} of {per}" if per > 1 else f"one {series.unit}"
    lines.append(f"{'':>{AXIS}}one column: {each}, UTC"[: max(width, 1)])
    return "\n".join(lines)


def svg(series: Series, *, title: str) -> str:
    """The chart as an SVG document: one bar per column (at most 900), the peak and the time axis labelled."""
    plot_width, plot_height = SVG_WIDTH - 2 * SVG_MARGIN, SVG_HEIGHT - 2 * SVG_MARGIN
    bars, per = columns(series.counts, plot_width)
    peak = max(bars, default=0) or 1
    step = plot_width / max(len(bars), 1)
    bottom = SVG_MARGIN + plot_height
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SVG_WIDTH}" height="{SVG_HEIGHT}" '
        f'viewBox="0 0 {SVG_WIDTH} {SVG_HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{SVG_WIDTH}" height="{SVG_HEIGHT}" fill="white"/>',
        f'<text x="{SVG_MARGIN}" y="{SVG_MARGIN - 24}" font-size="14">{escape(title)}</text>',
    ]
    for index, value in enumerate(bars):
        if value:
            height = plot_height * value / peak
            parts.append(
                f'<rect class="bar" x="{SVG_MARGIN + index * step:.2f}" y="{bottom - height:.2f}" '
                f'width="{max(step, 1):.2f}" height="{height:.2f}" fill="#3b6ea5"><title>{value}</title></rect>'
            )
    parts += [
        f'<line x1="{SVG_MARGIN}" y1="{bottom}" x2="{SVG_MARGIN + plot_width}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{SVG_MARGIN}" y1="{SVG_MARGIN}" x2="{SVG_MARGIN}" y2="{bottom}" stroke="black"/>',
        f'<text x="{SVG_MARGIN - 6}" y="{SVG_MARGIN + 4}" text-anchor="end">{peak}</text>',
        f'<text x="{SVG_MARGIN - 6}" y="{bottom + 4}" text-anchor="end">0</text>',
    ]
    span = series.width * len(series.counts)
    for tick in range(6):
        x = SVG_MARGIN + plot_width * tick / 5
        instant = series.start + span * tick / 5
        parts.append(f'<text x="{x:.2f}" y="{bottom + 18}" text-anchor="middle">{_label(instant, span)}</text>')
    each = f"busiest {series.unit} of every {per}" if per > 1 else series.unit
    parts.append(f'<text x="{SVG_MARGIN}" y="{bottom + 38}">runs per {escape(each)}, UTC</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def png_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def png(series: Series, *, title: str, path: Path) -> None:
    """The chart as a PNG through matplotlib (check :func:`png_available` first)."""
    import matplotlib  # noqa: PLC0415 - optional, only for a PNG

    matplotlib.use("Agg")
    from matplotlib import dates, pyplot  # noqa: PLC0415 - likewise

    figure, axes = pyplot.subplots(figsize=(12, 4), dpi=100)
    starts = [float(dates.date2num(series.start + series.width * index)) for index in range(len(series.counts))]  # type: ignore[no-untyped-call]
    days = series.width.total_seconds() / 86400
    axes.bar(starts, list(series.counts), width=days, align="edge", color="#3b6ea5")
    axes.xaxis_date()
    axes.set_title(title)
    axes.set_ylabel(f"runs per {series.unit}")
    axes.set_xlabel("UTC")
    figure.autofmt_xdate()
    figure.savefig(path, format="png")
    pyplot.close(figure)
