"""A maximal legal ScheduledJob, for ``python -m bench.memory --maximal``: what one tenant can make the operator
hold with one object the API server and the webhook accept (issue 21 item 2).

Every field of the CRD's spec schema at its bounds (arrays at ``maxItems``, strings at ``maxLength`` of random
letters and digits: ``spec.exclude`` 100 x 400 dates), the jobTemplate at the webhook's default bound (256 KiB),
a 240,000-character ``sundial.dev/trigger`` token (annotations may total 256 KiB), another 10 KB of foreign
annotations, and the captured fixture's metadata (managedFields) and status.
"""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
CRD = REPO / "crds" / "sundial.dev_scheduledjobs.yaml"
TEMPLATE_BYTES = 256 * 1024
TRIGGER_TOKEN = 240_000
#: Strings are random letters and digits (a hostile tenant's content does not compress away).
_RANDOM = random.Random(21)
_ALPHABET = string.ascii_letters + string.digits


def _text(length: int) -> str:
    return "".join(_RANDOM.choices(_ALPHABET, k=length))


def _maximal(schema: dict[str, Any]) -> Any:
    if "properties" in schema:
        return {key: _maximal(value) for key, value in schema["properties"].items()}
    kind = schema.get("type")
    if kind == "array":
        return [_maximal(schema["items"]) for _ in range(schema.get("maxItems", 1))]
    if kind == "string":
        return _text(schema.get("maxLength", 64))
    if kind in ("integer", "number"):
        return 2**31
    return True if kind == "boolean" else {}


def _template(size: int) -> dict[str, Any]:
    template: dict[str, Any] = {
        "metadata": {"annotations": {"pad": ""}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }
    base = len(json.dumps(template, separators=(",", ":")))
    template["metadata"]["annotations"]["pad"] = _text(size - base)
    return template


def body(fixture: Path) -> dict[str, Any]:
    """The captured object of FIXTURE with a maximal spec and annotations (its metadata and status kept)."""
    captured = json.loads(fixture.read_text(encoding="utf-8"))
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    spec = _maximal(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    spec["jobTemplate"] = _template(TEMPLATE_BYTES)
    captured["spec"] = spec
    annotations = captured["metadata"].setdefault("annotations", {})
    annotations["sundial.dev/trigger"] = _text(TRIGGER_TOKEN)
    annotations["example.com/notes"] = _text(10_000)
    return captured


def legal(fixture: Path) -> dict[str, Any]:
    """The captured object of FIXTURE with the spec and annotations of the largest ScheduledJob the CRD and the
    webhook admit (:func:`bench.intake.largest`; :func:`body` is larger, and refused)."""
    from bench import intake  # noqa: PLC0415

    captured = json.loads(fixture.read_text(encoding="utf-8"))
    largest = intake.largest(captured["metadata"]["name"], 0, template_bytes=TEMPLATE_BYTES)
    captured["spec"] = largest["spec"]
    captured["metadata"].setdefault("annotations", {}).update(largest["metadata"]["annotations"])
    return captured


def write(fixture: Path, path: Path, *, admitted: bool = False) -> Path:
    """Write the maximal object made from FIXTURE to PATH (the bench reads its template from a file)."""
    path.write_text(json.dumps(legal(fixture) if admitted else body(fixture)), encoding="utf-8")
    return path
