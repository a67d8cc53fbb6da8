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

The classes these fixtures hand out live in ``tests/e2e/harness/``, one module a role: ``cluster``
(:class:`Cluster`), ``namespaces`` (:class:`ModuleNamespaces`), ``operators`` (:class:`Operator`,
:class:`OperatorLauncher`) and ``webhooks`` (:class:`AdmissionWebhook`, :class:`AdmissionWebhookLauncher`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from tests.e2e.harness.cluster import REPO, Cluster
from tests.e2e.harness.namespaces import ModuleNamespaces, create_namespace, delete_namespace
from tests.e2e.harness.operators import OperatorLauncher
from tests.e2e.harness.webhooks import AdmissionWebhookLauncher

from sundial_sandbox import Sandbox, install_crds


def _external_kubeconfig() -> Path | None:
    explicit = os.environ.get("SUNDIAL_E2E_KUBECONFIG")
    if explicit:
        return Path(explicit)
    if os.environ.get("SUNDIAL_E2E_USE_KUBECONFIG") == "1" and os.environ.get("KUBECONFIG"):
        return Path(os.environ["KUBECONFIG"].split(os.pathsep)[0])
    return None


#: Enabled on the sandbox's API server besides its defaults. OwnerReferencesPermissionEnforcement (on in OpenShift)
#: refuses an ownerReference with ``blockOwnerDeletion`` from a user who may not update the owner's finalizers:
#: every Job the operator creates under the chart's or config/'s RBAC proves they grant it (issue 30). Users
#: with the admin certificate (most tests, the controllers) are not affected.
E2E_ADMISSION_PLUGINS = ("OwnerReferencesPermissionEnforcement",)


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
    sandbox = Sandbox(directory, admission_plugins=E2E_ADMISSION_PLUGINS)
    try:
        kubeconfig = sandbox.start()
    except Exception:
        sandbox.stop()
        raise
    try:
        cluster = Cluster(kubeconfig=kubeconfig, fake_pods=True, sandbox=sandbox)
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


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    name = create_namespace(cluster, request.node.name)
    yield name
    delete_namespace(cluster, name)


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


@pytest.fixture(scope="session")
def crds(cluster: Cluster) -> None:
    """The Sundial CRDs, applied once per session and Established, and known to the API server's admission.

    The sandbox enables OwnerReferencesPermissionEnforcement, whose REST mapper learns new kinds only when it is
    next reset (every 30 s): until then a Job that blocks its ScheduledJob's deletion is refused ("cannot find
    RESTMapping"). On a cluster the CRD is installed long before the first Job; here the first test could be
    within those 30 s, so wait until a dry run of such a Job is no longer refused for that reason."""
    install_crds(cluster.kubeconfig, REPO / "crds")
    owned = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "sundial-e2e-mapping-probe",
            "ownerReferences": [{
                "apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob", "name": "probe",
                "uid": "00000000-0000-0000-0000-000000000000", "blockOwnerDeletion": True,
            }],
        },
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
    }  # fmt: skip

    def mapped() -> bool:
        result = cluster.kubectl(
            "create", "--dry-run=server", "-n", "default", "-o", "name", "-f", "-", input=json.dumps(owned), check=False
        )
        return "RESTMapping" not in result.stderr

    cluster.wait_for(mapped, timeout=90, message="admission's REST mapper to know ScheduledJobs", interval=2.0)


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
