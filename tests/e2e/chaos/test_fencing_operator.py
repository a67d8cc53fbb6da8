"""The operator under the chart's fencing policies (docs/fencing.md, issue 21 item 4): its history deletes are
never refused because of a label a ``--shards`` change left behind, nobody else may rewrite that label, and
every acquire proves that the policy is enforced (``sundial_fencing_enforced 1``).

Two replicas run as the operator's ServiceAccount with pod-bound tokens (:mod:`.fencing`). First one replica
with ``--shards 1`` makes history (every Job labelled ``sundial.dev/shard: "0"``); it stops, a relabel by
anyone else (here the admin) is refused, and two replicas start with ``--shards 3``: most objects now belong to
shards 1 and 2, whose Leases are held by either replica, while their old Jobs still say shard 0. Formerly each
such delete was refused, the shard given up and re-acquired, and the same delete sent again (a livelock); now
the holder relabels each under its token and deletes it, and no delete is refused."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from sundial.model import names

from .fleet import LEASE_ARGS, Replica
from .harness import Harness

pytestmark = [pytest.mark.e2e, pytest.mark.chaos, pytest.mark.timeout(300)]

EVERY_2S = "*/2 * * * * *"
OBJECTS = 6


def _values(replica: Replica, series: str) -> list[float]:
    """Every sample of SERIES (a name with its label set, e.g. ``x{kind="a"}``) on REPLICA."""
    pattern = re.compile(rf"^{re.escape(series)}\s+([0-9.e+-]+)$", re.MULTILINE)
    return [float(value) for value in pattern.findall(replica.metrics())]


def _sample(replica: Replica, series: str) -> float:
    return sum(_values(replica, series))


def _jobs(h: Harness) -> list[dict[str, Any]]:
    listing = h.cluster.get_json("jobs", "-n", h.namespace) or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def _wait(predicate: Any, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s: {message}")
        time.sleep(0.5)


def test_history_deletes_pass_after_a_shards_change_and_nobody_else_relabels(harness: Harness) -> None:
    h = harness
    fencing = h.server_fencing()
    before = h.fleet(1, fencing=fencing, lease_args=(*LEASE_ARGS, "--shards", "1"))
    before.start()
    h.create_scheduled_jobs(OBJECTS, EVERY_2S, successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1)
    _wait(lambda: len({j["metadata"]["labels"][names.SCHEDULED_JOB_LABEL] for j in _jobs(h)}) == OBJECTS, 90,
          "every object has a Job")  # fmt: skip
    [replica] = before.replicas.values()
    _wait(lambda: _sample(replica, 'sundial_fencing_enforced{shard="0"}') == 1.0, 30, "fencing enforced on shard 0")
    before.stop()

    old = {j["metadata"]["name"]: j for j in _jobs(h)}
    assert old and all(j["metadata"]["labels"][names.SHARD_LABEL] == "0" for j in old.values())
    relabel = h.cluster.kubectl("label", "job", sorted(old)[0], "-n", h.namespace, "--overwrite",
                                f"{names.SHARD_LABEL}=2", check=False)  # fmt: skip
    assert relabel.returncode != 0 and f"'{fencing.label_policy_name}'" in relabel.stderr, relabel.stderr

    after = h.fleet(2, fencing=fencing, lease_args=(*LEASE_ARGS, "--shards", "3"))
    after.start()
    _wait(lambda: not (set(old) & {j["metadata"]["name"] for j in _jobs(h)}), 120,
          f"every Job of the --shards 1 era deleted by its history limit ({sorted(old)})")  # fmt: skip
    replicas = list(after.replicas.values())
    refused = sum(_sample(r, 'sundial_fenced_writes_total{kind="job_delete"}') for r in replicas)
    unconfirmed = sum(_sample(r, "sundial_fenced_unconfirmed_total") for r in replicas)
    assert (refused, unconfirmed) == (0, 0), "a history delete was refused"
    for shard in range(3):  # each shard's holder proved it at its acquire (a shard handed over: by both)
        proofs = [v for r in replicas for v in _values(r, f'sundial_fencing_enforced{{shard="{shard}"}}')]
        assert 1.0 in proofs and 0.0 not in proofs, (shard, proofs)
    after.stop()
