"""``sundial dev`` and ``sundial sandbox``: registered whether or not the sundial-sandbox tool is installed; without
it they exit with a message naming the missing tool and how to install it, before touching anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sundial.cli.commands import dev, main

COMMANDS = [["dev"], ["sandbox", "start"], ["sandbox", "stop"]]


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``sundial_sandbox`` unimportable, as in an environment that has only the sundial wheel."""
    monkeypatch.setitem(sys.modules, "sundial_sandbox", None)


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_without_the_sandbox_tool_the_command_says_how_to_install_it(
    no_sandbox: None, tmp_path: Path, argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main.main([*argv, "--dir", str(tmp_path / "sandbox")])
    message = str(exit_info.value.code)
    assert message.startswith(f"sundial {' '.join(argv)}: needs the sundial-sandbox development tool")
    assert "pip install -e tools/sandbox" in message
    assert "make venv" in message
    assert list(tmp_path.iterdir()) == []


def test_the_sandbox_commands_are_registered_without_the_tool(no_sandbox: None) -> None:
    parser = main.build_parser()
    args = parser.parse_args(["sandbox", "stop"])
    assert args.sandbox_command == "stop"
    assert parser.parse_args(["dev"]).command == "dev"


def test_with_the_tool_installed_stop_reaches_the_sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["sandbox", "stop", "--dir", str(tmp_path)]) == 0
    assert f"sandbox in {tmp_path} stopped" in capsys.readouterr().err


def test_sandbox_start_takes_real_node_and_passes_it_to_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sundial_sandbox  # noqa: PLC0415 - the tool is installed in the dev environment

    made: list[dict[str, object]] = []

    class Recorder:
        def __init__(self, directory: Path, real_node: bool = False) -> None:
            made.append({"directory": directory, "real_node": real_node})
            self.log_dir = directory / "logs"

        def start(self, timeout: float) -> Path:
            return tmp_path / "kubeconfig"

    monkeypatch.setattr(sundial_sandbox, "Sandbox", Recorder)
    assert main.build_parser().parse_args(["sandbox", "start", "--real-node"]).real_node is True
    assert main.build_parser().parse_args(["sandbox", "start"]).real_node is False
    assert main.main(["sandbox", "start", "--real-node", "--dir", str(tmp_path)]) == 0
    assert made == [{"directory": tmp_path, "real_node": True}]


def test_dev_runs_the_operator_unfenced_against_the_sandbox(tmp_path: Path) -> None:
    """The sandbox has no fencing policy and the operator runs as its admin: with the default policy name every
    probe would log "fencing is NOT enforced" at ERROR on a new user's first ``make dev``."""
    command = dev.operator_command(tmp_path / "kubeconfig", metrics_port=18080, health_port=18081)
    assert command[:3] == [sys.executable, "-m", "sundial"]
    args = main.build_parser().parse_args(command[3:])
    assert args.command == "run"
    assert args.fencing_policy == ""
    assert args.kubeconfig == tmp_path / "kubeconfig"
    assert (args.metrics_port, args.health_port) == (18080, 18081)
