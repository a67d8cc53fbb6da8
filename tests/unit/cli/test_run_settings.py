"""``sundial run`` settings: every flag lands in its group; the test-only crash hook is read once from the
environment, off by default."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from sundial.cli.commands import run as run_cmd
from sundial.runtime import settings as groups
from sundial.runtime.settings import Settings


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    return parser.parse_args(["run", "--identity", "me", *argv])


def test_crash_hooks_are_off_without_the_variables() -> None:
    settings = run_cmd.settings_from(_args(), environ={})
    assert (settings.test_crash_after_claim, settings.test_crash_after_create) == (0, 0)


def test_crash_hooks_read_the_variables() -> None:
    environ = {"SUNDIAL_TEST_CRASH_AFTER_CLAIM": "3", "SUNDIAL_TEST_CRASH_AFTER_CREATE": "2"}
    settings = run_cmd.settings_from(_args(), environ=environ)
    assert (settings.test_crash_after_claim, settings.test_crash_after_create) == (3, 2)


@pytest.mark.parametrize("variable", ["SUNDIAL_TEST_CRASH_AFTER_CLAIM", "SUNDIAL_TEST_CRASH_AFTER_CREATE"])
@pytest.mark.parametrize("value", ["x", "-1"])
def test_crash_hooks_reject_bad_values(variable: str, value: str) -> None:
    with pytest.raises(ValueError, match=variable):
        run_cmd.settings_from(_args(), environ={variable: value})


def test_event_flags_default_to_their_own_budget_and_a_one_minute_series() -> None:
    settings = run_cmd.settings_from(_args(), environ={})
    assert (settings.events.qps, settings.events.burst, settings.events.series_interval) == (10.0, 50, 300.0)
    settings = run_cmd.settings_from(
        _args("--event-qps", "2.5", "--event-burst", "5", "--event-series-interval", "30"), environ={}
    )
    assert (settings.events.qps, settings.events.burst, settings.events.series_interval) == (2.5, 5, 30.0)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--event-qps", "0"), "--event-qps"),
        (("--event-burst", "0"), "--event-burst"),
        (("--event-series-interval", "-1"), "--event-series-interval"),
    ],
)
def test_bad_event_flags_are_refused_naming_the_flag(argv: tuple[str, str], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        run_cmd.settings_from(_args(*argv), environ={})


def test_every_flag_lands_in_its_group(tmp_path: Path) -> None:
    argv = [
        *("--namespace", "a", "--namespace", "b"),
        *("--lease-namespace", "ops", "--lease-name-prefix", "sd", "--shards", "3"),
        *("--lease-duration", "9", "--renew-deadline", "6", "--retry-period", "1"),
        *("--qps", "20", "--burst", "30", "--kubeconfig", str(tmp_path / "kc")),
        *("--event-qps", "4", "--event-burst", "8", "--event-series-interval", "60"),
        *("--max-concurrency", "2", "--metrics-port", "9090", "--health-port", "9091"),
        *("--backlog-qps", "0.5", "--backlog-burst", "3"),
        *("--webhook-port", "9443", "--webhook-addr", "127.0.0.1", "--webhook-host", "h.svc"),
        *("--webhook-cert-file", str(tmp_path / "c"), "--webhook-key-file", str(tmp_path / "k")),
        *("--webhook-ca-dump", str(tmp_path / "ca")),
        *("--log-format", "json", "--log-level", "DEBUG"),
    ]
    assert run_cmd.settings_from(_args(*argv), environ={}) == Settings(
        identity="me",
        namespaces=("a", "b"),
        api=groups.ApiSettings(qps=20, burst=30, kubeconfig=tmp_path / "kc"),
        leases=groups.LeaseSettings(
            namespace="ops", name_prefix="sd", duration=9, renew_deadline=6, retry_period=1, shards=3
        ),
        events=groups.EventSettings(qps=4, burst=8, series_interval=60),
        webhook=groups.WebhookSettings(
            port=9443,
            addr="127.0.0.1",
            host="h.svc",
            cert_file=tmp_path / "c",
            key_file=tmp_path / "k",
            ca_dump=tmp_path / "ca",
        ),
        dispatch=groups.DispatchSettings(max_concurrency=2, backlog_qps=0.5, backlog_burst=3),
        probes=groups.ProbeSettings(metrics_port=9090, health_port=9091),
        logging=groups.LoggingSettings(format=groups.LogFormat.JSON, level="DEBUG"),
    )


def test_the_namespace_budget_defaults_to_five_a_second_with_a_burst_of_twenty() -> None:
    dispatch = run_cmd.settings_from(_args(), environ={}).dispatch
    assert (dispatch.backlog_qps, dispatch.backlog_burst) == (5.0, 20)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--backlog-qps", "0"), "--backlog-qps must be a number greater than 0, got 0.0"),
        (("--backlog-qps", "-2"), "--backlog-qps must be a number greater than 0, got -2.0"),
        (("--backlog-qps", "nan"), "--backlog-qps must be a number greater than 0, got nan"),
        (("--backlog-qps", "inf"), "--backlog-qps must be a number greater than 0, got inf"),
        (("--backlog-burst", "0"), "--backlog-burst must be at least 1, got 0"),
    ],
)
def test_bad_namespace_budget_flags_are_refused_naming_the_flag(argv: tuple[str, str], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        run_cmd.settings_from(_args(*argv), environ={})
    assert str(refused.value) == message


def test_the_flag_defaults_are_the_groups_defaults() -> None:
    assert run_cmd.settings_from(_args("--lease-namespace", "default"), environ={}) == Settings(identity="me")


def test_the_tenancy_flags_land_in_their_groups() -> None:
    settings = run_cmd.settings_from(_args("--max-job-template-bytes", "1024", "--metrics-auth"), environ={})
    assert settings.webhook.max_job_template_bytes == 1024
    assert settings.probes.metrics_auth is True
    defaults = run_cmd.settings_from(_args(), environ={})
    assert defaults.webhook.max_job_template_bytes == groups.DEFAULT_MAX_JOB_TEMPLATE_BYTES
    assert defaults.probes.metrics_auth is False


def test_the_metrics_certificate_flags_go_together(tmp_path: Path) -> None:
    both = run_cmd.settings_from(
        _args("--metrics-cert-file", str(tmp_path / "c"), "--metrics-key-file", str(tmp_path / "k")), environ={}
    )
    assert (both.probes.metrics_cert_file, both.probes.metrics_key_file) == (tmp_path / "c", tmp_path / "k")
    with pytest.raises(ValueError, match="--metrics-cert-file and --metrics-key-file go together"):
        run_cmd.settings_from(_args("--metrics-cert-file", str(tmp_path / "c")), environ={})


def test_the_identity_defaults_to_the_pod_name_then_to_host_and_pid() -> None:
    parser = argparse.ArgumentParser()
    run_cmd.register(parser.add_subparsers())
    unnamed = parser.parse_args(["run"])
    assert run_cmd.settings_from(unnamed, environ={"POD_NAME": "sundial-7d9f-abcde"}).identity == "sundial-7d9f-abcde"
    assert run_cmd.settings_from(unnamed, environ={}).identity.endswith(f"-{os.getpid()}")
    assert run_cmd.settings_from(_args(), environ={"POD_NAME": "p"}).identity == "me"


def test_prepared_runs_are_on_unless_turned_off() -> None:
    assert run_cmd.settings_from(_args(), environ={}).dispatch.prepared_runs is True
    assert run_cmd.settings_from(_args("--no-prepared-runs"), environ={}).dispatch.prepared_runs is False
