"""``sundial run``: the operator (see :mod:`sundial.runtime`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from sundial.runtime import process
from sundial.runtime import settings as groups
from sundial.runtime.serving import certificates, certrotators, logs
from sundial.runtime.settings import LogFormat, Settings

_API, _LEASES, _EVENTS = groups.ApiSettings(), groups.LeaseSettings(), groups.EventSettings()
_WEBHOOK, _DISPATCH = groups.WebhookSettings(), groups.DispatchSettings()
_PROBES, _LOGGING = groups.ProbeSettings(), groups.LoggingSettings()
_GUARDS = groups.GuardSettings()


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run", help="run the operator", description="Run the Sundial operator (ScheduledJobs → Jobs)."
    )
    add = parser.add_argument
    add(
        "--namespace",
        dest="namespaces",
        action="append",
        default=[],
        metavar="NS",
        help="namespace to watch (repeatable); default: all namespaces",
    )
    add(
        "--lease-namespace",
        default=None,
        help="namespace of the shard Leases (default: the in-cluster namespace, else 'default')",
    )
    add("--lease-name-prefix", default=_LEASES.name_prefix, help="Leases are <prefix>-shard-<i>")
    add("--lease-duration", type=float, default=_LEASES.duration, metavar="SECONDS")
    add("--renew-deadline", type=float, default=_LEASES.renew_deadline, metavar="SECONDS")
    add("--retry-period", type=float, default=_LEASES.retry_period, metavar="SECONDS")
    add("--shards", type=int, default=_LEASES.shards, help="one Lease per shard; objects map by UID hash")
    add(
        "--fencing-policy",
        default=_LEASES.fencing_policy,
        metavar="NAME",
        help="the server-side fencing ValidatingAdmissionPolicy (and binding) name; '' if none is installed",
    )
    add("--qps", type=float, default=_API.qps, help="client-side API rate limit (requests/second)")
    add("--burst", type=int, default=_API.burst, help="client-side API burst")
    add(
        "--event-qps",
        type=float,
        default=_EVENTS.qps,
        help="Event writes per second (a token bucket of their own, apart from --qps)",
    )
    add("--event-burst", type=int, default=_EVENTS.burst, help="Event write burst")
    add(
        "--event-series-interval",
        type=float,
        default=_EVENTS.series_interval,
        metavar="SECONDS",
        help="at most one write per Event series (object, type, reason) this often; repeats are counted",
    )
    add(
        "--event-loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the asyncio event loop implementation (default: uvloop)",
    )
    _add_dispatch_flags(parser)
    _add_probe_flags(parser)
    _add_guard_flags(parser)
    add("--webhook-port", type=int, default=_WEBHOOK.port, help="admission webhook HTTPS port (0: off)")
    add("--webhook-addr", default=_WEBHOOK.addr, help="admission webhook listen address")
    add("--webhook-host", default=_WEBHOOK.host, help="host/IP the API server reaches the webhook at")
    add("--webhook-cert-file", type=Path, default=None, help="webhook serving certificate (PEM)")
    add("--webhook-key-file", type=Path, default=None, help="webhook serving key (PEM)")
    add("--webhook-ca-dump", type=Path, default=None, help="write the webhook's CA bundle to this file")
    add(
        "--max-job-template-bytes",
        type=int,
        default=_WEBHOOK.max_job_template_bytes,
        metavar="BYTES",
        help="the webhook refuses a larger spec.jobTemplate (bytes of JSON; 0: no limit)",
    )
    add("--log-format", choices=[f.value for f in LogFormat], default=LogFormat.TEXT.value)
    add("--log-level", default=_LOGGING.level)
    add(
        "--kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig file (default: in-cluster service account, else KUBECONFIG / ~/.kube/config)",
    )
    add("--identity", default=None, help="Lease holder identity (default: $POD_NAME, else <hostname>-<pid>)")
    _add_certificate_flags(parser)
    parser.set_defaults(func=run)


def _add_dispatch_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--max-concurrency", type=int, default=_DISPATCH.max_concurrency, help="objects reconciled at once")
    add(
        "--prepared-runs",
        action=argparse.BooleanOptionalAction,
        default=_DISPATCH.prepared_runs,
        help="reserve each next run ahead, so that at its instant only the Job is created (default: on)",
    )
    add(
        "--backlog-qps",
        type=float,
        default=_DISPATCH.backlog_qps,
        help="catch-up and backfill runs one namespace may start per second, across all its objects",
    )
    add(
        "--backlog-burst",
        type=int,
        default=_DISPATCH.backlog_burst,
        help="catch-up and backfill runs one namespace may start at once after a quiet period",
    )


def _add_guard_flags(parser: argparse.ArgumentParser) -> None:
    """The replica's checks on itself (DESIGN §12.2)."""
    add = parser.add_argument
    add(
        "--fencing-probe-period",
        type=float,
        default=_LEASES.fencing_probe_period,
        metavar="SECONDS",
        help="seconds between two enforcement probes of a shard held all along (besides the one at each acquire)",
    )
    add(
        "--watchdog-unready-lag",
        type=float,
        default=_GUARDS.unready_lag,
        metavar="SECONDS",
        help="/readyz fails while the planning loop is this far behind its watchdog",
    )
    add(
        "--watchdog-withdraw-lag",
        type=float,
        default=_GUARDS.withdraw_lag,
        metavar="SECONDS",
        help="past this loop lag the replica releases its shard Leases and leaves the member set (a standby takes "
        "over); it joins again once the lag is under --watchdog-unready-lag",
    )
    add(
        "--max-clock-skew",
        type=float,
        default=_GUARDS.max_clock_skew,
        metavar="SECONDS",
        help="hold no shard (plan nothing) while this replica's clock differs from the API server's by more",
    )


