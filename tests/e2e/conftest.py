"""Fixtures for the end-to-end suite: a real Kubernetes API server, one namespace per test.

Which cluster:
* ``SUNDIAL_E2E_KUBECONFIG=/path`` (or ``SUNDIAL_E2E_USE_KUBECONFIG=1`` with ``KUBECONFIG``):
  an existing cluster (e.g. kind). Nothing is started or stopped.
* otherwise a :class:`sundial_sandbox.Sandbox` in a temporary directory, stopped at session end.
  ``SUNDIAL_E2E_SANDBOX_DIR=/path`` uses (and keeps running) a sandbox in that directory instead,
  which makes re-runs fast. Build the binaries first: ``bash tools/controlplane/build.sh``.

The same manifests work on both: on the sandbox, kwok makes pods succeed/fail/"run" from the
``sandbox.sundial.dev/outcome`` label and ``sandbox.sundial.dev/duration`` annotation; on a
real cluster the busybox command built by :meth:`Cluster.job_manifest` does the same thing.

The operator (``python -m sundial run`` as a subprocess):
* ``start_operator(*extra_args, namespaces=[...], lease_prefix=..., env=...) -> Operator`` — a
  function-scoped factory; ``start_module_operator`` is the same factory with module scope (one operator
  shared by a module's tests). Every operator it started is stopped at teardown (SIGTERM, then SIGKILL
  after a deadline) and its log tail is printed when a test failed.
* Isolation: two operators watching all namespaces would both act on every object, so start each one
  with the namespaces of its own test (``namespaces=[namespace]``); ``namespaces=()`` means cluster-wide
  and is for tests that need it. For a module-shared operator, ``module_namespaces`` creates one
  namespace per test of the module up front (``module_namespaces.of(request)`` / the ``module_namespace``
  fixture), so the operator can be started with exactly those.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sundial_sandbox import DURATION_ANNOTATION, OUTCOME_FAIL, OUTCOME_LABEL, Sandbox, install_crds
from sundial_sandbox.webhook import issue_serving_certificate, validating_webhook_configuration

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]

#: Image used for pod templates; kwok ignores it, a real cluster runs it.
BUSYBOX_IMAGE = os.environ.get("SUNDIAL_E2E_IMAGE", "busybox:1.37")


class WaitTimeoutError(AssertionError):
    pass


@dataclass
class Cluster:
    kubeconfig: Path
    #: True when pods are faked by kwok (the sandbox), False on a real cluster.
    fake_pods: bool

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60.0
    ) -> subprocess.CompletedProcess[str]:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.fail("kubectl is not on PATH")
        result = subprocess.run(
            [kubectl, f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}{result.stdout}"
            )
        return result

    def get_json(self, *args: str) -> Any:
        """``kubectl get ARGS -o json``, parsed; None if the object does not exist."""
        result = self.kubectl("get", *args, "-o", "json", check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr or "not found" in result.stderr:
                return None
            raise AssertionError(f"kubectl get {' '.join(args)} failed:\n{result.stderr}")
        return json.loads(result.stdout)

    def apply(self, manifest: dict[str, Any], namespace: str | None = None) -> None:
        args = ["apply", "-f", "-"]
        if namespace is not None:
            args += ["-n", namespace]
        self.kubectl(*args, input=json.dumps(manifest))

    def wait_for(
        self,
        predicate: Callable[[], T | None],
        timeout: float,
        message: str = "condition",
        interval: float = 0.5,
    ) -> T:
        """Poll PREDICATE until it returns something truthy (returned); fail after TIMEOUT seconds."""
        deadline = time.monotonic() + timeout
        last: T | None = None
        while True:
            last = predicate()
            if last:
                return last
            if time.monotonic() >= deadline:
                raise WaitTimeoutError(f"timed out after {timeout:.0f}s waiting for {message} (last: {last!r})")
            time.sleep(interval)

    def job_manifest(
        self,
        name: str,
        *,
        fail: bool = False,
        duration_seconds: int | None = None,
        backoff_limit: int = 0,
    ) -> dict[str, Any]:
        """A Job whose pod succeeds (or fails with exit code 1) after DURATION_SECONDS."""
        labels: dict[str, str] = {"app.kubernetes.io/part-of": "sundial-e2e"}
        annotations: dict[str, str] = {}
        if fail:
            labels[OUTCOME_LABEL] = OUTCOME_FAIL
        if duration_seconds is not None:
            annotations[DURATION_ANNOTATION] = f"{duration_seconds}s"
        script = f"sleep {duration_seconds or 0}; exit {1 if fail else 0}"
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "backoffLimit": backoff_limit,
                "template": {
                    "metadata": {"labels": labels, "annotations": annotations},
                    "spec": {
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 0,
                        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", script]}],
                    },
                },
            },
        }


def _external_kubeconfig() -> Path | None:
    explicit = os.environ.get("SUNDIAL_E2E_KUBECONFIG")
    if explicit:
        return Path(explicit)
    if os.environ.get("SUNDIAL_E2E_USE_KUBECONFIG") == "1" and os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    return None


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = _external_kubeconfig()
    if external is not None:
        if not external.is_file():
            pytest.fail(f"e2e kubeconfig {external} does not exist")
        cluster = Cluster(kubeconfig=external, fake_pods=False)
        keep_lease_params(cluster)
        yield cluster
        return

    persistent = os.environ.get("SUNDIAL_E2E_SANDBOX_DIR")
    directory = Path(persistent) if persistent else tmp_path_factory.mktemp("sandbox")
    sandbox = Sandbox(directory)
    try:
        kubeconfig = sandbox.start()
    except Exception:
        sandbox.stop()
        raise
    try:
        cluster = Cluster(kubeconfig=kubeconfig, fake_pods=True)
        keep_lease_params(cluster)
        yield cluster
    finally:
        if not persistent:
            sandbox.stop()


#: A ValidatingAdmissionPolicy and binding with paramKind Lease that match nothing and are never deleted.
#: kube-apiserver (up to at least 1.37.2) stops the shared informer of a built-in paramKind for good once no
#: binding uses it, and a policy bound later resolves its param selector against that dead informer: no
#: params, so the chart's fencing policy (docs/fencing.md) silently allows everything until the API server
#: restarts (kubernetes/kubernetes#130887, #133827). Tests install and remove fencing policies (helm
#: install/uninstall, tests/e2e/chaos/fencing.py); this binding outlives them all.
LEASE_PARAMS_KEEPER = "sundial-e2e-keeps-lease-params"


def keep_lease_params(cluster: Cluster) -> None:
    """Install :data:`LEASE_PARAMS_KEEPER` unless it is there (idempotent)."""
    never = {"matchLabels": {"sundial.dev/e2e-never": "matched"}}
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "operations": ["CREATE"]}
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": LEASE_PARAMS_KEEPER},
        "spec": {
            "paramKind": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"},
            "matchConstraints": {"namespaceSelector": never, "resourceRules": [rule]},
            "validations": [{"expression": "true"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": LEASE_PARAMS_KEEPER},
        "spec": {
            "policyName": LEASE_PARAMS_KEEPER,
            "validationActions": ["Deny"],
            "paramRef": {"selector": never, "namespace": "default", "parameterNotFoundAction": "Allow"},
        },
    }
    cluster.kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [policy, binding]})
    )


def _namespace_name(stem: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")[:40].strip("-")
    return f"e2e-{stem}-{uuid.uuid4().hex[:6]}"


def create_namespace(cluster: Cluster, stem: str) -> str:
    """Create a fresh namespace named after STEM and wait for its default ServiceAccount."""
    name = _namespace_name(stem)
    cluster.kubectl("create", "namespace", name)
    # Pods need the namespace's default ServiceAccount, created asynchronously.
    cluster.wait_for(
        lambda: cluster.get_json("serviceaccount", "default", "-n", name),
        timeout=30,
        message=f"ServiceAccount {name}/default",
    )
    return name


def delete_namespace(cluster: Cluster, name: str) -> None:
    cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    name = create_namespace(cluster, request.node.name)
    yield name
    delete_namespace(cluster, name)


@dataclass
class ModuleNamespaces:
    """One namespace per test of a module, created before the module's first test (so that a
    module-shared operator can be started with exactly these ``--namespace`` flags)."""

    by_test: dict[str, str]

    @property
    def all(self) -> list[str]:
        return list(self.by_test.values())

    def of(self, request: pytest.FixtureRequest) -> str:
        return self.by_test[request.node.nodeid]


@pytest.fixture(scope="module")
def module_namespaces(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[ModuleNamespaces]:
    items = [item for item in request.session.items if getattr(item, "module", None) is request.module]
    pool = ModuleNamespaces({item.nodeid: create_namespace(cluster, item.name) for item in items})
    yield pool
    for name in pool.all:
        delete_namespace(cluster, name)


@pytest.fixture
def module_namespace(module_namespaces: ModuleNamespaces, request: pytest.FixtureRequest) -> str:
    """This test's namespace from :func:`module_namespaces` (not deleted until the module ends)."""
    return module_namespaces.of(request)


