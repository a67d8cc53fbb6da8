"""A release of charts/sundial whose operator pods run from the image: the chart is rendered with
``helm template`` (the values a test needs: the image by digest, the watched namespace, the Lease prefix,
ports that do not collide on the host network), its ServiceAccount and RBAC are applied, and each replica
is a :class:`~.pods.Pod` with a token for that ServiceAccount from the TokenRequest API.

The chart's ValidatingWebhookConfiguration points at a Service, which nothing routes to here; a test that
needs the webhook registers one for ``https://127.0.0.1:<webhook port>`` (see :meth:`Release.register_webhook`).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

try:  # the sandbox as its own distribution (tools/sandbox); before that, a subpackage of sundial
    from sundial_sandbox.webhook import issue_serving_certificate, validating_webhook_configuration
except ModuleNotFoundError:
    from sundial.sandbox.webhook import issue_serving_certificate, validating_webhook_configuration

from .pods import RBAC_KINDS, Pod, PodTemplate, ServiceAccountMount

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

REPO = Path(__file__).resolve().parents[3]

#: A cold build (Debian bases, wheels, podman build) takes minutes; a cached one a second.
BUILD_TIMEOUT = 1800


def image_archive() -> Path:
    """The operator image's OCI archive: ``SUNDIAL_E2E_IMAGE_ARCHIVE`` if set, else ``tools/image/build.sh``'s
    (built, or reused from its cache by its inputs)."""
    explicit = os.environ.get("SUNDIAL_E2E_IMAGE_ARCHIVE")
    if explicit:
        return Path(explicit)
    build = subprocess.run(
        ["bash", str(REPO / "tools" / "image" / "build.sh")],
        capture_output=True, text=True, check=False, timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    if build.returncode != 0:
        pytest.fail(f"tools/image/build.sh failed ({build.returncode}):\n{build.stderr[-4000:]}")
    return Path(build.stdout.strip().splitlines()[-1])


def image_env(archive: Path) -> dict[str, str]:
    """The ``image.env`` written beside ARCHIVE (IMAGE, DIGEST, VERSION, REVISION)."""
    text = (archive.parent / "image.env").read_text()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


CHART = REPO / "charts" / "sundial"
#: Short Leases (through the chart's values), so a takeover after a crash fits in seconds.
LEASE_VALUES = {
    "leaderElection.leaseDuration": "6",
    "leaderElection.renewDeadline": "4",
    "leaderElection.retryPeriod": "1",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class OperatorImage:
    """The archive ``make image`` wrote, loaded into podman's storage."""

    archive: Path
    digest: str
    version: str
    revision: str
    repository: str = "localhost/sundial"

    @property
    def reference(self) -> str:
        return f"{self.repository}@{self.digest}"


def kubeconfig_server(cluster: Cluster) -> tuple[int, bytes]:
    """(API server port, CA certificate) of the cluster's kubeconfig."""
    config = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    (entry,) = config["clusters"]
    server = str(entry["cluster"]["server"])
    return int(server.rstrip("/").rsplit(":", 1)[1]), base64.b64decode(entry["cluster"]["certificate-authority-data"])


