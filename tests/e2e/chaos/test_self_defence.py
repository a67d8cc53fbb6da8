"""The operator defends itself (DESIGN §12.2, issue 30): real replicas (processes) on the sandbox control plane.

* A wedged planning loop (the test-only ``SUNDIAL_TEST_BLOCK_LOOP`` hook: SIGUSR1 sleeps on the loop) fails
  readiness, then withdraws: its shard goes to the standby within the lease duration + 2 s, and the auditor
  finds no run doubled or lost.
* Fencing is probed periodically: deleting the fencing policy's binding sets ``sundial_fencing_enforced`` to 0
  (and the alert's expression is true on the scrape) within the probe period; restoring it sets 1 again.
* And after a change is seen: with a probe period of 10 minutes, the binding deleted and restored moves the
  gauge within seconds (the replica follows the policy and its binding with the chart's reader role).
* A replica whose clock is an hour ahead (``SUNDIAL_TEST_CLOCK_OFFSET``) never holds a shard and creates
  nothing; the other replica keeps the schedule (the auditor's proof).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from tests.unit.packaging import test_alert_rules as rules
from tests.unit.packaging.test_fencing_alert import RECORDING, STATES, fencing_alert_tests

from sundial.model import names

from .fleet import LEASE_DURATION
from .harness import Harness, utcnow

pytestmark = [pytest.mark.e2e, pytest.mark.chaos, pytest.mark.timeout(300)]

EVERY_2S = "*/2 * * * * *"
WATCHDOG_ARGS = ("--watchdog-unready-lag", "1", "--watchdog-withdraw-lag", "2")
BLOCKED_FOR = 12.0
PROBE_PERIOD = 3.0
LONG_PROBE_PERIOD = 600.0
#: How long a seen change may take to move the gauge: the probe rounds 1.5 s and 5 s after it
#: (sundial.runtime.coordination.provers.CHANGE_PROBE_DELAYS), the watch's and a loaded API server's delays.
SEEN_WITHIN = 20.0


def _sample(text: str, series: str) -> float | None:
    match = re.search(rf"^{re.escape(series)}\s+([0-9.e+-]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def test_a_wedged_loop_loses_its_shard_to_the_standby_within_the_lease_plus_two_seconds(harness: Harness) -> None:
    h = harness
    hook = {"SUNDIAL_TEST_BLOCK_LOOP": str(BLOCKED_FOR)}  # armed in both: the holder is the one wedged
    fleet = h.fleet(2, env={"replica-a": hook, "replica-b": hook}, extra_args=WATCHDOG_ARGS)
    first, second = fleet.replicas["replica-a"], fleet.replicas["replica-b"]
    first.start()  # alone, so it is the one acting
    assert fleet.wait_for_holder(timeout=60).identity == "replica-a"
    h.create_scheduled_jobs(6, EVERY_2S)
    h.wait(lambda: len(h.watch.snapshot()) >= 6, 60, "runs under the first holder")
    second.start()
    h.wait(lambda: second.probe("/readyz") == 200, 60, "the second replica is ready")
    h.wait(lambda: _sample(second.metrics(), "sundial_shard_members") == 2.0, 30, "the second replica is a member")

    # Two members rebalance the shard to whichever the assignment names: wedge its holder, whichever it is,
    # once the assignment has settled (the replica it names holds the Lease).
    def settled() -> Any:
        holder = fleet.holder()
        if holder is None or _sample(holder.metrics(), "sundial_leases_held") != 1.0:
            return None
        other = second if holder is first else first
        return holder if _sample(other.metrics(), "sundial_shards_assigned") == 0.0 else None

    wedged = h.wait(settled, LEASE_DURATION + 20, "the shard assignment settled")
    standby = second if wedged is first else first
    runs_before = len(h.watch.snapshot())
    h.wait(lambda: len(h.watch.snapshot()) > runs_before, 30, "runs under the settled holder")
    assert fleet.holder() is wedged

    wedged.signal(signal.SIGUSR1)  # the loop sleeps BLOCKED_FOR seconds; the probe and lease threads run on
    h.faults["wedged loop"] += 1
    blocked_at = time.monotonic()
    h.wait(lambda: wedged.probe("/readyz") == 503, 5, "readiness fails past the first bound", interval=0.1)
    assert wedged.probe("/healthz") == 200  # not restarted: it withdraws and recovers
    holder = fleet.wait_for_holder(timeout=LEASE_DURATION + 10, other_than=wedged.identity)
    took = time.monotonic() - blocked_at
    assert holder is standby
    assert took <= LEASE_DURATION + 2, f"the standby took the shard {took:.1f}s after the loop was blocked"

    h.wait(lambda: wedged.probe("/readyz") == 200, BLOCKED_FOR + 30, "the wedged replica recovers")
    text = wedged.metrics()
    assert _sample(text, 'sundial_withdrawals_total{reason="loop_lag"}') == 1.0
    assert (_sample(text, 'sundial_loop_lateness_seconds_bucket{le="10.0"}') or 0) < (
        _sample(text, 'sundial_loop_lateness_seconds_bucket{le="+Inf"}') or 0
    ), "the blocked beat was recorded"
    h.wait(lambda: _sample(wedged.metrics(), "sundial_shard_members") == 2.0, 30, "it joins the member set again")
    runs_rejoined = len(h.watch.snapshot())
    h.wait(lambda: len(h.watch.snapshot()) >= runs_rejoined + 6, 30, "runs under the rebalanced replicas")
    h.finish("wedged loop")


def _binding(h: Harness, fencing: Any) -> dict[str, Any]:
    return next(
        doc for doc in fencing.policy
        if doc["kind"] == "ValidatingAdmissionPolicyBinding" and doc["metadata"]["name"] == fencing.policy_name
    )  # fmt: skip


def _enforced_rows(text: str) -> list[dict[str, Any]]:
    return [
        {"name": "sundial_fencing_enforced", "labels": {"shard": shard}, "value": float(value)}
        for shard, value in re.findall(r'^sundial_fencing_enforced\{shard="(\d+)"\}\s+([0-9.e+-]+)$', text, re.M)
    ]


def _alert_fires(rows: list[dict[str, Any]], tmp: Any) -> bool | None:
    """Does SundialFencingNotEnforced (the kustomize rule) fire on ROWS held for minutes? None: no promtool."""
    promtool = rules.find_promtool()
    if promtool is None:
        return None
    groups = rules.prometheus_rule_groups(rules.CONFIG / "prometheus_rule.yaml")
    try:
        rules._run_replay(promtool, tmp, groups, fencing_alert_tests(groups, rows, fires=True, name="live"))
    except AssertionError:
        return False
    return True


def test_deleting_the_fencing_binding_is_seen_within_the_probe_period_and_restoring_it_too(
    harness: Harness, tmp_path: Any
) -> None:
    h = harness
    fencing = h.server_fencing()
    fleet = h.fleet(1, fencing=fencing, extra_args=("--fencing-probe-period", str(PROBE_PERIOD)))
    fleet.start()
    [replica] = fleet.replicas.values()
    gauge = 'sundial_fencing_enforced{shard="0"}'
    h.wait(lambda: _sample(replica.metrics(), gauge) == 1.0, 60, "fencing enforced at the acquire")
    recorded = {"enforced": _enforced_rows(replica.metrics())}
    binding = _binding(h, fencing)

    h.cluster.kubectl("delete", "validatingadmissionpolicybinding", binding["metadata"]["name"])
    deleted_at = time.monotonic()
    h.wait(lambda: _sample(replica.metrics(), gauge) == 0.0, PROBE_PERIOD + 5, "the gauge says 0", interval=0.2)
    took = time.monotonic() - deleted_at
    assert took <= PROBE_PERIOD + 2, f"seen {took:.1f}s after the delete (probe period {PROBE_PERIOD}s)"
    recorded["not-enforced"] = rows = _enforced_rows(replica.metrics())
    fires = _alert_fires(rows, tmp_path)
    assert fires in (True, None), "SundialFencingNotEnforced's expression is false on the live scrape"
    events = h.cluster.get_json("events", "-n", "default", "--field-selector", "reason=FencingNotEnforced") or {}
    assert any(e["involvedObject"]["name"] == f"{h.lease_prefix}-shard-0" for e in events.get("items") or [])

    h.cluster.kubectl("apply", "-f", "-", input=json.dumps(binding))
    h.wait(lambda: _sample(replica.metrics(), gauge) == 1.0, PROBE_PERIOD + 10, "restored: the gauge says 1")
    recorded["restored"] = _enforced_rows(replica.metrics())
    if os.environ.get("SUNDIAL_RECORD_SERIES") == "1":
        about = (
            "Recorded by tests/e2e/chaos/test_self_defence.py (SUNDIAL_RECORD_SERIES=1): a replica's "
            "sundial_fencing_enforced samples with the fencing binding in place, deleted and restored."
        )
        states = {state: recorded[state] for state in STATES}
        RECORDING.write_text(json.dumps({"about": about, "states": states}, indent=1) + "\n")


def test_a_change_of_the_fencing_binding_is_probed_within_seconds_not_at_the_next_probe_period(
    harness: Harness,
) -> None:
    """The probe period is 10 minutes, so only the change seen by the replica's informers explains the gauge
    moving within seconds: to 0 when the binding is deleted, back to 1 when it is restored."""
    h = harness
    fencing = h.server_fencing()
    fleet = h.fleet(1, fencing=fencing, extra_args=("--fencing-probe-period", str(LONG_PROBE_PERIOD)))
    fleet.start()
    [replica] = fleet.replicas.values()
    gauge = 'sundial_fencing_enforced{shard="0"}'
    h.wait(lambda: _sample(replica.metrics(), gauge) == 1.0, 60, "fencing enforced at the acquire")
    failures = 'sundial_informer_failures_total{kind="validatingadmissionpolicybindings"'
    binding = _binding(h, fencing)

    h.cluster.kubectl("delete", "validatingadmissionpolicybinding", binding["metadata"]["name"])
    h.wait(lambda: _sample(replica.metrics(), gauge) == 0.0, SEEN_WITHIN, "the deleted binding seen: 0", interval=0.2)
    h.cluster.kubectl("apply", "-f", "-", input=json.dumps(binding))
    h.wait(lambda: _sample(replica.metrics(), gauge) == 1.0, SEEN_WITHIN, "the restored binding seen: 1", interval=0.2)
    assert failures not in replica.metrics()  # listed and watched under the chart's reader role: no 403


def test_a_replica_an_hour_ahead_creates_nothing_and_the_other_keeps_the_schedule(harness: Harness) -> None:
    h = harness
    fleet = h.fleet(2, env={"replica-a": {"SUNDIAL_TEST_CLOCK_OFFSET": "3600"}})
    ahead, right = fleet.replicas["replica-a"], fleet.replicas["replica-b"]
    ahead.start()  # alone first: nothing else could take the shard, yet it must not
    h.create_scheduled_jobs(4, EVERY_2S)
    h.wait(
        lambda: _sample(ahead.metrics(), 'sundial_withdrawn{reason="clock_skew"}') == 1.0,
        60,
        "the replica an hour ahead says why it holds nothing",
    )
    offset = _sample(ahead.metrics(), "sundial_clock_offset_seconds") or 0.0
    assert 3590 <= offset <= 3610, offset
    time.sleep(4)  # schedule time passing with only the skewed replica (not a condition)
    assert fleet.holder() is None and h.watch.snapshot() == [], "the skewed replica acted"

    started = utcnow()
    right.start()
    assert fleet.wait_for_holder(timeout=60).identity == "replica-b"
    h.settle(started + timedelta(seconds=10))
    jobs = h.cluster.get_json("jobs", "-n", h.namespace) or {}
    items = jobs.get("items") or []
    assert items, "the replica with the right clock ran nothing"
    for job in items:
        nominal = datetime.fromisoformat(job["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION])
        created = datetime.fromisoformat(job["metadata"]["creationTimestamp"])  # whole seconds: truncated
        assert nominal < created + timedelta(seconds=1), (nominal, created)  # nothing early
    assert fleet.holder() is right
    assert _sample(ahead.metrics(), "sundial_leases_held") == 0.0
    h.finish("clock an hour ahead")
