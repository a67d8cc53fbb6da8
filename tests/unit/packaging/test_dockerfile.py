"""Static checks of the image recipe (``make image`` builds it with podman and the e2e suite runs it; these
read what Docker users get): two stages on Debian bookworm (Python 3.11, CI's minor version), everything
installed from the hash-pinned locks with ``--require-hashes --no-deps``, nothing but the virtualenv copied
into the final stage, no build tools there, a numeric non-root user, ``sundial run`` as the entry point,
OCI labels with version and revision, and a build context (``.dockerignore``) equal to the one
``tools/image/context.py`` stages for ``make image``: no sandbox, no tests."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD_TOOLS = ("build-essential", "gcc", "g++", "make", "cc", "clang", "git", "curl", "wget", "python3-dev")
#: Debian release -> its python3's minor version.
DEBIAN_PYTHON = {"bookworm": "3.11", "trixie": "3.13"}


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args_of(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def logical_lines(text: str) -> list[str]:
    """Dockerfile lines with comments removed and backslash continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].rstrip() + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages of a Dockerfile."""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical_lines(text):
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        args = args.strip()
        if keyword == "FROM":
            words = args.split()
            words = [w for w in words if not w.startswith("--platform")]
            base = words[0]
            for key, value in global_args.items():
                base = base.replace(f"${{{key}}}", value).replace("$" + key, value)
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=base, name=name))
        elif not stages:
            if keyword == "ARG" and "=" in args:
                key, _, value = args.partition("=")
                global_args[key] = value
        else:
            stages[-1].instructions.append((keyword, args))
    return global_args, stages


@pytest.fixture(scope="module")
def parsed() -> tuple[dict[str, str], list[Stage]]:
    return parse((ROOT / "Dockerfile").read_text())


@pytest.fixture(scope="module")
def stages(parsed: tuple[dict[str, str], list[Stage]]) -> list[Stage]:
    return parsed[1]


@pytest.fixture(scope="module")
def builder(stages: list[Stage]) -> Stage:
    return stages[0]


@pytest.fixture(scope="module")
def final(stages: list[Stage]) -> Stage:
    return stages[-1]


def test_the_parser_joins_continuations_and_drops_comments() -> None:
    text = "ARG B=debian:bookworm-slim\n# c\nFROM ${B} AS x\nRUN a \\\n    b\n"
    _, parsed = parse(text)
    assert parsed[0].base == "debian:bookworm-slim"
    assert parsed[0].name == "x"
    assert parsed[0].instructions == [("RUN", "a b")]


def test_the_image_is_built_in_two_stages(stages: list[Stage]) -> None:
    assert [stage.name for stage in stages] == ["builder", "runtime"]


def test_both_stages_are_debian_whose_python_is_the_minor_version_ci_runs(stages: list[Stage]) -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    ci_minor = tool["mypy"]["python_version"]
    assert tool["ruff"]["target-version"] == "py" + ci_minor.replace(".", "")
    for stage in stages:
        match = re.fullmatch(r"debian:(\w+)-slim(@sha256:[0-9a-f]{64})?", stage.base)
        assert match, stage.base
        assert DEBIAN_PYTHON[match.group(1)] == ci_minor, stage.base


def test_the_mmdebstrap_bases_are_the_same_debian_release(stages: list[Stage]) -> None:
    release = re.search(r"^SUITE=(\w+)$", (ROOT / "tools/image/base.sh").read_text(), re.MULTILINE)
    assert release
    assert all(stage.base.startswith(f"debian:{release.group(1)}-") for stage in stages)


def test_the_builder_installs_only_from_the_hash_pinned_locks(builder: Stage) -> None:
    runs = " ".join(builder.args_of("RUN"))
    installs = [c for c in re.split(r";|&&", runs) if re.search(r"pip( --python \S+)? install", c)]
    assert len(installs) == 3, installs
    locked = [c for c in installs if "-r tools/image/" in c]
    assert {c.split("-r ")[1].split()[0] for c in locked} == {
        "tools/image/build-requirements.lock",
        "tools/image/requirements.lock",
    }
    for command in locked:
        assert "--require-hashes" in command and "--no-deps" in command, command
        assert "--only-binary=:all:" in command, command
    (own,) = [c for c in installs if c not in locked]
    assert "--no-index" in own and "--no-deps" in own and "/dist/sundial-" in own, own
    assert "--no-build-isolation" in runs and "--no-index" in runs.split("pip wheel", 1)[1]


def test_the_builder_checks_the_sandbox_is_not_installed(builder: Stage) -> None:
    assert "! /opt/sundial/bin/python -c 'import sundial.sandbox'" in " ".join(builder.args_of("RUN"))


def test_the_final_stage_copies_only_the_virtualenv(final: Stage) -> None:
    assert final.args_of("COPY") == ["--from=builder /opt/sundial /opt/sundial"]


def test_the_final_stage_installs_no_build_tools_or_pip(final: Stage) -> None:
    for run in final.args_of("RUN"):
        assert "pip" not in run, run
        installs = re.findall(r"apt-get install ([^&;]*)", run)
        for packages in installs:
            assert [p for p in packages.split() if not p.startswith("-")] == ["python3"], run
        for word in shlex.split(run.replace("&&", " ").replace(";", " ")):
            assert word not in BUILD_TOOLS, f"{word!r} in final stage: {run}"


def test_the_final_stage_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    users = final.args_of("USER")
    assert users == ["65532:65532"]


def test_the_entrypoint_is_sundial_run_in_exec_form(final: Stage) -> None:
    (entrypoint,) = final.args_of("ENTRYPOINT")
    argv = json.loads(entrypoint)
    assert argv == ["/opt/sundial/bin/sundial", "run"]


def test_the_final_stage_exposes_the_metrics_health_and_webhook_ports(final: Stage) -> None:
    assert set(" ".join(final.args_of("EXPOSE")).split()) == {"8080", "8081", "9443"}


def test_the_image_is_labelled_with_version_revision_and_creation_time(final: Stage) -> None:
    labels = " ".join(final.args_of("LABEL"))
    for key, arg in (("version", "VERSION"), ("revision", "REVISION"), ("created", "CREATED")):
        assert f'org.opencontainers.image.{key}="${{{arg}}}"' in labels
    assert 'org.opencontainers.image.licenses="Apache-2.0"' in labels


def test_every_runtime_dependency_is_pinned_to_an_exact_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    unpinned = [dep for dep in project["dependencies"] if not re.fullmatch(r"[A-Za-z0-9_.\-\[\],]+==[\w.]+", dep)]
    assert not unpinned


# --- .dockerignore ---------------------------------------------------------------------------------


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out += pattern[i : end + 1]
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        regex = _pattern_regex(pattern.strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            result = not negate
    return result


@pytest.fixture(scope="module")
def ignore_patterns() -> list[str]:
    text = (ROOT / ".dockerignore").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "tools/image/requirements.lock",
        "operator/sundial/__init__.py",
        "operator/sundial/cli/commands/main.py",
        "operator/sundial/cli/kubectl/main.py",
    ],
)
def test_the_build_context_keeps_what_the_build_copies(ignore_patterns: list[str], path: str) -> None:
    assert not ignored(path, ignore_patterns)


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        ".sundial/sandbox/kubeconfig",
        "tests/unit/packaging/test_dockerfile.py",
        "charts/sundial/Chart.yaml",
        "tools/sandbox/sundial_sandbox/__init__.py",
        "operator/sundial/__pycache__/x.cpython-312.pyc",
        "operator/sundial.egg-info/PKG-INFO",
        ".mypy_cache/x",
        "tools/sandbox/sundial_sandbox/cluster.py",
        "operator/sundial/cli/commands/sandbox.py",
        "operator/sundial/cli/commands/dev.py",
        "tools/sandbox/sundial_sandbox/__init__.py",
        "dist/sundial-0.1.0.oci.tar",
    ],
)
def test_the_build_context_leaves_out_everything_else(ignore_patterns: list[str], path: str) -> None:
    assert ignored(path, ignore_patterns)


def _context_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_context", ROOT / "tools" / "image" / "context.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _repository_files() -> list[str]:
    skip = {".git", ".venv", ".sundial", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist"}
    found = []
    for directory, subdirectories, names in os.walk(ROOT):
        subdirectories[:] = [d for d in subdirectories if d not in skip]
        relative = Path(directory).relative_to(ROOT).as_posix()
        found += [n if relative == "." else f"{relative}/{n}" for n in names]
    return found


def test_make_image_stages_exactly_the_docker_build_context(ignore_patterns: list[str]) -> None:
    docker = sorted(path for path in _repository_files() if not ignored(path, ignore_patterns))
    assert _context_module().files(ROOT) == docker