# The operator ------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 3.0) -> tuple[int, str]:
    """(status, body) of a GET; (0, "") when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


@dataclass
class Operator:
    """One ``sundial run`` subprocess started by :func:`start_operator`."""

    process: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    health_url: str
    lease_prefix: str
    lease_namespace: str
    identity: str
    namespaces: tuple[str, ...]
    command: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def lease_names(self) -> list[str]:
        """The shard Leases (shard 0 only unless started with ``--shards``)."""
        shards = 1
        if "--shards" in self.command:
            shards = int(self.command[self.command.index("--shards") + 1])
        return [f"{self.lease_prefix}-shard-{i}" for i in range(shards)]

    def alive(self) -> bool:
        return self.process.poll() is None

    def probe(self, path: str) -> int:
        """HTTP status of GET <health port><PATH> (``/healthz``, ``/readyz``); 0 when nothing answers."""
        return http_get(self.health_url + path)[0]

    def ready(self) -> bool:
        return self.alive() and self.probe("/readyz") == 200

    def metrics(self) -> str:
        code, text = http_get(self.metrics_url)
        if code != 200:
            raise AssertionError(f"GET {self.metrics_url} answered {code}")
        return text

    def kill(self, sig: int = signal.SIGKILL, timeout: float | None = 20.0) -> int | None:
        """Send SIG (if still running); with a TIMEOUT wait that long for the exit. The exit code, or None."""
        if self.alive():
            self.process.send_signal(sig)
        if timeout is None:
            return self.process.poll()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 20.0) -> int:
        """Graceful stop (SIGTERM: releases its Leases); SIGKILL when it has not exited within TIMEOUT."""
        code = self.kill(signal.SIGTERM, timeout=timeout)
        if code is None:
            self.process.kill()
            code = self.process.wait()
        return code

    def log_tail(self, lines: int = 80) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class OperatorLauncher:
    """``launcher(*extra_args, namespaces=..., lease_prefix=..., env=...) -> Operator``; :meth:`close`
    stops everything it started."""

    def __init__(self, cluster: Cluster, directory: Path) -> None:
        self.cluster = cluster
        self.directory = directory
        self.started: list[Operator] = []

    def __call__(
        self,
        *extra_args: str,
        namespaces: Sequence[str],
        lease_prefix: str | None = None,
        lease_namespace: str = "default",
        identity: str | None = None,
        env: Mapping[str, str] | None = None,
        log_format: str = "json",
        wait_ready: bool = True,
        ready_timeout: float = 60.0,
        kubeconfig: Path | None = None,
    ) -> Operator:
        """Start ``python -m sundial run``. NAMESPACES: the ``--namespace`` flags; ``()`` = cluster-wide.
        LEASE_PREFIX: default a fresh one (replicas that should compete for one Lease pass the same).
        EXTRA_ARGS go last (e.g. ``"--lease-duration", "4"``). With WAIT_READY, returns once /readyz is 200.
        KUBECONFIG: the operator's credentials (default the cluster's admin kubeconfig), e.g. a
        ServiceAccount token to run under an install's RBAC."""
        index = len(self.started)
        identity = identity or f"e2e-operator-{index}-{uuid.uuid4().hex[:4]}"
        prefix = lease_prefix or f"e2e-{uuid.uuid4().hex[:6]}"
        metrics_port, health_port = free_port(), free_port()
        command = [
            sys.executable, "-m", "sundial", "run",
            "--kubeconfig", str(kubeconfig or self.cluster.kubeconfig),
            "--lease-namespace", lease_namespace,
            "--lease-name-prefix", prefix,
            "--identity", identity,
            "--metrics-port", str(metrics_port),
            "--health-port", str(health_port),
            "--log-format", log_format,
        ]  # fmt: skip
        for name in namespaces:
            command += ["--namespace", name]
        command += list(extra_args)
        log = self.directory / f"operator-{index}-{identity}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                command,
                stdout=sink,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env={**os.environ, **(env or {})},
            )
        operator = Operator(
            process=process,
            log=log,
            metrics_url=f"http://127.0.0.1:{metrics_port}/metrics",
            health_url=f"http://127.0.0.1:{health_port}",
            lease_prefix=prefix,
            lease_namespace=lease_namespace,
            identity=identity,
            namespaces=tuple(namespaces),
            command=command,
        )
        self.started.append(operator)
        if wait_ready:
            try:
                self.cluster.wait_for(
                    lambda: operator.ready() or not operator.alive() or None,
                    timeout=ready_timeout,
                    message=f"/readyz of operator {identity}",
                )
            except WaitTimeoutError as error:
                raise AssertionError(f"{error}\n--- operator log:\n{operator.log_tail()}") from None
            if not operator.alive():
                raise AssertionError(
                    f"operator {identity} exited with {operator.process.returncode}:\n{operator.log_tail()}"
                )
        return operator

    def close(self, *, show_logs: bool = True, deadline: float = 20.0) -> None:
        for operator in self.started:
            if operator.alive():
                operator.process.send_signal(signal.SIGTERM)
        for operator in self.started:
            try:
                operator.process.wait(timeout=deadline)
            except subprocess.TimeoutExpired:
                operator.process.kill()
                operator.process.wait()
            if show_logs:
                print(
                    f"--- operator {operator.identity} (exit {operator.process.returncode}, log {operator.log}):\n"
                    + operator.log_tail()
                )


