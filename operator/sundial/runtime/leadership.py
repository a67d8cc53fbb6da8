"""One Lease elector per shard; "may this replica act on shard i right now?" (DESIGN §7)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from sundial.kube import leases

logger = logging.getLogger(__name__)


class NotActingError(Exception):
    """This replica does not (or no longer) hold the shard's Lease within its renew deadline."""


class Leadership:
    """Runs the shard electors. For now every replica tries to hold every shard (rebalancing is later)."""

    def __init__(
        self,
        electors: Sequence[leases.LeaseElector],
        *,
        on_change: Callable[[int, bool], None] = lambda shard, held: None,
    ) -> None:
        self._electors = list(electors)
        self._on_change = on_change

    @property
    def shards(self) -> int:
        return len(self._electors)

    def acting(self, shard: int) -> bool:
        """True while this replica holds the shard's Lease and renewed it within the renew deadline."""
        return self._electors[shard].holding

    def check(self, shard: int) -> None:
        """Raise :class:`NotActingError` unless :meth:`acting`; call right before every write."""
        if not self.acting(shard):
            raise NotActingError(f"not holding shard {shard}")

    def fencing_token(self, shard: int) -> str:
        """``<shard>-<leaseTransitions>``: stamped on every Job so stale holders can be rejected."""
        return f"{shard}-{self._electors[shard].transitions}"

    def held(self) -> int:
        return sum(1 for elector in self._electors if elector.holding)

    async def run(self, stopping: asyncio.Event) -> None:
        async def keep(shard: int, elector: leases.LeaseElector) -> None:
            def changed(held: bool) -> None:
                logger.info("shard %d lease %s", shard, "held" if held else "lost")
                self._on_change(shard, held)

            await elector.run(stopping, changed)

        await asyncio.gather(*(keep(i, e) for i, e in enumerate(self._electors)))

    async def release(self) -> None:
        """Graceful shutdown: give every held Lease up so a standby takes over at once."""
        await asyncio.gather(*(e.release() for e in self._electors), return_exceptions=True)
