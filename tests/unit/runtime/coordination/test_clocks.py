"""The clock check (DESIGN §12.2): the offset from the API server's Date header, skewed only for certain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sundial.runtime.coordination import clocks
from sundial.runtime.coordination.guards import Guards
from sundial.runtime.serving.metrics import Metrics, WithdrawReason
from sundial.runtime.settings import GuardSettings

SERVER = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


def test_an_hour_ahead_is_skewed_and_the_servers_time_is_estimated() -> None:
    mine = [SERVER + seconds(3600.4)]
    clock = clocks.ServerClock(max_skew=5.0, wallclock=lambda: mine[0])
    assert clock.offset is None and not clock.skewed() and clock.now() == mine[0]
    clock.observe(sent=mine[0] - seconds(0.1), received=mine[0] + seconds(0.1), date=SERVER)
    assert clock.skewed()
    assert clock.offset == pytest.approx(3599.9)  # the middle of [3600.3 - 1 s, 3600.5]
    assert abs((clock.now() - SERVER).total_seconds()) < 1.0


@pytest.mark.parametrize(
    ("ahead", "round_trip", "skewed"),
    [
        pytest.param(0.3, 0.05, False, id="in_sync"),
        pytest.param(-7.0, 0.05, True, id="seven_seconds_behind"),
        pytest.param(7.0, 0.05, True, id="seven_seconds_ahead"),
        pytest.param(4.0, 6.0, False, id="a_slow_answer_never_condemns"),
    ],
)
def test_skewed_only_when_the_whole_interval_is_beyond_the_bound(ahead: float, round_trip: float, skewed: bool) -> None:
    clock = clocks.ServerClock(max_skew=5.0)
    sent = SERVER + seconds(ahead)
    clock.observe(sent=sent, received=sent + seconds(round_trip), date=SERVER)
    assert clock.skewed() is skewed


def test_the_offset_gauge_follows_and_agreement_clears_the_skew() -> None:
    metrics = Metrics()
    clock = clocks.ServerClock(max_skew=5.0, metrics=metrics.guards)
    clock.observe(sent=SERVER + seconds(60), received=SERVER + seconds(60.1), date=SERVER)
    assert clock.skewed()
    assert metrics.registry.get_sample_value("sundial_clock_offset_seconds") == pytest.approx(59.55)
    clock.observe(sent=SERVER, received=SERVER + seconds(0.1), date=SERVER)
    assert not clock.skewed()


def test_shifted_moves_the_clock_and_zero_keeps_it() -> None:
    base = lambda: SERVER  # noqa: E731
    assert clocks.shifted(0, base) is base
    assert clocks.shifted(3600, base)() == SERVER + seconds(3600)


def test_guards_withdraw_past_the_second_bound_and_rejoin_under_the_first() -> None:
    lag = [0.0]
    metrics = Metrics()
    guards = Guards(
        settings=GuardSettings(unready_lag=2.0, withdraw_lag=4.0), lag=lambda: lag[0], metrics=metrics.guards
    )
    assert guards.reason() is None
    lag[0] = 3.0  # unready, not withdrawn
    assert guards.reason() is None
    lag[0] = 4.5
    assert guards.reason() is WithdrawReason.LOOP_LAG
    assert metrics.registry.get_sample_value("sundial_withdrawn", {"reason": "loop_lag"}) == 1
    lag[0] = 3.0  # between the bounds: stays withdrawn (no flapping)
    assert guards.reason() is WithdrawReason.LOOP_LAG
    lag[0] = 1.0
    assert guards.reason() is None
    assert metrics.registry.get_sample_value("sundial_withdrawn", {"reason": "loop_lag"}) == 0


def test_guards_withdraw_while_the_clock_is_unmeasured_or_skewed() -> None:
    clock = clocks.ServerClock(max_skew=5.0)
    guards = Guards(settings=GuardSettings(), lag=lambda: 0.0, clock=clock)
    assert guards.reason() is WithdrawReason.CLOCK_SKEW  # never compared: must not plan with it yet
    clock.observe(sent=SERVER, received=SERVER, date=SERVER)
    assert guards.reason() is None
    clock.observe(sent=SERVER + seconds(3600), received=SERVER + seconds(3600), date=SERVER)
    assert guards.reason() is WithdrawReason.CLOCK_SKEW