@pytest.fixture(scope="session")
def crds(cluster: Cluster) -> None:
    """The Sundial CRDs, applied once per session and Established."""
    install_crds(cluster.kubeconfig, REPO / "crds")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
        module = getattr(item, "module", None)
        if module is not None:
            module.__dict__["_sundial_e2e_failed"] = True
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def start_operator(
    crds: None, cluster: Cluster, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[OperatorLauncher]:
    """Function-scoped operator factory; see :class:`OperatorLauncher`."""
    launcher = OperatorLauncher(cluster, tmp_path)
    yield launcher
    launcher.close(show_logs=request.node.stash.get(_FAILED, False))


@pytest.fixture(scope="module")
def start_module_operator(
    crds: None, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[OperatorLauncher]:
    """Module-scoped operator factory (one operator shared by a module's tests)."""
    launcher = OperatorLauncher(cluster, tmp_path_factory.mktemp("operator"))
    yield launcher
    launcher.close(show_logs=bool(getattr(request.module, "_sundial_e2e_failed", False)))


# The admission webhook ---------------------------------------------------------------------------------

#: Namespaces labelled with this key (value: a webhook's token) are covered by that e2e webhook only:
#: a ``failurePolicy: Fail`` webhook must never refuse other tests' objects while its operator is down.
WEBHOOK_NAMESPACE_LABEL = "e2e.sundial.dev/admission-webhook"
#: kopf serves the handler at /<handler id> (``sundial.runtime.serving.admission.WEBHOOK_PATH``).
WEBHOOK_PATH = "/validate-scheduledjob"
#: Refused only by the webhook (the CRD accepts it): how :meth:`AdmissionWebhook.cover` sees it is effective.
_WEBHOOK_PROBE = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": "webhook-probe"},
    "spec": {
        "schedule": "0 0 30 2 *",
        "jobTemplate": {
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": BUSYBOX_IMAGE}]}
                }
            }
        },
    },
}


