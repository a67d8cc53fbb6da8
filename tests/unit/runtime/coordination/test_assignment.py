"""The shard assignment: balanced for every R <= N <= 64, deterministic, and stable under a join or leave."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from sundial.runtime.coordination.assignment import assign, counts, shards_of


def moved(before: Sequence[str], after: Sequence[str]) -> int:
    """How many shards change owner between two assignments of the same shard count."""
    return sum(1 for old, new in zip(before, after, strict=True) if old != new)


def _members(count: int) -> list[str]:
    return [f"sundial-7c9d8-{i:02d}" for i in range(count)]


def test_balanced_for_every_member_count_up_to_the_shard_count() -> None:
    for shards in range(1, 65):
        for replicas in range(1, shards + 1):
            result = assign(_members(replicas), shards)
            per_member = counts(result)
            assert len(result) == shards
            assert set(per_member) == set(_members(replicas))  # nobody is left without a shard
            assert max(per_member.values()) - min(per_member.values()) <= 1, (shards, replicas, per_member)


def test_more_members_than_shards_gives_at_most_one_each() -> None:
    result = assign(_members(5), 3)
    assert len(set(result)) == 3 and max(counts(result).values()) == 1


def test_no_member_no_assignment() -> None:
    assert assign([], 12) == ()


def test_every_replica_computes_the_same_assignment_whatever_order_it_saw_the_members_in() -> None:
    members = _members(7)
    expected = assign(members, 40)
    rng = random.Random(8)
    for _ in range(20):
        shuffled = members[:]
        rng.shuffle(shuffled)
        assert assign(shuffled + shuffled[:2], 40) == expected  # duplicates do not matter either


def test_twelve_shards_two_to_three_replicas_moves_about_the_minimum_four() -> None:
    members = _members(3)
    before, after = assign(members[:2], 12), assign(members, 12)
    assert 4 <= moved(before, after) <= 5
    assert shards_of(after, members[2]) <= {i for i in range(12) if before[i] != after[i]}
    assert sorted(counts(after).values()) == [4, 4, 4]


def test_a_leave_moves_the_leavers_shards_and_little_else() -> None:
    members = _members(3)
    before, after = assign(members, 12), assign(members[1:], 12)
    assert moved(before, after) <= counts(before)[members[0]] + 2
    assert sorted(counts(after).values()) == [6, 6]


def test_joins_and_leaves_move_close_to_the_minimum_and_far_less_than_modulo() -> None:
    """Over every R -> R+1 join with R < N <= 64: total moves <= 1.75x the sum of the minimums (the new member's
    share, ceil(N/(R+1)) at most), and under a third of what ``shard i -> members[i mod R]`` moves."""
    total = minimum = modulo = leave_total = leave_minimum = 0
    for shards in range(2, 65):
        for replicas in range(1, shards):
            members = _members(replicas + 1)
            before, after = assign(members[:replicas], shards), assign(members, shards)
            total += moved(before, after)
            minimum += math.ceil(shards / (replicas + 1))
            modulo += sum(1 for i in range(shards) if members[i % replicas] != members[i % (replicas + 1)])
            gone = assign(members[1:], shards)
            leave_total += moved(after, gone)
            leave_minimum += counts(after)[members[0]]
    assert total <= 1.75 * minimum, (total, minimum)
    assert total * 3 < modulo, (total, modulo)
    assert leave_total <= 2 * leave_minimum, (leave_total, leave_minimum)
