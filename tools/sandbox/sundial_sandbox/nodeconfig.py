"""The real node's configuration files: containerd's, the CNI network's and the kubelet's.

Every path the kubelet and containerd can be told about points inside the node's directory; the few they
hard-code (see :mod:`sundial_sandbox.hostpaths`) are removed when the node stops. The pod network is a
bridge the sandbox creates with the node's IP on it and no default route in the pods: a pod reaches the
node's subnet and nothing else, so no traffic can leave the machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

#: The real node's label and taint key: pods meant for it select the label and tolerate the taint, so
#: nothing aimed at kwok's node lands there (and nothing aimed at it lands on kwok's).
REAL_NODE_LABEL = "sandbox.sundial.dev/real-node"
#: The bridge the sandbox creates (one real node per machine) and its subnet; the node IP is its .1.
BRIDGE = "sundial-rn0"
SUBNET = "10.89.77.0/24"
NODE_IP = "10.89.77.1"
#: The sandbox's Service CIDR (the API server's --service-cluster-ip-range) and the ``kubernetes`` Service's
#: ClusterIP in it: pods route the CIDR to the node, which owns that one address (a relay to the API server,
#: :mod:`sundial_sandbox.serviceproxy`) and makes the rest of the CIDR unreachable.
SERVICE_CIDR = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"
#: Registry hosts containerd could be asked to pull from; each is pointed at a closed loopback port, so a
#: missing image fails at once instead of going out (images are imported, never pulled).
_BLOCKED_REGISTRIES = ("docker.io", "registry.k8s.io", "ghcr.io", "quay.io", "gcr.io", "localhost")


@dataclass(frozen=True)
class NodePaths:
    """Where the real node's files live (all under DIRECTORY)."""

    directory: Path

    @property
    def containerd_root(self) -> Path:
        return self.directory / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.directory / "containerd" / "state"

    @property
    def containerd_config(self) -> Path:
        return self.directory / "containerd" / "config.toml"

    @property
    def socket(self) -> Path:
        return self.directory / "containerd" / "containerd.sock"

    @property
    def registry_hosts(self) -> Path:
        return self.directory / "containerd" / "certs.d"

    @property
    def cni_conf_dir(self) -> Path:
        return self.directory / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.directory / "cni" / "ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.directory / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.directory / "kubelet-config.yaml"

    @property
    def kubelet_kubeconfig(self) -> Path:
        return self.directory / "kubelet.kubeconfig"

    @property
    def state(self) -> Path:
        return self.directory / "state.json"


def containerd_config(paths: NodePaths, pause_image: str) -> str:
    """containerd 1.6 configuration (version 2) for the CRI plugin with runc and the bridge network."""
    d = paths.directory / "containerd"
    return f"""\
version = 2
root = "{paths.containerd_root}"
state = "{paths.containerd_state}"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "{paths.socket}"
[ttrpc]
  address = "{paths.socket}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_image}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = true
  max_container_log_line_size = 16384
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{paths.cni_conf_dir}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{paths.registry_hosts}"
"""


def write_registry_hosts(paths: NodePaths) -> None:
    """hosts.toml files sending every registry the pods could name to a closed loopback port."""
    for host in _BLOCKED_REGISTRIES:
        directory = paths.registry_hosts / host
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "hosts.toml").write_text(
            'server = "http://127.0.0.1:9"\n\n[host."http://127.0.0.1:9"]\n  capabilities = ["pull", "resolve"]\n',
            encoding="utf-8",
        )


def cni_config(paths: NodePaths) -> str:
    """A bridge network on :data:`BRIDGE` (host-local addresses, no default route, no masquerading; the
    Service CIDR routed to the node)."""
    network = {
        "cniVersion": "0.4.0",
        "name": "sundial-sandbox",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": SUBNET, "rangeStart": SUBNET.replace(".0/24", ".10")}]],
                    "routes": [{"dst": SERVICE_CIDR, "gw": NODE_IP}],
                    "dataDir": str(paths.cni_ipam_dir),
                },
            }
        ],
    }
    return json.dumps(network, indent=2)


def kubelet_config(paths: NodePaths, ca_cert: Path, port: int, healthz_port: int, name: str) -> str:
    """KubeletConfiguration for this machine: cgroup v1 with cgroupfs, x509 client authentication by the
    sandbox CA (the API server presents its admin certificate), the real-node taint, no DNS."""
    config = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        "address": NODE_IP,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca_cert)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": f"unix://{paths.socket}",
        "podLogsDir": str(paths.directory / "pod-logs"),
        "volumePluginDir": str(paths.directory / "volume-plugins"),
        "resolvConf": "",
        "registerWithTaints": [{"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}],
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        "maxPods": 50,
        "providerID": f"sundial-sandbox://{name}",
    }
    return yaml.safe_dump(config, sort_keys=False)