def _add_probe_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--metrics-port", type=int, default=_PROBES.metrics_port, help="Prometheus /metrics port (0: off)")
    add("--health-port", type=int, default=_PROBES.health_port, help="/healthz and /readyz port (0: off)")
    add(
        "--metrics-auth",
        action="store_true",
        help="serve /metrics over HTTPS, only to bearer tokens allowed to get /metrics (TokenReview + "
        "SubjectAccessReview); without --metrics-cert-file a certificate is made at startup",
    )
    add("--metrics-cert-file", type=Path, default=None, help="serve /metrics over HTTPS with this certificate (PEM)")
    add("--metrics-key-file", type=Path, default=None, help="private key (PEM) of --metrics-cert-file")
    add(
        "--metrics-created-series",
        action="store_true",
        help="also expose the <name>_created series of counters and histograms (off: Prometheus' convention)",
    )


def _add_certificate_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "webhook certificate managed by the operator (instead of --webhook-cert-file/--webhook-key-file)"
    )
    add = group.add_argument
    add(
        "--webhook-cert-secret",
        default="",
        metavar="NAME",
        help="keep the webhook's CA and serving certificate in this Secret: generated, rotated before expiry",
    )
    add(
        "--webhook-cert-namespace",
        default=None,
        metavar="NS",
        help="namespace of that Secret (default: --lease-namespace)",
    )
    add(
        "--webhook-configuration",
        default="",
        metavar="NAME",
        help="ValidatingWebhookConfiguration whose caBundle the operator keeps at the Secret's CA",
    )
    add("--webhook-cert-validity", type=float, default=365.0, metavar="DAYS", help="serving certificate lifetime")
    add("--webhook-ca-validity", type=float, default=3650.0, metavar="DAYS", help="CA lifetime")


def managed_certificate_from(args: argparse.Namespace, settings: Settings) -> certrotators.ManagedCertificate | None:
    """The operator-managed certificate of ``--webhook-cert-secret`` (None without it)."""
    if not args.webhook_cert_secret:
        return None
    if not settings.webhook.port:
        raise ValueError("--webhook-cert-secret needs --webhook-port")
    if settings.webhook.cert_file is not None:
        raise ValueError("--webhook-cert-secret and --webhook-cert-file exclude each other")
    if not settings.webhook.host:
        raise ValueError("--webhook-cert-secret needs --webhook-host (the name the certificate is for)")
    if args.webhook_cert_validity <= 0 or args.webhook_ca_validity < args.webhook_cert_validity:
        raise ValueError("need 0 < --webhook-cert-validity <= --webhook-ca-validity")
    return certrotators.ManagedCertificate(
        secret_namespace=args.webhook_cert_namespace or settings.leases.namespace,
        secret_name=args.webhook_cert_secret,
        webhook_configuration=args.webhook_configuration,
        names=certificates.SubjectNames.for_host(settings.webhook.host),
        lifetimes=certificates.Lifetimes(
            serving=timedelta(days=args.webhook_cert_validity), ca=timedelta(days=args.webhook_ca_validity)
        ),
    )


def _lease_namespace(explicit: str | None) -> str:
    if explicit:
        return explicit
    mounted = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
    try:
        return mounted.read_text().strip() or "default"
    except OSError:
        return "default"


