"""The CRDs have one source, crds/; tools/sync-chart-crds.sh copies them into the chart and the kustomize
layout, and tools/check-crds.sh (run by `make test`) fails when a copy drifts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
COPIES = ("charts/sundial/files/crds", "config/crd/bases")


def run(tool: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", f"tools/{tool}"], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for tool in ("check-crds.sh", "sync-chart-crds.sh"):
        (tmp_path / "tools").mkdir(exist_ok=True)
        shutil.copy(ROOT / "tools" / tool, tmp_path / "tools" / tool)
    shutil.copytree(ROOT / "crds", tmp_path / "crds")
    for copy in COPIES:
        shutil.copytree(ROOT / copy, tmp_path / copy)
    return tmp_path


def test_the_committed_copies_match_crds() -> None:
    result = run("check-crds.sh", ROOT)
    assert result.returncode == 0, result.stderr


def test_a_changed_source_is_reported_until_synced(checkout: Path) -> None:
    source = next((checkout / "crds").glob("*.yaml"))
    source.write_text(source.read_text() + "# changed\n")
    drifted = run("check-crds.sh", checkout)
    assert drifted.returncode == 1
    assert "sync-chart-crds.sh" in drifted.stderr
    assert run("sync-chart-crds.sh", checkout).returncode == 0
    assert run("check-crds.sh", checkout).returncode == 0
    for copy in COPIES:
        assert (checkout / copy / source.name).read_text() == source.read_text()


def test_an_edited_copy_is_reported(checkout: Path) -> None:
    copy = next((checkout / COPIES[0]).glob("*.yaml"))
    copy.write_text(copy.read_text().replace("v1alpha1", "v1beta1", 1))
    assert run("check-crds.sh", checkout).returncode == 1


def test_a_copy_without_source_is_removed_by_sync(checkout: Path) -> None:
    stale = checkout / COPIES[1] / "old.yaml"
    stale.write_text("kind: CustomResourceDefinition\n")
    assert run("check-crds.sh", checkout).returncode == 1
    run("sync-chart-crds.sh", checkout)
    assert not stale.exists()
