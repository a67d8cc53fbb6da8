"""The token bucket on a fake clock: no sleeps."""

from __future__ import annotations

import pytest

from sundial.kube.ratelimits import TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_serves_a_burst_at_once_then_waits_one_interval_per_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)


def test_refills_at_the_rate_up_to_the_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=2, burst=4, clock=clock)
    for _ in range(4):
        bucket.reserve()
    clock.now += 1.0
    assert bucket.available == pytest.approx(2.0)
    clock.now += 100.0
    assert bucket.available == pytest.approx(4.0)


def test_a_clock_going_backwards_adds_no_tokens() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=1, burst=1, clock=clock)
    bucket.reserve()
    clock.now -= 50
    assert bucket.reserve() == pytest.approx(1.0)


async def test_acquire_sleeps_only_for_the_debt() -> None:
    clock = FakeClock()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    bucket = TokenBucket(rate=5, burst=1, clock=clock, sleep=sleep)
    await bucket.acquire()
    await bucket.acquire()
    assert slept == [pytest.approx(0.2)]


def test_rejects_nonsense_settings() -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=0, burst=1)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, burst=0)
