"""The chart's operator pod as a podman container: what ``helm template charts/sundial`` renders for the
Deployment (image, args, env, probes, securityContext, volumes, grace period) turned into the ``podman run``
flags a kubelet's equivalent would be, with the ServiceAccount's token, CA and namespace mounted at the
in-cluster path and ``KUBERNETES_SERVICE_HOST``/``_PORT`` set as the kubelet sets them. No kubeconfig.

podman runs with runc (crun cannot run on these cgroup-v1 "hybrid" hosts), host networking (the sandbox API
server is on 127.0.0.1, and so are the container's ports) and the two ``--ulimit`` flags podman's defaults
need here (they are above the machine's hard limits otherwise).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUNC = "/usr/sbin/runc"
PODMAN_ULIMITS = ("--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096")
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
RBAC_KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
_VARIABLE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def podman(*args: str, check: bool = True, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("podman")
    assert binary, "podman is not installed (make image installs it: tools/image/install-tools.sh)"
    result = subprocess.run([binary, *args], capture_output=True, text=True, check=False, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
    return result


@dataclass(frozen=True)
class PodTemplate:
    """The operator Deployment's pod template, as rendered."""

    pod: Mapping[str, Any]
    container: Mapping[str, Any]

    @classmethod
    def of(cls, deployment: Mapping[str, Any]) -> PodTemplate:
        pod = deployment["spec"]["template"]["spec"]
        (container,) = [c for c in pod["containers"] if c["name"] == "operator"]
        return cls(pod=pod, container=container)

    @property
    def image(self) -> str:
        return str(self.container["image"])

    @property
    def grace_seconds(self) -> int:
        return int(self.pod.get("terminationGracePeriodSeconds", 30))

    def port(self, name_or_number: str | int) -> int:
        if isinstance(name_or_number, int):
            return name_or_number
        ports = {p["name"]: int(p["containerPort"]) for p in self.container.get("ports") or []}
        return ports[name_or_number]

    def probe_url(self, probe: str) -> str:
        get = self.container[probe]["httpGet"]
        return f"http://127.0.0.1:{self.port(get['port'])}{get['path']}"

    def security(self) -> dict[str, Any]:
        """The container's securityContext over the pod's (the container's fields win, as in Kubernetes)."""
        merged = {k: v for k, v in (self.pod.get("securityContext") or {}).items() if k != "fsGroup"}
        merged.update(self.container.get("securityContext") or {})
        return merged


