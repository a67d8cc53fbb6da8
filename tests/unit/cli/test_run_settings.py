"""``sundial run`` settings: the test-only crash hook is read once from the environment, off by default."""

from __future__ import annotations

import argparse

import pytest

from sundial.cli import run_cmd


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    return parser.parse_args(["run", "--identity", "me", *argv])


def test_crash_hook_is_off_without_the_variable() -> None:
    assert run_cmd.settings_from(_args(), environ={}).test_crash_after_claim == 0


def test_crash_hook_reads_the_variable() -> None:
    settings = run_cmd.settings_from(_args(), environ={"SUNDIAL_TEST_CRASH_AFTER_CLAIM": "3"})
    assert settings.test_crash_after_claim == 3


@pytest.mark.parametrize("value", ["x", "-1"])
def test_crash_hook_rejects_bad_values(value: str) -> None:
    with pytest.raises(ValueError, match="SUNDIAL_TEST_CRASH_AFTER_CLAIM"):
        run_cmd.settings_from(_args(), environ={"SUNDIAL_TEST_CRASH_AFTER_CLAIM": value})
