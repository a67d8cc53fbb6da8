#!/usr/bin/env python3
"""Write docs/reference.md, the ScheduledJob field reference, from the CRDs and the operator's own vocabulary.

Fields: the single sources are crds/sundial.dev_scheduledjobs.yaml and crds/sundial.dev_schedulecalendars.yaml:
every field's description, type, default,
limits and CEL rules come from its OpenAPI schema, so the reference cannot drift from what the API server
enforces. Labels, annotations, environment variables, condition types and reasons, dead-letter reasons and
Event reasons: the constants and enums of sundial.model.names, sundial.model.enums and
sundial.planner.actions, described by their docstrings, so the reference says what the operator writes.
tests/unit/docs/test_reference.py fails while docs/reference.md is stale.

    python tools/gen-field-reference.py           # rewrite docs/reference.md
    python tools/gen-field-reference.py --check   # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import sys
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "operator"))  # this checkout's sundial, installed or not

from sundial.model import enums, names  # noqa: E402
from sundial.planner import actions  # noqa: E402

CRD = ROOT / "crds" / "sundial.dev_scheduledjobs.yaml"
CALENDAR_CRD = ROOT / "crds" / "sundial.dev_schedulecalendars.yaml"
OUTPUT = ROOT / "docs" / "reference.md"
#: Subtrees documented by reference, not field by field (the embedded Kubernetes type).
OPAQUE = {"spec.jobTemplate": "a `batch/v1` JobTemplateSpec: see the Kubernetes API reference for Job"}


def _type(node: dict[str, Any]) -> str:
    kind = str(node.get("type", "object"))
    if kind == "array":
        return f"[]{_type(node.get('items') or {})}"
    if node.get("format"):
        return f"{kind} ({node['format']})"
    return kind


def _limits(node: dict[str, Any]) -> list[str]:
    found = []
    if "enum" in node:
        found.append("one of " + ", ".join(f"`{v}`" for v in node["enum"]))
    if "minimum" in node or "maximum" in node:
        found.append(f"{node.get('minimum', '…')} to {node.get('maximum', '…')}")
    if "pattern" in node:
        found.append(f"pattern `{node['pattern']}`")
    if "maxLength" in node:
        found.append(f"at most {node['maxLength']} characters")
    if "maxItems" in node:
        found.append(f"at most {node['maxItems']} items")
    for rule in node.get("x-kubernetes-validations") or []:
        found.append(f"rule: {rule.get('message') or rule['rule']}")
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(node: dict[str, Any]) -> str:
    if "default" not in node:
        return ""
    value = node["default"]
    if value == {}:
        return "`{}` (every field's default)"
    return f"`{json.dumps(value, separators=(',', ':'))}`"


def rows(node: dict[str, Any], path: str, required: set[str]) -> list[str]:
    out = []
    for name, child in (node.get("properties") or {}).items():
        here = f"{path}.{name}"
        description = child.get("description", "")
        if here in OPAQUE:
            description = f"{description} ({OPAQUE[here]})"
        limits = "; ".join(_limits(child))
        mark = " (required)" if name in required else ""
        out.append(f"| `{here}`{mark} | {_type(child)} | {_default(child)} | {_cell(description)} | {_cell(limits)} |")
        if here in OPAQUE:
            continue
        target = child.get("items") if child.get("type") == "array" else child
        if isinstance(target, dict) and target.get("properties"):
            sub = f"{here}[]" if child.get("type") == "array" else here
            out += rows(target, sub, set(target.get("required") or []))
    return out


def docstrings(module: ModuleType) -> dict[str, str]:
    """Attribute docstrings (the string right after an assignment) of a module, as ``NAME`` or ``Class.NAME``."""
    found: dict[str, str] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for statement, following in zip(body, [*body[1:], None], strict=True):
            if isinstance(statement, ast.ClassDef):
                walk(statement.body, f"{statement.name}.")
            target = statement.targets[0] if isinstance(statement, ast.Assign) else getattr(statement, "target", None)
            text = (
                following.value.value
                if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                else None
            )
            if isinstance(target, ast.Name) and isinstance(text, str):
                found[prefix + target.id] = _markdown(text)

    walk(ast.parse(inspect.getsource(module)).body, "")
    return found


def _markdown(text: str) -> str:
    """A reST docstring as one Markdown table cell: ``code`` and :role:`a.b.Name` become `code` and `Name`."""
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?(\w+)`", r"`\1`", " ".join(text.split()))
    return _cell(text.replace("``", "`"))


def _members(kind: type[StrEnum], described: dict[str, str]) -> list[str]:
    return [f"| `{member.value}` | {described.get(f'{kind.__name__}.{member.name}', '')} |" for member in kind]


def vocabulary() -> list[str]:
    """The labels, annotations, environment variables, conditions and Events the operator writes."""
    keys, states, events = docstrings(names), docstrings(enums), docstrings(actions)
    on_jobs = "Job (and its pod template with `spec.podTemplateStamps`)"
    placed = [
        (names.SCHEDULED_JOB_LABEL, "label", "Job and its pod template", "SCHEDULED_JOB_LABEL"),
        *((key, "annotation", on_jobs, name) for name, key in vars(names).items() if key in names.JOB_ANNOTATIONS),
        (names.REDRIVE_ANNOTATION, "annotation", "ScheduledJob", "REDRIVE_ANNOTATION"),
        (names.BACKFILL_ANNOTATION, "annotation", "ScheduledJob", "BACKFILL_ANNOTATION"),
        *((value, "environment variable", "every container of a run", name)
          for name, value in vars(names).items() if name.endswith("_ENV")),
    ]  # fmt: skip
    where = {names.TRIGGER_ANNOTATION: f"ScheduledJob; {on_jobs}"}
    lines = [
        "## Labels, annotations and environment variables",
        "",
        f"Every key Sundial owns starts with `{names.PREFIX}`; the token annotations are requests (set a new value to "
        "ask again), the others are written by the operator.",
        "",
        "| name | kind | on | meaning |",
        "|---|---|---|---|",
        *(f"| `{key}` | {kind} | {where.get(key, on)} | {keys.get(name, '')} |" for key, kind, on, name in placed),
        "",
        "## Conditions",
        "",
        "| type | meaning |",
        "|---|---|",
        *_members(enums.ConditionType, states),
        "",
        "Reasons (`DeadLettered=True` carries a dead-letter reason, `Complete=True` a completion reason):",
        "",
        "| reason | meaning |",
        "|---|---|",
        *_members(enums.ConditionReason, states),
        "",
        "Completion reasons (`Complete=True` of one-offs):",
        "",
        "| reason | meaning |",
        "|---|---|",
        *_members(enums.CompleteReason, states),
        "",
        "## Dead-letter reasons",
        "",
        "| reason | meaning |",
        "|---|---|",
        *_members(enums.DeadLetterReason, states),
        "",
        "## Events",
        "",
        "Reasons of the core/v1 Events on a ScheduledJob (see [api.md](api.md#events) for series and rate limits):",
        "",
        "| reason | type and meaning |",
        "|---|---|",
        *_members(actions.EventReason, events),
        "",
        "## Triggers",
        "",
        f"Values of `{names.TRIGGER_ANNOTATION}` on a Job and of `trigger` in the status lists:",
        "",
        "| trigger | meaning |",
        "|---|---|",
        *_members(enums.Trigger, states),
        "",
    ]
    return lines


def render() -> str:
    crd = yaml.safe_load(CRD.read_text())
    names = crd["spec"]["names"]
    lines = [
        "# ScheduledJob field reference",
        "",
        "<!-- GENERATED by tools/gen-field-reference.py from crds/sundial.dev_scheduledjobs.yaml: do not edit. -->",
        "",
        f"`{names['kind']}` (`{crd['spec']['group']}`), short names "
        + ", ".join(f"`{s}`" for s in names.get("shortNames", []))
        + ". The user guide ([guide.md](guide.md)) explains the concepts with examples.",
        "",
    ]
    lines += _versions(crd, heading="##", parts=("spec", "status"))
    calendar = yaml.safe_load(CALENDAR_CRD.read_text())
    lines += [
        f"## {calendar['spec']['names']['kind']}",
        "",
        f"`{calendar['spec']['names']['kind']}` (`{calendar['spec']['group']}`, namespaced), short names "
        + ", ".join(f"`{s}`" for s in calendar["spec"]["names"].get("shortNames", []))
        + ": named in a ScheduledJob's `spec.calendarRefs`.",
        "",
        *_versions(calendar, heading="###", parts=("spec",)),
    ]
    lines += vocabulary()
    return "\n".join(lines)


def _versions(crd: dict[str, Any], *, heading: str, parts: tuple[str, ...]) -> list[str]:
    lines: list[str] = []
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        lines += [f"{heading} {crd['spec']['group']}/{version['name']}", "", _cell(schema.get("description", "")), ""]
        for part in parts:
            node = schema["properties"][part]
            lines += [f"{heading}# {part}", ""]
            if node.get("description"):
                lines += [_cell(node["description"]), ""]
            rules = [r.get("message") or r["rule"] for r in node.get("x-kubernetes-validations") or []]
            if rules:
                lines += ["Rules across fields:", ""] + [f"- {_cell(r)}" for r in rules] + [""]
            lines += [
                "| field | type | default | description | validation |",
                "|---|---|---|---|---|",
                *rows(node, part, set(node.get("required") or [])),
                "",
            ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/reference.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text() != text:
            print("docs/reference.md is stale: run python tools/gen-field-reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
