"""The image's lock files (tools/image/*.lock, written by ``make lock``) agree with pyproject.toml: every
runtime dependency is locked at its pinned version, nothing is locked that pyproject's dependencies do not
pull in, and every entry carries SHA-256 hashes. That they include the CPython 3.11 x86_64 wheels is proved
by ``make image``, which downloads exactly those with ``--require-hashes``. Checked without the network:
the lock's ``# via`` annotations name, for every transitive entry, the locked packages that need it."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LOCK = ROOT / "tools" / "image" / "requirements.lock"
BUILD_LOCK = ROOT / "tools" / "image" / "build-requirements.lock"
BUILD_INPUT = ROOT / "tools" / "image" / "build-requirements.in"
HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass
class Entry:
    name: str
    version: str
    hashes: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _source(via: str) -> str:
    """``sundial (pyproject.toml)`` (uv's name for the project's own dependencies) -> ``pyproject.toml``."""
    return "pyproject.toml" if via.endswith("(pyproject.toml)") else via


def parse_lock(text: str) -> dict[str, Entry]:
    """name -> Entry from a ``--generate-hashes`` requirements file with ``# via`` annotations."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for line in text.splitlines():
        requirement = re.match(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)(\[[^\]]*\])?==([^\s\\;]+)", line)
        if requirement:
            current = Entry(normalize(requirement.group(1)), requirement.group(3))
            entries[current.name] = current
            in_via = False
            continue
        if current is None:
            continue
        current.hashes += HASH.findall(line)
        stripped = line.strip()
        if stripped.startswith("# via"):
            rest = stripped[len("# via") :].strip()
            in_via = True
            if rest:
                current.via.add(_source(rest))
        elif in_via and stripped.startswith("#"):
            current.via.add(_source(stripped.lstrip("#").strip()))
        elif stripped and not stripped.startswith("--hash"):
            in_via = False
    return entries


def pins(requirements: list[str]) -> dict[str, str]:
    out = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([\w.]+)", requirement.strip())
        assert match, f"pyproject.toml: {requirement!r} is not pinned with =="
        out[normalize(match.group(1))] = match.group(3)
    return out


@pytest.fixture(scope="module")
def project() -> dict[str, object]:
    data: dict[str, object] = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data


@pytest.fixture(scope="module")
def lock() -> dict[str, Entry]:
    return parse_lock(LOCK.read_text())


def test_the_parser_reads_names_versions_hashes_and_via() -> None:
    text = (
        "a-b==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n    # via\n    #   c\n    #   pyproject.toml\n"
        "c==2 \\\n    --hash=sha256:" + "1" * 64 + "\n    # via pyproject.toml\n"
    )
    parsed = parse_lock(text)
    assert parsed["a-b"].version == "1.0"
    assert parsed["a-b"].via == {"c", "pyproject.toml"}
    assert parsed["c"].hashes == ["1" * 64]


def test_every_runtime_dependency_is_locked_at_its_pinned_version(
    project: dict[str, object], lock: dict[str, Entry]
) -> None:
    wanted = pins(project["project"]["dependencies"])  # type: ignore[index]
    locked = {name: lock[name].version for name in wanted if name in lock}
    assert locked == wanted, "tools/image/requirements.lock is out of date: run `make lock`"


def test_the_lock_holds_nothing_the_dependencies_do_not_pull_in(
    project: dict[str, object], lock: dict[str, Entry]
) -> None:
    direct = set(pins(project["project"]["dependencies"]))  # type: ignore[index]
    needed = set(direct)
    changed = True
    while changed:  # everything reachable from the direct dependencies through the `# via` graph
        changed = False
        for entry in lock.values():
            if entry.name not in needed and {normalize(v) for v in entry.via} & needed:
                needed.add(entry.name)
                changed = True
    stray = sorted(set(lock) - needed)
    assert not stray, f"locked but not needed by pyproject.toml's dependencies: {stray}; run `make lock`"
    for name in direct:
        assert "pyproject.toml" in lock[name].via, f"{name}: not marked as a pyproject.toml dependency"


@pytest.mark.parametrize("path", [LOCK, BUILD_LOCK], ids=["runtime", "build"])
def test_every_locked_package_has_sha256_hashes(path: Path) -> None:
    entries = parse_lock(path.read_text())
    assert entries
    assert not [name for name, entry in entries.items() if not entry.hashes]


def test_the_build_lock_pins_the_build_system(project: dict[str, object]) -> None:
    requires = project["build-system"]["requires"]  # type: ignore[index]
    assert BUILD_INPUT.read_text().split() == requires, "tools/image/build-requirements.in is stale: `make lock`"
    entries = parse_lock(BUILD_LOCK.read_text())
    for requirement in requires:
        name = normalize(re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0])
        assert name in entries, f"{name} is not in {BUILD_LOCK.name}"


def test_the_locks_say_how_to_regenerate_them() -> None:
    for path in (LOCK, BUILD_LOCK):
        assert "make lock" in path.read_text().splitlines()[1], path.name
