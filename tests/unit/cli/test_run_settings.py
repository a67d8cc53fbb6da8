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


def test_event_flags_default_to_their_own_budget_and_a_one_minute_series() -> None:
    settings = run_cmd.settings_from(_args(), environ={})
    assert (settings.event_qps, settings.event_burst, settings.event_series_interval) == (10.0, 50, 300.0)
    settings = run_cmd.settings_from(
        _args("--event-qps", "2.5", "--event-burst", "5", "--event-series-interval", "30"), environ={}
    )
    assert (settings.event_qps, settings.event_burst, settings.event_series_interval) == (2.5, 5, 30.0)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--event-qps", "0"), "--event-qps"),
        (("--event-burst", "0"), "--event-burst"),
        (("--event-series-interval", "-1"), "--event-series-interval"),
    ],
)
def test_bad_event_flags_are_refused_naming_the_flag(argv: tuple[str, str], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        run_cmd.settings_from(_args(*argv), environ={})
