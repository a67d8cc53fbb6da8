"""The admission webhook under test: a ``sundial run --webhook-port`` operator behind a namespace-scoped
ValidatingWebhookConfiguration (:class:`AdmissionWebhook`), made and deleted by an
:class:`AdmissionWebhookLauncher` (the ``start_admission_webhook`` fixture)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sundial_sandbox.webhook import issue_serving_certificate, validating_webhook_configuration

from .cluster import BUSYBOX_IMAGE, Cluster, WaitTimeoutError
from .operators import Operator, OperatorLauncher, free_port

#: Namespaces labelled with this key (value: a webhook's token) are covered by that e2e webhook only:
#: a ``failurePolicy: Fail`` webhook must never refuse other tests' objects while its operator is down.
WEBHOOK_NAMESPACE_LABEL = "e2e.sundial.dev/admission-webhook"
#: Where the operator validates ScheduledJobs (``sundial.runtime.serving.admission.WEBHOOK_PATH``).
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