def environment(template: PodTemplate, *, namespace: str, pod_name: str) -> dict[str, str]:
    """The container's env as the kubelet resolves it (only the fieldRefs the chart uses are supported)."""
    fields = {"metadata.namespace": namespace, "metadata.name": pod_name}
    env: dict[str, str] = {}
    for entry in template.container.get("env") or []:
        if "value" in entry:
            env[entry["name"]] = _VARIABLE.sub(lambda m: env.get(m.group(1), m.group(0)), str(entry["value"]))
            continue
        path = ((entry.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        assert path in fields, f"env {entry['name']}: unsupported source {entry.get('valueFrom')}"
        env[entry["name"]] = fields[path]
    return env


def expand(args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``$(VAR)`` references in args, expanded from the container's env like the kubelet does."""
    return [_VARIABLE.sub(lambda m: env.get(m.group(1), m.group(0)), arg) for arg in args]


def _size(quantity: str) -> str:
    number, unit = re.fullmatch(r"(\d+)([KMG]i)?", quantity).groups()  # type: ignore[union-attr]
    return number + {"Ki": "k", "Mi": "m", "Gi": "g", None: ""}[unit]


def security_flags(template: PodTemplate, image_user: str) -> list[str]:
    security = template.security()
    flags = []
    if "runAsUser" in security:
        user = str(security["runAsUser"])
        flags += ["--user", f"{user}:{security['runAsGroup']}" if "runAsGroup" in security else user]
    if security.get("runAsNonRoot"):
        effective = str(security.get("runAsUser", image_user.split(":", maxsplit=1)[0]))
        assert effective not in ("", "0", "root"), f"runAsNonRoot, but the container would run as {effective!r}"
    if security.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]
    if "ALL" in ((security.get("capabilities") or {}).get("drop") or []):
        flags += ["--cap-drop=all"]
    assert not (security.get("capabilities") or {}).get("add"), "capabilities.add is not translated"
    if security.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt=no-new-privileges"]
    assert not security.get("privileged")
    return flags


def volume_flags(template: PodTemplate, secrets: Mapping[str, Path]) -> list[str]:
    """emptyDir -> a tmpfs of its sizeLimit; secret -> the directory SECRETS names for that volume."""
    volumes = {v["name"]: v for v in template.pod.get("volumes") or []}
    flags = []
    for mount in template.container.get("volumeMounts") or []:
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            limit = (volume["emptyDir"] or {}).get("sizeLimit")
            options = "rw,mode=1777" + (f",size={_size(limit)}" if limit else "")
            flags += ["--tmpfs", f"{mount['mountPath']}:{options}"]
        elif "secret" in volume:
            source = secrets[mount["name"]]
            flags += ["--volume", f"{source}:{mount['mountPath']}:ro"]
        else:
            raise AssertionError(f"volume {mount['name']}: kind not translated: {volume}")
    return flags


@dataclass(frozen=True)
class ServiceAccountMount:
    """Token (TokenRequest), CA and namespace files, as the kubelet projects them (mode 0644)."""

    directory: Path

    @classmethod
    def write(cls, directory: Path, *, token: str, ca: bytes, namespace: str) -> ServiceAccountMount:
        directory.mkdir(parents=True, exist_ok=True)
        for name, content in (("token", token.encode()), ("ca.crt", ca), ("namespace", namespace.encode())):
            (directory / name).write_bytes(content)
            (directory / name).chmod(0o644)
        directory.chmod(0o755)
        return cls(directory)


@dataclass
class Pod:
    """One replica: the rendered pod template run as a detached podman container named NAME."""

    name: str
    template: PodTemplate
    namespace: str
    api_port: int
    service_account: ServiceAccountMount
    secrets: Mapping[str, Path] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)

    def podman_args(self) -> list[str]:
        env = environment(self.template, namespace=self.namespace, pod_name=self.name)
        env |= {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(self.api_port)}
        image_user = podman("image", "inspect", "--format", "{{.Config.User}}", self.template.image).stdout.strip()
        args = ["--runtime", RUNC, "run", "--detach", "--name", self.name, "--pull=never", "--network=host"]
        args += [*PODMAN_ULIMITS, *security_flags(self.template, image_user)]
        args += volume_flags(self.template, self.secrets)
        if self.template.pod.get("automountServiceAccountToken", True):
            args += ["--volume", f"{self.service_account.directory}:{SERVICE_ACCOUNT_DIR}:ro"]
        for key, value in sorted(env.items()):
            args += ["--env", f"{key}={value}"]
        return [*args, self.template.image, *expand(self.template.container.get("args") or [], env)]

    def start(self) -> None:
        self.command = self.podman_args()
        podman(*self.command)

    def inspect(self) -> dict[str, Any]:
        result = podman("container", "inspect", self.name, check=False)
        if result.returncode != 0:
            return {}
        (state,) = json.loads(result.stdout)
        return dict(state)

    def running(self) -> bool:
        return bool((self.inspect().get("State") or {}).get("Running"))

    def probe(self, probe: str = "readinessProbe") -> int:
        """HTTP status of the rendered probe (``readinessProbe``/``livenessProbe``); 0 when nothing answers."""
        try:
            with urllib.request.urlopen(self.template.probe_url(probe), timeout=3) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return 0

    def ready(self) -> bool:
        return self.running() and self.probe("readinessProbe") == 200

    def metrics(self) -> str:
        url = f"http://127.0.0.1:{self.template.port('metrics')}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())

    def terminate(self) -> int:
        """What the kubelet does to a pod being replaced: SIGTERM, SIGKILL after the grace period. Exit code."""
        grace = self.template.grace_seconds
        podman("stop", "--time", str(grace), self.name, timeout=grace + 60)
        return int((self.inspect().get("State") or {}).get("ExitCode", -1))

    def logs(self, tail: int = 80) -> str:
        result = podman("logs", "--tail", str(tail), self.name, check=False)
        return result.stdout + result.stderr

    def remove(self) -> None:
        podman("rm", "--force", "--time", "0", self.name, check=False)