@dataclass
class AdmissionWebhook:
    """A ``sundial run --webhook-port`` operator and a ValidatingWebhookConfiguration pointing at it over TLS,
    scoped to the namespaces :meth:`cover` labels."""

    cluster: Cluster
    name: str
    token: str
    url: str
    operator: Operator

    def cover(self, namespace: str, timeout: float = 60.0) -> None:
        """Route NAMESPACE's ScheduledJob CREATE/UPDATEs to this webhook; return once the API server uses it."""
        self.cluster.kubectl("label", "namespace", namespace, f"{WEBHOOK_NAMESPACE_LABEL}={self.token}", "--overwrite")

        def refused() -> bool:
            result = self.cluster.kubectl(
                "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-",
                input=json.dumps(_WEBHOOK_PROBE), check=False,
            )  # fmt: skip
            return result.returncode != 0 and "denied the request" in result.stderr

        try:
            self.cluster.wait_for(refused, timeout=timeout, message=f"webhook {self.name} refusing in {namespace}")
        except WaitTimeoutError as error:
            raise AssertionError(f"{error}\n--- operator log:\n{self.operator.log_tail()}") from None

    def uncover(self, namespace: str) -> None:
        self.cluster.kubectl("label", "namespace", namespace, f"{WEBHOOK_NAMESPACE_LABEL}-", check=False)


