"""Static checks of the image recipe: no Docker engine is available here, so the properties that matter
(multi-stage, slim base, wheels built in the builder, no build tools and a numeric non-root user in the
final stage, pinned dependencies, ``sundial run`` as the entry point, a tight build context) are read
from ``Dockerfile``, ``.dockerignore`` and ``pyproject.toml``."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD_TOOLS = ("build-essential", "gcc", "g++", "make", "cc", "clang", "git", "curl", "wget", "python3-dev")


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
def stages() -> list[Stage]:
    return parse((ROOT / "Dockerfile").read_text())[1]


@pytest.fixture(scope="module")
def final(stages: list[Stage]) -> Stage:
    return stages[-1]


def test_the_parser_joins_continuations_and_drops_comments() -> None:
    text = "ARG B=python:3.12-slim\n# c\nFROM ${B} AS x\nRUN a \\\n    b\n"
    _, parsed = parse(text)
    assert parsed[0].base == "python:3.12-slim"
    assert parsed[0].name == "x"
    assert parsed[0].instructions == [("RUN", "a b")]


def test_the_image_is_built_in_at_least_two_stages(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    assert stages[0].name == "builder"


@pytest.mark.parametrize("index", [0, -1], ids=["builder", "runtime"])
def test_every_stage_starts_from_a_slim_python_3_11_or_3_12_image(stages: list[Stage], index: int) -> None:
    base = stages[index].base
    assert re.fullmatch(r"python:3\.1[12](\.\d+)?-slim(-\w+)?(@sha256:[0-9a-f]{64})?", base), base


def test_the_builder_builds_wheels_from_the_project(stages: list[Stage]) -> None:
    runs = " ".join(stages[0].args_of("RUN"))
    assert re.search(r"pip wheel .*--wheel-dir[ =]/wheels \.", runs), runs
    copies = " ".join(stages[0].args_of("COPY"))
    assert "pyproject.toml" in copies
    assert "operator/" in copies


def test_the_final_stage_installs_only_the_builders_wheels(final: Stage) -> None:
    runs = " ".join(final.args_of("RUN"))
    assert "--no-index" in runs
    assert "from=builder" in runs
    # Wheels are bind-mounted, never copied into a layer of the final image.
    assert not any("/wheels" in copy for copy in final.args_of("COPY"))


def test_the_final_stage_installs_no_build_tools(final: Stage) -> None:
    for run in final.args_of("RUN"):
        assert "apt-get install" not in run and "apk add" not in run, run
        for word in shlex.split(run.replace("&&", " ")):
            assert word not in BUILD_TOOLS, f"{word!r} in final stage: {run}"


def test_the_final_stage_runs_as_a_numeric_non_root_user(final: Stage) -> None:
    users = final.args_of("USER")
    assert users, "the final stage sets no USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0, users[-1]
    assert user == "65532"
    assert not group or (group.isdigit() and int(group) != 0)


def test_the_entrypoint_is_sundial_run_in_exec_form(final: Stage) -> None:
    (entrypoint,) = final.args_of("ENTRYPOINT")
    argv = json.loads(entrypoint)
    assert argv[0].rsplit("/", 1)[-1] == "sundial"
    assert argv[1:] == ["run"]


def test_the_final_stage_exposes_the_metrics_and_health_ports(final: Stage) -> None:
    assert set(" ".join(final.args_of("EXPOSE")).split()) >= {"8080", "8081"}


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
    ["pyproject.toml", "README.md", "operator/sundial/__init__.py", "operator/sundial/cli/main.py"],
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
    ],
)
def test_the_build_context_leaves_out_everything_else(ignore_patterns: list[str], path: str) -> None:
    assert ignored(path, ignore_patterns)


def test_every_copy_source_of_the_dockerfile_exists(stages: list[Stage]) -> None:
    for stage in stages:
        for copy in stage.args_of("COPY"):
            words = [w for w in copy.split() if not w.startswith("--")]
            for source in words[:-1]:
                assert (ROOT / source).exists(), source
