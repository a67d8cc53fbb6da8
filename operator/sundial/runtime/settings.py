"""Settings of ``sundial run``: one frozen value, built by the CLI from its arguments.

The only environment variable read (once, at startup, by the CLI) is the test-only fault-injection hook
``SUNDIAL_TEST_CRASH_AFTER_CLAIM`` (see :attr:`Settings.test_crash_after_claim`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    namespaces: Sequence[str] = ()
    """Namespaces to watch; empty means every namespace (cluster-wide)."""

    lease_namespace: str = "default"
    """Namespace of the shard Leases (``coordination.k8s.io/v1``)."""

    lease_name_prefix: str = "sundial"
    """Leases are named ``<prefix>-shard-<i>``."""

    lease_duration: float = 15.0
    """Seconds a standby waits after it last saw a Lease change before taking it over."""

    renew_deadline: float = 10.0
    """Seconds after the last successful renewal (monotonic) beyond which this replica stops acting."""

    retry_period: float = 2.0
    """Seconds between acquire/renew attempts."""

    shards: int = 1
    """Number of shards (Leases); an object belongs to shard ``hash(uid) mod shards``."""

    qps: float = 50.0
    """Sustained API requests per second (client-side token bucket) for the operator's own calls."""

    burst: int = 100
    """Token bucket size: requests allowed at once after a quiet period."""

    event_qps: float = 10.0
    """Sustained Event writes per second: a token bucket of their own (:mod:`sundial.runtime.acting.events`), so
    Events never spend the :attr:`qps` budget of claims and Job creates."""

    event_burst: int = 50
    """Event writes allowed at once after a quiet period."""

    event_series_interval: float = 300.0
    """Seconds between two writes of one Event series (same object, type and reason): repeats within it only
    count up in memory and are sent as one PATCH of ``count``/``lastTimestamp``/``message``."""

    max_concurrency: int = 16
    """Objects reconciled at the same time."""

    metrics_port: int = 8080
    """Port of the Prometheus ``/metrics`` endpoint (0: disabled)."""

    health_port: int = 8081
    """Port of ``/healthz`` and ``/readyz`` (0: disabled)."""

    webhook_port: int = 0
    """HTTPS port of the validating admission webhook (:mod:`sundial.runtime.serving.admission`; 0: disabled).
    It is served at the path ``/validate-scheduledjob``; the ValidatingWebhookConfiguration is made by the
    chart (or the tests), not by the operator, unless :attr:`webhook_managed` is set."""

    webhook_addr: str = "0.0.0.0"
    """Address the webhook server listens on (empty: every interface)."""

    webhook_host: str = ""
    """Host name or IP the API server uses to reach the webhook: the URL kopf reports (and writes into a
    managed configuration), and a SAN of a self-signed certificate. Empty: derived from the listen address."""

    webhook_cert_file: Path | None = None
    """PEM serving certificate (chain) of the webhook; re-read when the file changes. None (with
    :attr:`webhook_key_file` None): kopf generates a self-signed one (needs the ``certbuilder`` package)."""

    webhook_key_file: Path | None = None
    """PEM private key of :attr:`webhook_cert_file`."""

    webhook_ca_dump: Path | None = None
    """Write the CA bundle the API server must trust (``caBundle``) to this file: the generated certificate,
    or :attr:`webhook_cert_file` itself. None: not written."""

    webhook_managed: str = ""
    """Name of a ValidatingWebhookConfiguration kopf creates and keeps up to date (needs RBAC on
    ``admissionregistration.k8s.io``; unscoped, failurePolicy Fail). Empty (the default): not managed."""

    log_format: LogFormat = LogFormat.TEXT
    """``text`` for people, ``json`` (one object per line) for log pipelines."""

    log_level: str = "INFO"
    """Root log level."""

    kubeconfig: Path | None = None
    """A kubeconfig file; None: in-cluster service account, else ``KUBECONFIG`` / ``~/.kube/config``."""

    identity: str = ""
    """This replica's Lease holder identity (default: ``<hostname>-<pid>``, filled in by the CLI)."""

    test_crash_after_claim: int = 0
    """TEST ONLY (fault injection, never set in production): when > 0, the process exits with
    ``os._exit(137)`` right after its n-th successful claim write that precedes a Job create, before the
    create - the "crashed between claim and create" case. The CLI reads it once at startup from the
    ``SUNDIAL_TEST_CRASH_AFTER_CLAIM`` environment variable; 0 (the default) disables it."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < --retry-period < --renew-deadline < --lease-duration")
        if self.shards < 1:
            raise ValueError("--shards must be at least 1")
        if self.qps <= 0 or self.burst < 1:
            raise ValueError("--qps must be > 0 and --burst >= 1")
        if self.event_qps <= 0:
            raise ValueError("--event-qps must be > 0")
        if self.event_burst < 1:
            raise ValueError("--event-burst must be at least 1")
        if not 0 < self.event_series_interval <= 3600:
            raise ValueError("--event-series-interval must be > 0 and at most 3600 seconds (the Event TTL)")
        if self.max_concurrency < 1:
            raise ValueError("--max-concurrency must be at least 1")
        if not 0 <= self.webhook_port <= 65535:
            raise ValueError("--webhook-port must be between 0 and 65535")
        if (self.webhook_cert_file is None) != (self.webhook_key_file is None):
            raise ValueError("--webhook-cert-file and --webhook-key-file go together")
        if not self.identity:
            raise ValueError("identity must not be empty")
        if self.test_crash_after_claim < 0:
            raise ValueError("SUNDIAL_TEST_CRASH_AFTER_CLAIM must not be negative")

    def lease_name(self, shard: int) -> str:
        return f"{self.lease_name_prefix}-shard-{shard}"