class AdmissionWebhookLauncher:
    """``launcher(namespaces=[...]) -> AdmissionWebhook``; :meth:`close` deletes every configuration it made."""

    def __init__(self, cluster: Cluster, operators: OperatorLauncher, directory: Path) -> None:
        self.cluster = cluster
        self.operators = operators
        self.directory = directory
        self.configurations: list[str] = []

    def __call__(self, *, namespaces: Sequence[str], extra_args: Sequence[str] = ()) -> AdmissionWebhook:
        token = uuid.uuid4().hex[:8]
        tls = issue_serving_certificate(self.directory / f"webhook-{token}", ips=("127.0.0.1",), dns_names=())
        port = free_port()
        operator = self.operators(
            "--webhook-port", str(port),
            "--webhook-addr", "127.0.0.1",
            "--webhook-host", "127.0.0.1",
            "--webhook-cert-file", str(tls.cert),
            "--webhook-key-file", str(tls.key),
            *extra_args,
            namespaces=namespaces,
        )  # fmt: skip
        url = f"https://127.0.0.1:{port}{WEBHOOK_PATH}"
        name = f"sundial-e2e-{token}"
        manifest = validating_webhook_configuration(
            name,
            url=url,
            ca_bundle=tls.ca_bundle(),
            namespace_selector={"matchLabels": {WEBHOOK_NAMESPACE_LABEL: token}},
        )
        self.configurations.append(name)
        self.cluster.apply(manifest)
        return AdmissionWebhook(cluster=self.cluster, name=name, token=token, url=url, operator=operator)

    def close(self) -> None:
        for name in self.configurations:
            self.cluster.kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def start_admission_webhook(
    cluster: Cluster, start_module_operator: OperatorLauncher, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdmissionWebhookLauncher]:
    """Module-scoped: start webhook-serving operators (TLS from a fresh CA for 127.0.0.1) and their
    namespace-scoped ValidatingWebhookConfigurations (``failurePolicy: Fail``), deleted at teardown before
    the operators stop."""
    launcher = AdmissionWebhookLauncher(cluster, start_module_operator, tmp_path_factory.mktemp("webhook"))
    try:
        yield launcher
    finally:
        launcher.close()
