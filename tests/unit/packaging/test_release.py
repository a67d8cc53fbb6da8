"""What a release ships: one version (pyproject.toml's) for the package, the image tag and the chart, a
CHANGELOG entry for it, the Apache-2.0 LICENSE text, release notes that say when the image is not set,
and the SBOM generator (tools/image/sbom.py) on a small OCI archive made here."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from tests.unit.packaging.tools import helm_binary

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"


def _version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"image_{name}", ROOT / "tools" / "image" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_chart_version_and_app_version_are_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == _version()
    assert chart["appVersion"] == _version()


def test_the_image_is_labelled_and_tagged_with_the_package_version() -> None:
    metadata = _module("context").metadata(ROOT)
    assert metadata["VERSION"] == _version()
    assert re.fullmatch(r"([0-9a-f]{40}(-dirty)?|unknown)", metadata["REVISION"])
    assert int(metadata["SOURCE_DATE_EPOCH"]) > 0


def test_the_changelog_has_an_entry_for_the_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(_version())}\]", text, re.MULTILINE)


def test_the_license_is_the_full_apache_2_0_text() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == {"text": "Apache-2.0"}


def test_dist_is_not_committed() -> None:
    assert "dist/" in (ROOT / ".gitignore").read_text().split()


# Release notes ------------------------------------------------------------------------------------------


#: Renders NOTES.txt as a ConfigMap value: `helm template` leaves NOTES out, `helm install --dry-run` needs a cluster.
NOTES_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata: {name: notes}
data:
  notes: |
{{ tpl (.Files.Get "notes.txt") . | indent 4 }}
"""


def _notes(tmp_path: Path, *sets: str) -> str:
    chart = tmp_path / "chart"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "NOTES.txt").rename(chart / "notes.txt")
    (chart / "templates" / "zz-notes.yaml").write_text(NOTES_TEMPLATE)
    args = [helm_binary(), "template", "sundial", str(chart), "--namespace", "sundial-system"]
    args += ["--show-only", "templates/zz-notes.yaml"]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return str(yaml.safe_load(result.stdout)["data"]["notes"])


def test_the_release_notes_say_how_to_load_the_archives_image_while_it_is_the_default(tmp_path: Path) -> None:
    notes = _notes(tmp_path)
    version = _version()
    assert notes.lstrip().startswith(
        f"The operator image is localhost/sundial:{version}, the name inside the OCI archive"
    )
    assert "kind load image-archive <archive>" in notes and "ctr -n k8s.io images import <archive>" in notes
    assert "ImagePullBackOff" in notes and "image.repository" in notes


@pytest.mark.parametrize(
    "sets",
    [("image.repository=registry.example.com/sundial",), ("image.digest=sha256:" + "a" * 64,)],
    ids=["repository", "digest"],
)
def test_the_release_notes_do_not_warn_once_the_image_is_set(tmp_path: Path, sets: tuple[str, ...]) -> None:
    notes = _notes(tmp_path, *sets)
    assert "OCI archive" not in notes
    assert notes.lstrip().startswith("Sundial ")


# The SBOM -----------------------------------------------------------------------------------------------


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _oci_archive(path: Path, layers: list[dict[str, bytes]]) -> str:
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> dict[str, Any]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    config = {
        "created": "2026-01-01T00:00:00Z",
        "config": {"Labels": {"org.opencontainers.image.version": "9.9.9", "org.opencontainers.image.revision": "r"}},
    }
    manifest = {"config": blob(json.dumps(config).encode()), "layers": [blob(_tar(layer)) for layer in layers]}
    descriptor = blob(json.dumps(manifest).encode())
    files = {f"blobs/{d.replace(':', '/')}": data for d, data in blobs.items()}
    files["index.json"] = json.dumps({"manifests": [descriptor]}).encode()
    path.write_bytes(_tar(files))
    return str(descriptor["digest"])


SITE = "opt/sundial/lib/python3.11/site-packages"
STATUS = (
    b"Package: python3\nStatus: install ok installed\nVersion: 3.11.2-1+b1\nArchitecture: amd64\n"
    b"Maintainer: Matthias Klose <doko@debian.org>\n\n"
    b"Package: gone\nStatus: deinstall ok config-files\nVersion: 1\n"
)


def test_the_sbom_lists_the_images_debian_and_python_packages(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "kopf-1.45.2-py3-none-any.whl").write_bytes(b"kopf wheel")
    digest = _oci_archive(
        tmp_path / "image.oci.tar",
        [
            {"var/lib/dpkg/status": STATUS, f"{SITE}/old-1.0.dist-info/METADATA": b"Name: old\nVersion: 1.0\n"},
            {
                f"{SITE}/kopf-1.45.2.dist-info/METADATA": b"Name: kopf\nVersion: 1.45.2\nLicense: MIT\n",
                f"{SITE}/.wh.old-1.0.dist-info": b"",
            },
        ],
    )
    sbom = _module("sbom")
    document = sbom.sbom(sbom.read_image(tmp_path / "image.oci.tar"), wheels)
    assert document["bomFormat"] == "CycloneDX"
    assert document["metadata"]["component"]["version"] == "9.9.9"
    assert document["metadata"]["component"]["hashes"][0]["content"] == digest.split(":")[1]
    by_purl = {c["purl"]: c for c in document["components"]}
    assert set(by_purl) == {"pkg:pypi/kopf@1.45.2", "pkg:deb/debian/python3@3.11.2-1+b1?arch=amd64&distro=debian-12"}
    kopf = by_purl["pkg:pypi/kopf@1.45.2"]
    assert kopf["hashes"] == [{"alg": "SHA-256", "content": hashlib.sha256(b"kopf wheel").hexdigest()}]
    again = sbom.sbom(sbom.read_image(tmp_path / "image.oci.tar"), wheels)
    assert again == document, "the SBOM is deterministic"