#: TEST ONLY: fault injection for the chaos tests (see :attr:`Settings.test_crash_after_claim`).
CRASH_AFTER_CLAIM_ENV = "SUNDIAL_TEST_CRASH_AFTER_CLAIM"
#: TEST ONLY: fault injection for the chaos tests (see :attr:`Settings.test_crash_after_create`).
CRASH_AFTER_CREATE_ENV = "SUNDIAL_TEST_CRASH_AFTER_CREATE"
#: TEST ONLY: the watchdog's test (see :attr:`Settings.test_block_loop`).
BLOCK_LOOP_ENV = "SUNDIAL_TEST_BLOCK_LOOP"
#: TEST ONLY: the clock check's test (see :attr:`Settings.test_clock_offset`).
CLOCK_OFFSET_ENV = "SUNDIAL_TEST_CLOCK_OFFSET"


def _crash_hook(environ: Mapping[str, str], name: str) -> int:
    raw = environ.get(name, "").strip()
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def _seconds_hook(environ: Mapping[str, str], name: str) -> float:
    raw = environ.get(name, "").strip()
    if not raw:
        return 0.0
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None


def settings_from(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
    """The frozen :class:`Settings` from parsed arguments (the only place they are read).

    ``environ`` (default ``os.environ``) is consulted for ``POD_NAME`` (the default identity, as the chart sets
    it: the fencing policy compares the Lease holder with the token's pod name) and the test-only crash hooks.
    """
    env = os.environ if environ is None else environ
    return Settings(
        identity=args.identity or env.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}",
        namespaces=tuple(args.namespaces),
        api=groups.ApiSettings(qps=args.qps, burst=args.burst, kubeconfig=args.kubeconfig),
        leases=groups.LeaseSettings(
            namespace=_lease_namespace(args.lease_namespace),
            name_prefix=args.lease_name_prefix,
            duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            shards=args.shards,
            fencing_policy=args.fencing_policy,
            fencing_probe_period=args.fencing_probe_period,
        ),
        events=groups.EventSettings(
            qps=args.event_qps, burst=args.event_burst, series_interval=args.event_series_interval
        ),
        webhook=groups.WebhookSettings(
            port=args.webhook_port,
            addr=args.webhook_addr,
            host=args.webhook_host,
            cert_file=args.webhook_cert_file,
            key_file=args.webhook_key_file,
            ca_dump=args.webhook_ca_dump,
            max_job_template_bytes=args.max_job_template_bytes,
        ),
        dispatch=groups.DispatchSettings(
            max_concurrency=args.max_concurrency,
            backlog_qps=args.backlog_qps,
            backlog_burst=args.backlog_burst,
            prepared_runs=args.prepared_runs,
        ),
        probes=groups.ProbeSettings(
            metrics_port=args.metrics_port,
            health_port=args.health_port,
            metrics_auth=args.metrics_auth,
            metrics_cert_file=args.metrics_cert_file,
            metrics_key_file=args.metrics_key_file,
            metrics_created_series=args.metrics_created_series,
        ),
        logging=groups.LoggingSettings(format=LogFormat(args.log_format), level=args.log_level),
        test_crash_after_claim=_crash_hook(env, CRASH_AFTER_CLAIM_ENV),
        guards=groups.GuardSettings(
            unready_lag=args.watchdog_unready_lag,
            withdraw_lag=args.watchdog_withdraw_lag,
            max_clock_skew=args.max_clock_skew,
        ),
        test_crash_after_create=_crash_hook(env, CRASH_AFTER_CREATE_ENV),
        test_block_loop=_seconds_hook(env, BLOCK_LOOP_ENV),
        test_clock_offset=_seconds_hook(env, CLOCK_OFFSET_ENV),
    )


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from(args)
        certificate = managed_certificate_from(args, settings)
    except ValueError as error:
        print(f"sundial run: {error}")
        return 2
    logs.configure(fmt=settings.logging.format, level=settings.logging.level)
    with asyncio.Runner(loop_factory=_loop_factory(args.event_loop)) as runner:
        return runner.run(process.main(settings, certificate=certificate))


def _loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop by default: the event loop's own bookkeeping (timers, task steps, socket writes) was ~10% of a
    replica's CPU in the sharding profile with the standard loop; ``--event-loop asyncio`` keeps that one."""
    if name == "uvloop":
        import uvloop  # noqa: PLC0415 - only when chosen

        return uvloop.new_event_loop
    return asyncio.new_event_loop
