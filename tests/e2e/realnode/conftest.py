"""The real node (containerd + runc + kubelet, docs/sandbox.md §5) started beside the suite's kwok node, once
per session, and a pod template for it: its label and taint, the locally built shell image, never pulled.

It needs root (the bridge, mounts, cgroups) and Debian's containerd, runc and CNI plugins, which
``tools/controlplane/install-node.sh`` installs (apt-get); the tests skip, saying why, only when the machine
cannot have them (not root, or no apt-get and no containerd), or when the suite runs against an external
cluster (kind: its nodes are real already, the tests do not know its images).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tests.e2e.harness.cluster import REPO

from sundial_sandbox import REAL_NODE_LABEL, REAL_NODE_NAME

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster


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


@dataclass(frozen=True)
class OperatorImage:
    """The image ``make image`` builds, imported into the real node's containerd."""

    archive: Path
    repository: str
    digest: str


@dataclass(frozen=True)
class RealNode:
    name: str
    #: A Debian bookworm image with a shell (and python3), imported into the node's containerd.
    shell_image: str

    def pod_spec(self, script: str) -> dict[str, Any]:
        """A pod spec that runs ``sh -c SCRIPT`` once on the real node."""
        return {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "nodeSelector": {REAL_NODE_LABEL: "true"},
            "tolerations": [{"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "main",
                    "image": self.shell_image,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", script],
                }
            ],
        }


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "the real node needs root (a bridge, mounts and cgroups)"
    if shutil.which("containerd") is None and shutil.which("apt-get") is None:
        return "no containerd, and no apt-get for tools/controlplane/install-node.sh to install it"
    return None


@pytest.fixture(scope="session")
def real_node(cluster: Cluster) -> Iterator[RealNode]:
    if cluster.sandbox is None:
        pytest.skip("the real-node tests start the sandbox's real node; this suite runs against an external cluster")
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    sandbox = cluster.sandbox
    sandbox.start_real_node()
    try:
        yield RealNode(name=REAL_NODE_NAME, shell_image=sandbox.node.images["shell"])
    finally:
        left = sandbox.stop_real_node()
        assert left == [], f"the real node left behind: {left}"


@pytest.fixture(scope="session")
def node_operator_image(cluster: Cluster, real_node: RealNode) -> OperatorImage:
    """``tools/image/build.sh`` (cached by its inputs; ``SUNDIAL_E2E_IMAGE_ARCHIVE`` names an archive instead),
    imported into the real node's containerd by tag and by digest."""
    archive = image_archive()
    env = image_env(archive)
    repository = env["IMAGE"].rsplit(":", 1)[0]
    assert cluster.sandbox is not None
    references = cluster.sandbox.node.import_image(archive)
    assert f"{repository}@{env['DIGEST']}" in references, references
    return OperatorImage(archive=archive, repository=repository, digest=env["DIGEST"])


@pytest.fixture(scope="session")
def helm() -> str:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (REPO / "tools/helm/build.sh").read_text(), re.MULTILINE)
    assert version
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / version.group(1) / "helm"
    found = str(cached) if cached.is_file() else shutil.which("helm")
    if found is None:
        pytest.fail("helm not found: make helm (or set SUNDIAL_HELM)")
    return found
