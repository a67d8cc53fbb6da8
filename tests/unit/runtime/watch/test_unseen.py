"""The Jobs a replica created and its watch has not delivered yet: awaited until seen, at most WAIT each."""

from __future__ import annotations

from sundial.runtime.watch.unseen import Unseen


def test_a_created_job_is_awaited_until_the_watch_delivers_it() -> None:
    now = [100.0]
    unseen = Unseen(wait=5.0, clock=lambda: now[0])
    assert unseen.waiting() == 0
    unseen.created("ns", "a")
    now[0] += 1
    unseen.created("ns", "b")
    assert unseen.waiting() == 4.0, "until the oldest one's wait is over"
    unseen.seen("ns", "a")
    assert unseen.waiting() == 5.0
    unseen.seen("ns", "b")
    assert unseen.waiting() == 0 and len(unseen) == 0


def test_a_job_the_watch_never_delivers_is_awaited_no_longer_than_wait() -> None:
    now = [0.0]
    unseen = Unseen(wait=5.0, clock=lambda: now[0])
    unseen.created("ns", "lost")
    now[0] = 5.0
    assert unseen.waiting() == 0
    assert len(unseen) == 0, "dropped: what is kept stays bounded"
