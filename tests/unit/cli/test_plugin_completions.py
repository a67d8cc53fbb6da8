"""Shell completion and help text of the kubectl plugin."""

from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from sundial.cli.kubectl import completion, main, runner


def complete(fake: Any, *words: str) -> list[str]:
    found = completion.candidates(list(words), parser=main.build_parser(), kubectl_for=lambda _: fake)
    return [c for c in found if c.startswith(words[-1])]


def test_completes_commands_then_names_then_output_formats(cluster: Any) -> None:
    assert complete(cluster, "") == sorted(
        [
            "get",
            "list",
            "describe",
            "preview",
            "forecast",
            "trigger",
            "redrive",
            "backfill",
            "create",
            "suspend",
            "resume",
            "version",
            "check",
            "completion",
            "runs",
            "import",
            "lint",
        ]
    )
    assert complete(cluster, "de") == ["describe"]
    assert complete(cluster, "describe", "") == ["report"]
    assert complete(cluster, "describe", "report", "") == []
    assert complete(cluster, "get", "-o", "") == ["wide", "json", "yaml", "name"]
    assert complete(cluster, "completion", "") == ["bash", "fish", "zsh"]
    assert complete(cluster, "forecast", "--by", "") == ["second", "minute", "hour"]
    assert complete(cluster, "forecast", "report", "") == ["report"]  # several names, as for get


def test_completes_flags_and_skips_their_values(cluster: Any) -> None:
    flags = complete(cluster, "preview", "--")
    assert "--count" in flags and "--output" in flags and "--context" in flags
    assert complete(cluster, "preview", "--count", "3", "") == ["report"]
    assert complete(cluster, "-n", "team-a", "trigger", "") == ["report"]


def test_completes_create_job_from(cluster: Any) -> None:
    assert complete(cluster, "create", "") == ["job"]
    assert complete(cluster, "create", "job", "x", "--from=") == ["--from=scheduledjob/report"]
    assert complete(cluster, "create", "job", "x", "--from", "") == ["scheduledjob/report"]


def test_namespace_values_come_from_kubectl_with_the_flags_on_the_line() -> None:
    asked: list[tuple[Any, tuple[str, ...]]] = []

    class Namespaces:
        def __init__(self, options: runner.GlobalOptions) -> None:
            self.options = options

        def run(self, *args: str, namespaced: bool = True) -> str:
            asked.append((self.options.get("context"), args))
            return "default team-a"

    words = ["--context", "prod", "get", "-n", "team"]
    found = completion.candidates(words, parser=main.build_parser(), kubectl_for=Namespaces)  # type: ignore[arg-type]
    assert [c for c in found if c.startswith("team")] == ["team-a"]
    assert asked == [("prod", ("get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}"))]


def test_complete_prints_cobra_directive(cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert completion.complete(["tri"], parser=main.build_parser(), kubectl_for=lambda _: cluster) == 0
    assert capsys.readouterr().out == "trigger\n:4\n"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_call_the_engine(shell: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "kubectl-sundial __complete" in script
    assert "kubectl-sundial" in script.splitlines()[-1]


def _parsers() -> list[argparse.ArgumentParser]:
    parser = main.build_parser()
    return [parser, *completion._subcommands(parser).values()]


@pytest.mark.parametrize("parser", _parsers(), ids=lambda p: p.prog)
def test_help_is_plain_text(parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    for markup in ("``", ":mod:", ":func:", ":data:", "DESIGN", "§"):
        assert markup not in text, (parser.prog, markup)
    assert not re.search(r"`[^`\s]+`_", text)
