"""docs/reference.md is generated from the CRD's descriptions (tools/gen-field-reference.py) and up to date."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from sundial.model import enums, names
from sundial.planner import actions

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "gen-field-reference.py"


def test_docs_reference_md_is_not_stale() -> None:
    result = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr + "(run: python tools/gen-field-reference.py)"


def test_every_spec_field_of_the_crd_is_in_the_reference() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "sundial.dev_scheduledjobs.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    reference = (ROOT / "docs" / "reference.md").read_text()
    for name in spec["properties"]:
        assert f"| `spec.{name}`" in reference, name


def test_every_spec_field_is_explained_in_the_guide() -> None:
    crd = yaml.safe_load((ROOT / "crds" / "sundial.dev_scheduledjobs.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    guide = (ROOT / "docs" / "guide.md").read_text()
    for name in spec["properties"]:
        assert f"`{name}`" in guide or f"{name}:" in guide, f"docs/guide.md does not mention spec.{name}"


def test_the_reference_lists_and_describes_the_whole_wire_vocabulary() -> None:
    reference = (ROOT / "docs" / "reference.md").read_text()
    keys = (names.SCHEDULED_JOB_LABEL, *names.JOB_ANNOTATIONS, *names.TOKEN_ANNOTATIONS)
    envs = (names.SCHEDULED_TIME_ENV, names.ATTEMPT_ENV, names.IDEMPOTENCY_KEY_ENV, names.FENCING_TOKEN_ENV)
    kinds = (
        enums.ConditionType,
        enums.ConditionReason,
        enums.CompleteReason,
        enums.DeadLetterReason,
        enums.Trigger,
        actions.EventReason,
    )
    for value in (*keys, *envs, *(member.value for kind in kinds for member in kind)):
        rows = [line for line in reference.splitlines() if line.startswith(f"| `{value}` |")]
        assert rows, f"docs/reference.md does not list {value}"
        assert all(not row.endswith("|  |") for row in rows), f"{value} has no docstring to describe it"
