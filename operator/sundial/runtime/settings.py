"""Settings of ``sundial run``: small frozen groups (API, leases, events, webhook, dispatch, probes, logging)
composed into one :class:`Settings`, built by the CLI from its arguments (``sundial.cli.commands.run``).

Each group checks its own fields when it is made and names the CLI flag of a bad value. The only environment
variables read (once, at startup, by the CLI) are the test-only fault-injection hooks
``SUNDIAL_TEST_CRASH_AFTER_CLAIM``, ``SUNDIAL_TEST_CRASH_AFTER_CREATE``, ``SUNDIAL_TEST_BLOCK_LOOP`` and
``SUNDIAL_TEST_CLOCK_OFFSET`` (see :attr:`Settings.test_crash_after_claim` and the three after it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

from sundial.kube.errors import DEFAULT_FENCING_POLICY

#: The Event TTL of the API server (seconds): a series interval beyond it would only ever create new Events.
EVENT_TTL = 3600.0
MAX_PORT = 65535
#: The default bound of a ScheduledJob's ``spec.jobTemplate`` at admission (bytes of compact JSON).
DEFAULT_MAX_JOB_TEMPLATE_BYTES = 256 * 1024


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class ApiSettings:
    """How the operator reaches the API server and how fast its own calls may go."""

    qps: float = 50.0
    """Sustained API requests per second (client-side token bucket) for the operator's own calls."""

    burst: int = 100
    """Token bucket size: requests allowed at once after a quiet period."""

    kubeconfig: Path | None = None
    """A kubeconfig file; None: in-cluster service account, else ``KUBECONFIG`` / ``~/.kube/config``."""

    def __post_init__(self) -> None:
        if self.qps <= 0 or self.burst < 1:
            raise ValueError("--qps must be > 0 and --burst >= 1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class LeaseSettings:
    """The shard Leases (``coordination.k8s.io/v1``): where they live, how many, and their timing (the one
    lease-timing type: :mod:`sundial.runtime.coordination` decides and elects with it too)."""

    namespace: str = "default"
    """Namespace of the shard Leases."""

    name_prefix: str = "sundial"
    """Leases are named ``<prefix>-shard-<i>``."""

    duration: float = 15.0
    """Seconds a standby waits after it last saw a Lease change before taking it over."""

    renew_deadline: float = 10.0
    """Seconds after the last successful renewal (monotonic) beyond which this replica stops acting."""

    retry_period: float = 2.0
    """Seconds between acquire/renew attempts."""

    shards: int = 1
    """Number of shards (Leases); an object belongs to shard ``hash(uid) mod shards``."""

    fencing_policy: str = DEFAULT_FENCING_POLICY
    """Name of the server-side fencing ValidatingAdmissionPolicy (and its binding): only its denials are
    "the shard moved on", and each acquire proves it is enforced (docs/fencing.md). Empty: none installed."""

    fencing_probe_period: float = 60.0
    """Seconds between two enforcement probes of a shard held all along (besides the probe at each acquire):
    a policy or binding deleted later sets ``sundial_fencing_enforced`` to 0 within this period."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.duration:
            raise ValueError("need 0 < --retry-period < --renew-deadline < --lease-duration")
        if self.shards < 1:
            raise ValueError("--shards must be at least 1")
        if not (math.isfinite(self.fencing_probe_period) and self.fencing_probe_period > 0):
            raise ValueError(f"--fencing-probe-period must be a number greater than 0, got {self.fencing_probe_period}")

    def name(self, shard: int) -> str:
        """The name of shard ``shard``'s Lease."""
        return f"{self.name_prefix}-shard-{shard}"

    @property
    def duration_seconds(self) -> int:
        """``leaseDurationSeconds`` written by this replica (a whole number, at least 1)."""
        return max(1, round(self.duration))


@dataclasses.dataclass(frozen=True, kw_only=True)
class EventSettings:
    """Kubernetes Events: a budget of their own and their aggregation into series
    (:mod:`sundial.runtime.acting.series`, :mod:`sundial.runtime.acting.sender`)."""

    qps: float = 10.0
    """Sustained Event writes per second: a token bucket of their own, so Events never spend the
    :attr:`ApiSettings.qps` budget of claims and Job creates."""

    burst: int = 50
    """Event writes allowed at once after a quiet period."""

    series_interval: float = 300.0
    """Seconds between two writes of one Event series (same object, type and reason): repeats within it only
    count up in memory and are sent as one PATCH of ``count``/``lastTimestamp``/``message``."""

    def __post_init__(self) -> None:
        if self.qps <= 0:
            raise ValueError("--event-qps must be > 0")
        if self.burst < 1:
            raise ValueError("--event-burst must be at least 1")
        if not 0 < self.series_interval <= EVENT_TTL:
            raise ValueError("--event-series-interval must be > 0 and at most 3600 seconds (the Event TTL)")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WebhookSettings:
    """The validating admission webhooks (:mod:`sundial.runtime.serving.admission`), served at the paths
    ``/validate-scheduledjob`` and ``/validate-schedulecalendar`` on a thread of their own; the
    ValidatingWebhookConfiguration is made by the chart (or the tests), never by the operator."""

    port: int = 0
    """HTTPS port of the webhook (0: disabled)."""

    addr: str = "0.0.0.0"
    """Address the webhook server listens on (empty: every interface)."""

    host: str = ""
    """Host name or IP the API server uses to reach the webhook: the name of the certificate the operator
    makes (``--webhook-cert-secret``, or self-signed). Empty: ``localhost`` and ``127.0.0.1``."""

    cert_file: Path | None = None
    """PEM serving certificate (chain) of the webhook; re-read when the file changes. None (with
    :attr:`key_file` None): a self-signed one is made at startup for :attr:`host`."""

    key_file: Path | None = None
    """PEM private key of :attr:`cert_file`."""

    ca_dump: Path | None = None
    """Write the CA bundle the API server must trust (``caBundle``) to this file: the generated certificate,
    or :attr:`cert_file` itself. None: not written."""

    max_job_template_bytes: int = DEFAULT_MAX_JOB_TEMPLATE_BYTES
    """Largest ``spec.jobTemplate`` admitted, in bytes of compact JSON (0: no limit)."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= MAX_PORT:
            raise ValueError(f"--webhook-port must be between 0 and {MAX_PORT}")
        if self.max_job_template_bytes < 0:
            raise ValueError("--max-job-template-bytes must not be negative (0: no limit)")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("--webhook-cert-file and --webhook-key-file go together")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DispatchSettings:
    """When and how many planning passes run (:mod:`sundial.runtime.dispatch`)."""

    max_concurrency: int = 16
    """Objects reconciled at the same time."""
    prepared_runs: bool = True
    """Reserve each next run ahead of its instant, so that at the instant only its Job create is sent and the
    status write follows (DESIGN §7.5); False: every run is claimed by a status write first."""

    backlog_qps: float = 5.0
    """Catch-up and backfill runs one namespace may start per second, across all its objects (a token bucket
    per namespace, DESIGN §11.1): a tenth of the default ``--qps`` (a run is one Job create), so one namespace's
    outage catch-up or backfill never takes the replica's API budget from the others; a default backfill of 100
    runs takes about 16 s."""

    backlog_burst: int = 20
    """Catch-up and backfill runs one namespace may start at once after a quiet period: two passes' worth
    (``CREATES_PER_PASS``, the default ``catchUp.maxRuns``), so a default catch-up never waits."""

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError("--max-concurrency must be at least 1")
        if not (math.isfinite(self.backlog_qps) and self.backlog_qps > 0):
            raise ValueError(f"--backlog-qps must be a number greater than 0, got {self.backlog_qps}")
        if self.backlog_burst < 1:
            raise ValueError(f"--backlog-burst must be at least 1, got {self.backlog_burst}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProbeSettings:
    """The endpoints for the kubelet (plain HTTP) and Prometheus (plain HTTP, or HTTPS with
    ``metrics_auth`` or a certificate) (:mod:`sundial.runtime.serving.probes`)."""

    metrics_port: int = 8080
    """Port of the Prometheus ``/metrics`` endpoint (0: disabled)."""

    health_port: int = 8081
    """Port of ``/healthz`` and ``/readyz`` (0: disabled)."""

    metrics_auth: bool = False
    """Serve ``/metrics`` only to bearer tokens a TokenReview accepts whose user a SubjectAccessReview
    allows ``get`` on the non-resource URL ``/metrics`` (:mod:`sundial.runtime.serving.access`), and over
    HTTPS (:mod:`sundial.runtime.serving.metricstls`)."""

    metrics_cert_file: Path | None = None
    """Certificate (PEM) ``/metrics`` is served with over HTTPS; unset with ``metrics_auth``: one made at
    startup."""

    metrics_key_file: Path | None = None
    """Private key (PEM) of ``metrics_cert_file``."""

    metrics_created_series: bool = False
    """Also expose each counter's and histogram's ``<name>_created`` series (its creation time as a Unix
    timestamp); off by default, as Prometheus' conventions have it (:mod:`sundial.runtime.serving.metrics`)."""

    def __post_init__(self) -> None:
        if (self.metrics_cert_file is None) != (self.metrics_key_file is None):
            raise ValueError("--metrics-cert-file and --metrics-key-file go together")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GuardSettings:
    """The replica's checks on itself (DESIGN §12.2): the planning loop's watchdog and the clock check
    (:mod:`sundial.runtime.serving.watchdog`, :mod:`sundial.runtime.coordination.clocks`)."""

    unready_lag: float = 5.0
    """Seconds the planning loop may be behind its watchdog before ``/readyz`` fails."""

    withdraw_lag: float = 10.0
    """Seconds the planning loop may be behind its watchdog before the replica stops acting, releases its shard
    Leases and leaves the member set, so a standby takes the shards over; it joins again once the lag is back
    under :attr:`unready_lag`."""

    max_clock_skew: float = 5.0
    """Seconds this replica's clock may differ from the API server's (its ``Date`` header, 1 s resolution, so at
    least 1): beyond it the replica holds no shard (plans nothing) until the clocks agree again."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.unready_lag) and self.unready_lag > 0):
            raise ValueError(f"--watchdog-unready-lag must be a number greater than 0, got {self.unready_lag}")
        if not (math.isfinite(self.withdraw_lag) and self.withdraw_lag > self.unready_lag):
            raise ValueError(
                f"--watchdog-withdraw-lag must be greater than --watchdog-unready-lag ({self.unready_lag}), "
                f"got {self.withdraw_lag}"
            )
        if not (math.isfinite(self.max_clock_skew) and self.max_clock_skew >= 1):
            raise ValueError(
                f"--max-clock-skew must be at least 1 second (the Date header's resolution), got {self.max_clock_skew}"
            )


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoggingSettings:
    """The operator's own log lines (:mod:`sundial.runtime.serving.logs`)."""

    format: LogFormat = LogFormat.TEXT
    """``text`` for people, ``json`` (one object per line) for log pipelines."""

    level: str = "INFO"
    """Root log level."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything ``sundial run`` is told, one group per concern."""

    identity: str
    """This replica's identity: the Lease holder and the Events' reporting instance (default:
    ``<hostname>-<pid>``, filled in by the CLI)."""

    namespaces: Sequence[str] = ()
    """Namespaces to watch; empty means every namespace (cluster-wide)."""

    api: ApiSettings = ApiSettings()
    """The API connection and the operator's own request budget."""

    leases: LeaseSettings = LeaseSettings()
    """The shard Leases."""

    events: EventSettings = EventSettings()
    """Kubernetes Events."""

    webhook: WebhookSettings = WebhookSettings()
    """The validating admission webhook."""

    dispatch: DispatchSettings = DispatchSettings()
    """The dispatcher."""

    probes: ProbeSettings = ProbeSettings()
    """Health and metrics endpoints."""

    logging: LoggingSettings = LoggingSettings()
    """Log lines."""

    guards: GuardSettings = GuardSettings()
    """The watchdog and the clock check."""

    test_crash_after_claim: int = 0
    """TEST ONLY (fault injection, never set in production): when > 0, the process exits with
    ``os._exit(137)`` right after its n-th claim that precedes a Job create - a successful claim write, or a
    reservation used at its instant (DESIGN §7.5) - before the create: the "crashed between claim and create"
    (or "between reservation and instant") case. The CLI reads it once at startup from the
    ``SUNDIAL_TEST_CRASH_AFTER_CLAIM`` environment variable; 0 (the default) disables it."""

    test_crash_after_create: int = 0
    """TEST ONLY (fault injection, never set in production): when > 0, the process exits with
    ``os._exit(137)`` right after the n-th Job it created under a reservation at its instant, before the
    deferred status write that records it (DESIGN §7.5). Read from ``SUNDIAL_TEST_CRASH_AFTER_CREATE``."""

    test_block_loop: float = 0.0
    """TEST ONLY (fault injection, never set in production): when > 0, SIGUSR1 blocks the main event loop for
    that many seconds (a wedged planning loop, for the watchdog's test). Read from ``SUNDIAL_TEST_BLOCK_LOOP``;
    0 (the default) installs no handler."""

    test_clock_offset: float = 0.0
    """TEST ONLY (fault injection, never set in production): seconds added to every wall-clock reading of the
    replica (planning, Lease times): a replica whose clock is wrong, for the clock check's test. Read from
    ``SUNDIAL_TEST_CLOCK_OFFSET``; 0 (the default) changes nothing."""

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("identity must not be empty")
        if self.test_crash_after_claim < 0:
            raise ValueError("SUNDIAL_TEST_CRASH_AFTER_CLAIM must not be negative")
        if self.test_crash_after_create < 0:
            raise ValueError("SUNDIAL_TEST_CRASH_AFTER_CREATE must not be negative")
        if not (math.isfinite(self.test_block_loop) and self.test_block_loop >= 0):
            raise ValueError(f"SUNDIAL_TEST_BLOCK_LOOP must be a number of seconds >= 0, got {self.test_block_loop}")
        if not math.isfinite(self.test_clock_offset):
            raise ValueError(
                f"SUNDIAL_TEST_CLOCK_OFFSET must be a finite number of seconds, got {self.test_clock_offset}"
            )
