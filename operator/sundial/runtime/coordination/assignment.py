"""Which replica should hold which shard: a pure, deterministic function of the live member set.

Every replica computes the same answer from the same member set (no coordination beyond the member
Leases). The assignment is *balanced* — every member gets ``floor(N/R)`` or ``ceil(N/R)`` shards, so
max - min ≤ 1 — and *stable*: it is rendezvous (highest-random-weight) hashing with a balance cap, so a
join or leave moves few shards (close to the ``N/R`` minimum) instead of reshuffling everything as
``shard i → sorted(members)[i mod R]`` would.

Algorithm: score every (member, shard) pair with ``sha256(member NUL shard)``; walk the pairs from the
highest score down and give a shard to the pair's member unless the shard is taken or the member is full.
A member is full at ``ceil(N/R)`` shards, or at ``floor(N/R)`` once ``N mod R`` members already reached the
ceiling. Total capacity is exactly N, so every shard is assigned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence


def score(member: str, shard: int) -> int:
    """The rendezvous weight of ``member`` for ``shard`` (stable across processes and Python versions)."""
    digest = hashlib.sha256(f"{member}\0{shard}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def assign(members: Iterable[str], shards: int) -> tuple[str, ...]:
    """``result[i]`` is the member that should hold shard ``i``; empty if there is no member."""
    live = sorted(set(members))
    if not live or shards < 1:
        return ()
    base, extra = divmod(shards, len(live))
    pairs = sorted(((score(m, s), s, m) for m in live for s in range(shards)), reverse=True)
    owner: list[str | None] = [None] * shards
    counts = dict.fromkeys(live, 0)
    at_ceiling = 0
    left = shards
    for _, shard, member in pairs:
        if owner[shard] is not None:
            continue
        held = counts[member]
        if held > base or (held == base and at_ceiling >= extra):
            continue  # full
        owner[shard] = member
        counts[member] = held + 1
        if held + 1 == base + 1:
            at_ceiling += 1
        left -= 1
        if left == 0:
            break
    assert all(o is not None for o in owner), "capacity equals the shard count"
    return tuple(o for o in owner if o is not None)


def shards_of(assignment: Sequence[str], member: str) -> frozenset[int]:
    """The shards ``assignment`` gives to ``member``."""
    return frozenset(i for i, owner in enumerate(assignment) if owner == member)


def counts(assignment: Sequence[str]) -> Mapping[str, int]:
    """Shards per member."""
    result: dict[str, int] = {}
    for owner in assignment:
        result[owner] = result.get(owner, 0) + 1
    return result
