"""The planning loop's watchdog (DESIGN §12.2): its lag is read from any thread, grows while the loop does not
turn, and is exported when scraped."""

from __future__ import annotations

import asyncio

from sundial.runtime.serving import watchdog
from sundial.runtime.serving.metrics import Metrics


def test_the_lag_grows_while_no_beat_comes_and_a_beat_resets_it() -> None:
    now = [50.0]
    metrics = Metrics()
    dog = watchdog.LoopWatchdog(metrics=metrics.guards, clock=lambda: now[0])
    assert dog.lag() == 0.0
    now[0] += watchdog.BEAT  # on time
    assert dog.lag() == 0.0
    now[0] += 7.0  # the loop is wedged: nothing beats, the lag is seen from outside
    assert dog.lag() == 7.0
    assert metrics.registry.get_sample_value("sundial_loop_lag_seconds") == 7.0
    dog.beat()
    assert dog.lag() == 0.0
    assert metrics.registry.get_sample_value("sundial_loop_lateness_seconds_bucket", {"le": "10.0"}) == 1
    assert metrics.registry.get_sample_value("sundial_loop_lateness_seconds_bucket", {"le": "5.0"}) == 0


async def test_run_beats_on_its_loop_until_stopped() -> None:
    metrics = Metrics()
    dog = watchdog.LoopWatchdog(metrics=metrics.guards)
    stopping = asyncio.Event()
    task = asyncio.create_task(dog.run(stopping))

    def beats() -> float:
        return metrics.registry.get_sample_value("sundial_loop_lateness_seconds_count") or 0.0

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while beats() < 2 and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert beats() >= 2
    stopping.set()
    await asyncio.wait_for(task, timeout=2)
    assert task.done()
