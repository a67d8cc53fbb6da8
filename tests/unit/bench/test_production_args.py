"""The herd's Sundial runs with the chart's flags (issue 31): read from charts/sundial/values.yaml, accepted by
``sundial run``'s own parser, the fencing policy named when the chart enables it."""

from __future__ import annotations

import argparse
import copy

import yaml
from bench import production

from sundial.cli.commands import run as run_cmd


def settings(argv: list[str]):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    return run_cmd.settings_from(parser.parse_args(["run", "--identity", "herd", *argv]), environ={})


def test_the_chart_defaults_become_the_operators_settings_with_the_benchs_client_budget() -> None:
    values = production.chart_values()
    got = settings(production.chart_args(values, qps=500, burst=1000, concurrency=64))
    assert got.leases.fencing_policy == production.POLICY
    assert got.leases.namespace == production.NAMESPACE
    assert got.leases.name_prefix == production.LEASE_PREFIX
    assert got.leases.shards == values["shards"]
    assert (got.leases.duration, got.leases.renew_deadline, got.leases.retry_period) == (
        values["leaderElection"]["leaseDuration"],
        values["leaderElection"]["renewDeadline"],
        values["leaderElection"]["retryPeriod"],
    )
    assert (got.events.qps, got.events.burst, got.events.series_interval) == (
        values["events"]["qps"], values["events"]["burst"], values["events"]["seriesInterval"],
    )  # fmt: skip
    assert (got.dispatch.backlog_qps, got.dispatch.backlog_burst) == (
        values["backlog"]["qps"], values["backlog"]["burst"],
    )  # fmt: skip
    assert got.logging.level == values["logLevel"]
    assert (got.api.qps, got.api.burst, got.dispatch.max_concurrency) == (500, 1000, 64)


def test_without_the_charts_fencing_policy_none_is_named() -> None:
    values = copy.deepcopy(production.chart_values())
    values["fencing"]["policy"]["enabled"] = False
    assert settings(production.chart_args(values, qps=50, burst=100, concurrency=16)).leases.fencing_policy == ""


def test_the_installed_policy_is_the_one_the_operator_is_told_to_probe() -> None:
    docs = [d for d in yaml.safe_load_all(production.FENCING.read_text(encoding="utf-8")) if d]
    policies = {d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
    assert production.POLICY in policies
    users = {c["expression"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"
             for c in d["spec"].get("matchConditions", [])}  # fmt: skip
    assert any(f"system:serviceaccount:{production.NAMESPACE}:{production.SERVICE_ACCOUNT}" in u for u in users)
