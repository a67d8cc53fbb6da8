"""Command lines of the sandbox's etcd and kube-apiserver."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sundial_sandbox.certs import Pki

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int


def etcd_args(directory: Path, ports: Ports) -> list[str]:
    return [
        "--name=sandbox",
        f"--data-dir={directory / 'etcd-data'}",
        f"--listen-client-urls=http://127.0.0.1:{ports.etcd_client}",
        f"--advertise-client-urls=http://127.0.0.1:{ports.etcd_client}",
        f"--listen-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{ports.etcd_peer}",
        f"--initial-cluster=sandbox=http://127.0.0.1:{ports.etcd_peer}",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def admission_plugins_arg(plugins: Sequence[str]) -> list[str]:
    """The flag enabling PLUGINS besides the API server's default admission plugins (none: no flag)."""
    return [f"--enable-admission-plugins={','.join(plugins)}"] if plugins else []


def apiserver_args(ports: Ports, pki: Pki, *, admission_plugins: Sequence[str] = ()) -> list[str]:
    """kube-apiserver's command line; ADMISSION_PLUGINS are enabled besides its default ones (e.g.
    ``OwnerReferencesPermissionEnforcement``, which OpenShift enables)."""
    return [
        f"--etcd-servers=http://127.0.0.1:{ports.etcd_client}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki.admin_cert}",
        f"--tls-private-key-file={pki.admin_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--authorization-mode=RBAC",
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        # For the real node (docs/sandbox.md): dial kubelets at their InternalIP (never a DNS name) with the
        # admin certificate, which the kubelet checks against the sandbox CA; Service-routed webhooks and
        # aggregated APIs go to endpoint (pod) IPs, never to a ClusterIP, which no proxy routes here.
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki.admin_cert}",
        f"--kubelet-client-key={pki.admin_key}",
        "--enable-aggregator-routing=true",
        *admission_plugins_arg(admission_plugins),
    ]
