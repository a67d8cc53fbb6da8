"""The wheels the repository builds: ``sundial`` (what the image installs) ships the operator and nothing of the
sandbox; ``sundial-sandbox`` (tools/sandbox/) ships the sandbox and nothing of the operator. Each wheel is built
with setuptools' PEP 517 backend from a copy of just the files its build needs, as the Dockerfile's builder does."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SANDBOX_PROJECT = ROOT / "tools" / "sandbox"
BUILD = "import sys\nfrom setuptools import build_meta\nprint(build_meta.build_wheel(sys.argv[1]))\n"
IGNORED = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info", "build")


def build_wheel(source: Path, out: Path) -> list[str]:
    """The file names inside the wheel that ``source`` (a project directory) builds."""
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.fixture(scope="module")
def sundial_wheel(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    source = tmp_path_factory.mktemp("sundial-src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "operator", source / "operator", ignore=IGNORED)
    return build_wheel(source, tmp_path_factory.mktemp("sundial-wheel") / "dist")


@pytest.fixture(scope="module")
def sandbox_wheel(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    source = tmp_path_factory.mktemp("sandbox-src") / "sandbox"
    shutil.copytree(SANDBOX_PROJECT, source, ignore=IGNORED)
    return build_wheel(source, tmp_path_factory.mktemp("sandbox-wheel") / "dist")


def test_the_sundial_wheel_has_no_sandbox_module(sundial_wheel: list[str]) -> None:
    sandbox = [name for name in sundial_wheel if name.startswith(("sundial_sandbox/", "sundial/sandbox/"))]
    assert sandbox == []


def test_the_sundial_wheel_ships_the_operator(sundial_wheel: list[str]) -> None:
    packages = {name.split("/")[0] for name in sundial_wheel if not name.split("/")[0].endswith(".dist-info")}
    assert packages == {"sundial"}
    for module in ("sundial/cli/commands/main.py", "sundial/cli/commands/sandbox.py", "sundial/runtime/__init__.py"):
        assert module in sundial_wheel
    assert "sundial/py.typed" in sundial_wheel


def test_the_sandbox_wheel_ships_the_sandbox_only(sandbox_wheel: list[str]) -> None:
    packages = {name.split("/")[0] for name in sandbox_wheel if not name.split("/")[0].endswith(".dist-info")}
    assert packages == {"sundial_sandbox"}
    for module in ("sundial_sandbox/__init__.py", "sundial_sandbox/cluster.py", "sundial_sandbox/py.typed"):
        assert module in sandbox_wheel


def test_the_sandbox_version_moves_in_step_with_sundial() -> None:
    sundial = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    sandbox = tomllib.loads((SANDBOX_PROJECT / "pyproject.toml").read_text())["project"]
    assert (sandbox["name"], sandbox["version"]) == ("sundial-sandbox", sundial["version"])
    for requirement in sandbox["dependencies"]:
        assert "==" in requirement, f"tools/sandbox/pyproject.toml: pin {requirement!r} exactly, as sundial does"
