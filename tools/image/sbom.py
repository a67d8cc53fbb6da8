"""A CycloneDX 1.5 SBOM (JSON) of the operator image, read from the OCI archive itself: every Debian
package of its dpkg database and every Python distribution of its virtualenv, each with its purl, and for
the Python ones the SHA-256 of the locked wheel that was installed (found among the downloaded wheels).

Deterministic: the serial number is derived from the image digest and the timestamp is the image's
creation time (SOURCE_DATE_EPOCH), so the same image always gives the same SBOM.

Usage: python3 tools/image/sbom.py ARCHIVE WHEELS_DIR > sbom.cdx.json
"""

from __future__ import annotations

import email.parser
import hashlib
import io
import json
import re
import sys
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SITE_PACKAGES = re.compile(r"^opt/sundial/lib/python3\.\d+/site-packages/([^/]+)\.dist-info/METADATA$")
DPKG_STATUS = "var/lib/dpkg/status"
WHITEOUT = ".wh."


@dataclass(frozen=True)
class Image:
    digest: str
    created: str
    version: str
    revision: str
    files: dict[str, bytes]
    """The final content of the files the SBOM reads (later layers win, whiteouts remove)."""


def _blob(archive: tarfile.TarFile, digest: str) -> bytes:
    member = archive.extractfile("blobs/" + digest.replace(":", "/"))
    assert member is not None, digest
    return member.read()


def _wanted(name: str) -> bool:
    return name == DPKG_STATUS or SITE_PACKAGES.match(name) is not None


def _layer_files(data: bytes) -> Iterator[tuple[str, bytes | None]]:
    """(path, content) for wanted files of one layer; (path, None) for a whiteout."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as layer:
        for member in layer:
            name = member.name.lstrip("./")
            base = name.rsplit("/", 1)[-1]
            if base.startswith(WHITEOUT):
                parent = name.rpartition("/")[0]
                target = base[len(WHITEOUT) :]
                yield (f"{parent}/{target}" if parent else target), None
            elif member.isfile() and _wanted(name):
                handle = layer.extractfile(member)
                assert handle is not None
                yield name, handle.read()


def read_image(path: Path) -> Image:
    with tarfile.open(path) as archive:
        index = json.loads(archive.extractfile("index.json").read())  # type: ignore[union-attr]
        (descriptor,) = index["manifests"]
        manifest = json.loads(_blob(archive, descriptor["digest"]))
        config = json.loads(_blob(archive, manifest["config"]["digest"]))
        files: dict[str, bytes] = {}
        for layer in manifest["layers"]:
            for name, content in _layer_files(_blob(archive, layer["digest"])):
                if content is None:
                    files = {k: v for k, v in files.items() if k != name and not k.startswith(name + "/")}
                else:
                    files[name] = content
    labels = (config.get("config") or {}).get("Labels") or {}
    return Image(
        digest=str(descriptor["digest"]),
        created=str(labels.get("org.opencontainers.image.created") or config.get("created")),
        version=str(labels.get("org.opencontainers.image.version", "")),
        revision=str(labels.get("org.opencontainers.image.revision", "")),
        files=files,
    )


def debian_packages(status: bytes) -> list[dict[str, Any]]:
    components = []
    for paragraph in status.decode("utf-8", "replace").split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", paragraph, re.MULTILINE))
        if "Package" not in fields or "installed" not in fields.get("Status", ""):
            continue
        name, version, arch = fields["Package"], fields["Version"], fields.get("Architecture", "all")
        component: dict[str, Any] = {
            "type": "library" if name.startswith("lib") else "application",
            "bom-ref": f"pkg:deb/debian/{name}@{version}?arch={arch}",
            "name": name,
            "version": version,
            "purl": f"pkg:deb/debian/{name}@{version}?arch={arch}&distro=debian-12",
        }
        if fields.get("Maintainer"):
            component["supplier"] = {"name": fields["Maintainer"]}
        components.append(component)
    return components


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_hashes(directory: Path) -> dict[tuple[str, str], str]:
    """(normalized name, version) -> SHA-256 of the wheel in DIRECTORY."""
    out = {}
    for wheel in sorted(directory.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        out[(_normalize(name), version)] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    return out


def python_packages(image: Image, hashes: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    components = []
    for path, content in sorted(image.files.items()):
        if not SITE_PACKAGES.match(path):
            continue
        metadata = email.parser.Parser().parsestr(content.decode("utf-8", "replace"), headersonly=True)
        name, version = str(metadata["Name"]), str(metadata["Version"])
        component: dict[str, Any] = {
            "type": "library",
            "bom-ref": f"pkg:pypi/{_normalize(name)}@{version}",
            "name": name,
            "version": version,
            "purl": f"pkg:pypi/{_normalize(name)}@{version}",
        }
        if metadata["License"] and len(str(metadata["License"])) < 80:
            component["licenses"] = [{"license": {"name": str(metadata["License"])}}]
        digest = hashes.get((_normalize(name), version))
        if digest:
            component["hashes"] = [{"alg": "SHA-256", "content": digest}]
        components.append(component)
    return components


def sbom(image: Image, wheels: Path) -> dict[str, Any]:
    components = python_packages(image, wheel_hashes(wheels))
    if DPKG_STATUS in image.files:
        components += debian_packages(image.files[DPKG_STATUS])
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'sundial-image:' + image.digest)}",
        "version": 1,
        "metadata": {
            "timestamp": image.created,
            "tools": {"components": [{"type": "application", "name": "sundial tools/image/sbom.py"}]},
            "component": {
                "type": "container",
                "bom-ref": f"sundial@{image.digest}",
                "name": "sundial",
                "version": image.version,
                "hashes": [{"alg": "SHA-256", "content": image.digest.split(":", 1)[1]}],
                "licenses": [{"license": {"id": "Apache-2.0"}}],
                "properties": [{"name": "org.opencontainers.image.revision", "value": image.revision}],
            },
        },
        "components": sorted(components, key=lambda c: str(c["bom-ref"])),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    document = sbom(read_image(Path(argv[1])), Path(argv[2]))
    json.dump(document, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
