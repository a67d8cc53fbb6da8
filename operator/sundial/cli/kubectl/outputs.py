"""Output formats of ``kubectl sundial`` as kubectl prints them: the ``-o`` flag, ``-o json|yaml|name``, tables,
ages and the one-line results of the commands that write. Imports nothing of Sundial (YAML only for ``-o yaml``).

Everything the plugin prints comes from the cluster in part (tokens, messages, names a tenant chose), so it is
printed through :func:`printable` (:func:`sanitized` wraps stdout and stderr while a command runs): a control
character - a terminal escape, a carriage return, a bidirectional override - is shown escaped, never sent to
the terminal.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

SCHEDULED_JOB = "scheduledjob.sundial.dev"
"""What ``-o name`` prints before the slash for a ScheduledJob (kubectl: ``<resource>.<group>/<name>``)."""
JOB = "job.batch"

#: C0 controls but tab and newline, DEL, C1 controls (``\x9b`` is a CSI on some terminals), bidi overrides.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """TEXT with each control character shown as ``\\xNN`` or ``\\uNNNN`` instead of sent to the terminal."""
    return _CONTROL.sub(lambda match: _escape(ord(match.group())), text)


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class _Printable:
    """A text stream whose writes go through :func:`printable`."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._stream.write(printable(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def sanitized() -> Iterator[None]:
    """While it lasts, everything printed to stdout and stderr goes through :func:`printable`."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Printable(out), _Printable(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


class Output(StrEnum):
    """Values of ``-o``."""

    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"
    NAME = "name"


def flag(sub: argparse.ArgumentParser, *choices: str, default: str | None = None) -> None:
    """Add ``-o/--output`` with these ``choices`` to a sub-command."""
    sub.add_argument("-o", "--output", choices=choices, default=default, help="output format")


def name_of(resource: str, body: Mapping[str, Any]) -> str:
    return f"{resource}/{(body.get('metadata') or {}).get('name', '')}"


def document(items: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """One object as itself, several as a ``v1/List`` (what ``kubectl get -o json`` prints)."""
    if len(items) == 1:
        return items[0]
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}}


def dump(value: Any, output: str) -> str:
    """``value`` as JSON (4-space indent, like kubectl) or YAML; no trailing newline."""
    if output == Output.JSON:
        return json.dumps(value, indent=4, ensure_ascii=False)
    import yaml  # noqa: PLC0415 - only -o yaml needs it

    return str(yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)).rstrip("\n")


def objects(items: Sequence[Mapping[str, Any]], output: str, *, resource: str = SCHEDULED_JOB) -> str:
    """Objects for ``-o json|yaml|name``."""
    if output == Output.NAME:
        return "\n".join(name_of(resource, item) for item in items)
    return dump(document(items), output)


def result(output: str | None, body: Mapping[str, Any], *, resource: str, default: str) -> str:
    """What a command that wrote ``body`` prints: the object with ``-o``, else the ``default`` line."""
    return objects([body], output, resource=resource) if output else default


def none_found(namespace: str | None, *, all_namespaces: bool) -> str:
    """kubectl's message for an empty listing."""
    where = "" if all_namespaces else f" in {namespace or 'the current'} namespace"
    return f"No resources found{where}."


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns separated by three spaces, left-aligned, as kubectl's printers do."""
    if not rows:
        return ""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "   ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)) for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def watch_line(header: Sequence[str], row: Sequence[str], *, first: bool) -> str:
    """One line of a watched table (``get -w``), each cell padded to its header's width; the header above it
    when it is the FIRST."""
    widths = [len(cell) for cell in header]
    cells = (
        "   ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in (header, row)
    )
    head, line = cells
    return f"{head}\n{line}" if first else line


def age(seconds: float) -> str:
    """A duration as kubectl shows ages (``45s``, ``5m30s``, ``90m``, ``5h10m``, ``36h``, ``3d4h``, ``20d``)."""
    total = max(int(seconds), 0)
    minutes, hours, days = total // 60, total // 3600, total // 86400
    if total < 120:
        return f"{total}s"
    if minutes < 10:
        return f"{minutes}m{total % 60}s" if total % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d"


def since(then: datetime | None, now: datetime) -> str:
    """``age`` of ``then``, ``<none>`` when unknown."""
    return "<none>" if then is None else age((now - then).total_seconds())


def until(then: datetime | None, now: datetime) -> str:
    """``in <age>`` of a future ``then``, ``<none>`` when there is none."""
    return "<none>" if then is None else f"in {age((then - now).total_seconds())}"
