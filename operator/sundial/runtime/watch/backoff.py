"""The informers' one retry policy: jittered exponential backoff (the pauses after consecutive failures).

The ``k``-th consecutive failure (from 0) pauses ``min(cap, initial * factor**k)`` seconds, scaled by a random
factor in ``[1 - jitter, 1]`` ("equal jitter": never longer than the cap, never shorter than half the pause by
default), so replicas that lost their watches at the same moment (an API server restart) do not list again in
step. Any progress resets the count (:meth:`Backoff.reset`).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Backoff:
    initial: float = 0.5
    """Seconds after the first failure."""
    factor: float = 2.0
    """Growth per further consecutive failure."""
    cap: float = 30.0
    """The longest pause."""
    jitter: float = 0.5
    """The largest share of a pause taken off at random."""
    rand: Callable[[], float] = field(default=random.random, repr=False)
    """A uniform number in [0, 1) (tests pass a fixed one)."""
    failures: int = 0
    """Consecutive failures so far."""

    def next(self) -> float:
        """The pause after one more failure (and count it)."""
        base = min(self.cap, self.initial * self.factor ** min(self.failures, 64))
        self.failures += 1
        return base * (1.0 - self.jitter * self.rand())

    def reset(self) -> None:
        self.failures = 0