@dataclass
class Release:
    cluster: Cluster
    helm: str
    image: OperatorImage
    directory: Path
    namespace: str
    watch: str
    name: str = field(default_factory=lambda: f"img-{uuid.uuid4().hex[:6]}")
    pods: list[Pod] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    webhooks: list[str] = field(default_factory=list)

    @property
    def lease_prefix(self) -> str:
        return self.name

    def render(self, **values: str) -> list[dict[str, Any]]:
        sets = {
            "image.repository": self.image.repository,
            "image.digest": self.image.digest,
            "crds.enabled": "false",
            "watchNamespaces[0]": self.watch,
            "leaderElection.leaseNamePrefix": self.lease_prefix,
            **LEASE_VALUES,
            **values,
        }
        command = [self.helm, "template", self.name, str(CHART), "--namespace", self.namespace]
        for key, value in sets.items():
            command += ["--set", f"{key}={value}"]
        result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        assert result.returncode == 0, f"helm template failed:\n{result.stderr}"
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    def install_rbac(self, manifests: list[dict[str, Any]]) -> str:
        """Apply the render's ServiceAccount and RBAC; the ServiceAccount's name."""
        objects = [m for m in manifests if m["kind"] in RBAC_KINDS]
        self.applied += objects
        listing = {"apiVersion": "v1", "kind": "List", "items": objects}
        self.cluster.kubectl("apply", "-f", "-", input=json.dumps(listing))
        (account,) = [m["metadata"]["name"] for m in objects if m["kind"] == "ServiceAccount"]
        return str(account)

    def token(self, account: str) -> str:
        """A ServiceAccount token from the TokenRequest API (what the kubelet projects into a pod)."""
        token = self.cluster.kubectl("create", "token", account, "-n", self.namespace, "--duration", "1h").stdout
        assert token.strip().count(".") == 2, "not a JWT"
        return token.strip()

    def start_pod(self, identity: str, *, webhook: bool = False, wait_ready: bool = True, timeout: float = 90.0) -> Pod:
        """Render the chart for one more replica (its own ports), apply its RBAC, mint a token, run it."""
        ports = {"metrics.port": free_port(), "health.port": free_port(), "webhook.port": free_port()}
        webhook_values = {"webhook.enabled": str(webhook).lower()}
        if webhook:
            # The certificate as a mounted Secret (the chart's cert-manager path): the test puts its own one
            # for 127.0.0.1 there. The operator-managed certificate (the default) is covered by
            # tests/e2e/test_deterministic_install.py.
            webhook_values["webhook.certManager.enabled"] = "true"
        manifests = self.render(**{k: str(v) for k, v in ports.items()}, **webhook_values)
        account = self.install_rbac(manifests)
        (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
        template = PodTemplate.of(deployment)
        assert template.image == self.image.reference, "the chart renders the image by its digest"
        port, ca = kubeconfig_server(self.cluster)
        mount = ServiceAccountMount.write(
            self.directory / f"{identity}-sa", token=self.token(account), ca=ca, namespace=self.namespace
        )
        secrets = self._webhook_secret(template) if webhook else {}
        pod = Pod(f"{self.name}-{identity}", template, self.namespace, port, mount, secrets)
        self.pods.append(pod)
        pod.start()
        if wait_ready:
            self.wait_ready(pod, timeout=timeout)
        return pod

    def wait_ready(self, pod: Pod, timeout: float = 90.0) -> None:
        try:
            self.cluster.wait_for(lambda: pod.ready() or not pod.running() or None, timeout=timeout, message="ready")
        except AssertionError as error:
            raise AssertionError(f"{pod.name} not ready: {error}\n{pod.logs()}") from None
        assert pod.running(), f"{pod.name} exited:\n{pod.logs()}"

    # The webhook -------------------------------------------------------------------------------------

    def _webhook_secret(self, template: PodTemplate) -> dict[str, Path]:
        """A serving certificate for 127.0.0.1, as the files of the chart's Secret volume (mode 0444)."""
        volumes = {v["name"]: v for v in template.pod.get("volumes") or []}
        (volume,) = [m["name"] for m in template.container["volumeMounts"] if "secret" in volumes[m["name"]]]
        mount = self.directory / "webhook-tls"
        if not mount.exists():
            issued = issue_serving_certificate(self.directory / "webhook-ca", ips=("127.0.0.1",), dns_names=())
            mount.mkdir()
            for source, name in ((issued.cert, "tls.crt"), (issued.key, "tls.key"), (issued.ca_cert, "ca.crt")):
                (mount / name).write_bytes(source.read_bytes())
                (mount / name).chmod(0o444)
            mount.chmod(0o755)
        return {volume: mount}

    def register_webhook(self, pod: Pod, *, label: str) -> str:
        """A ValidatingWebhookConfiguration (failurePolicy Fail) for POD's webhook port over TLS, covering the
        namespaces labelled ``LABEL=<its name>``."""
        name = f"{pod.name}-webhook"
        ca_bundle = base64.b64encode((self.directory / "webhook-tls" / "ca.crt").read_bytes()).decode()
        manifest = validating_webhook_configuration(
            name,
            url=f"https://127.0.0.1:{pod.template.port('webhook')}/validate-scheduledjob",
            ca_bundle=ca_bundle,
            namespace_selector={"matchLabels": {label: name}},
        )
        self.cluster.apply(manifest)
        self.webhooks.append(name)
        return name

    # Teardown ----------------------------------------------------------------------------------------

    def close(self, *, show_logs: bool) -> None:
        for name in self.webhooks:
            self.cluster.kubectl("delete", "validatingwebhookconfiguration", name, "--ignore-not-found", check=False)
        for pod in self.pods:
            if show_logs:
                print(f"--- {pod.name}:\n{pod.logs()}")
            pod.remove()
        cluster_scoped = [m for m in self.applied if m["kind"].startswith("Cluster")]
        for manifest in cluster_scoped:
            kind, name = manifest["kind"].lower(), manifest["metadata"]["name"]
            self.cluster.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false", check=False)


def spec_env(pod: Pod) -> Mapping[str, str]:
    """The environment the container was started with."""
    config = pod.inspect().get("Config") or {}
    return dict(item.split("=", 1) for item in config.get("Env") or [])
