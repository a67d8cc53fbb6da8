"""Fixtures of the image suite: the image (built by ``tools/image/build.sh`` or reused from its cache, once
per session, and loaded into podman's storage) and releases of the chart whose pods run from it.

``SUNDIAL_E2E_IMAGE_ARCHIVE=/path/to/sundial.oci.tar`` uses that archive instead of building.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .pods import podman
from .releases import REPO, OperatorImage, Release, image_archive, image_env

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster


@pytest.fixture(scope="session")
def operator_image() -> OperatorImage:
    archive = image_archive()
    env = image_env(archive)
    podman("load", "--quiet", "--input", str(archive), timeout=600)
    image = OperatorImage(archive=archive, digest=env["DIGEST"], version=env["VERSION"], revision=env["REVISION"])
    assert podman("image", "exists", image.reference, check=False).returncode == 0, image.reference
    return image


def _helm() -> str:
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


def new_namespace(cluster: Cluster, stem: str) -> str:
    name = f"e2e-{stem}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


class Releases:
    """``releases(directory) -> Release`` with its own namespaces; :meth:`close` removes what they made."""

    def __init__(self, cluster: Cluster, image: OperatorImage, directory: Path) -> None:
        self.cluster, self.image, self.directory = cluster, image, directory
        self.made: list[Release] = []

    def __call__(self) -> Release:
        directory = self.directory / f"release-{len(self.made)}"
        directory.mkdir(parents=True)
        release = Release(
            cluster=self.cluster, helm=_helm(), image=self.image, directory=directory,
            namespace=new_namespace(self.cluster, "image-op"), watch=new_namespace(self.cluster, "image-sj"),
        )  # fmt: skip
        self.made.append(release)
        return release

    def close(self, *, show_logs: bool) -> None:
        for release in self.made:
            release.close(show_logs=show_logs)
            for namespace in (release.namespace, release.watch):
                self.cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


@pytest.fixture(scope="module")
def releases(
    crds: None, cluster: Cluster, operator_image: OperatorImage, tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Releases]:  # fmt: skip
    made = Releases(cluster, operator_image, tmp_path_factory.mktemp("image"))
    yield made
    made.close(show_logs=bool(getattr(request.module, "_sundial_e2e_failed", False)))


def lease(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("lease", name, "-n", namespace) or {}
    return dict(body.get("spec") or {})
