"""docs/reference.md is generated from the CRD's descriptions (tools/gen-field-reference.py) and up to date."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

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
