"""config/krew/sundial.yaml is a well-formed krew plugin manifest for this version of the plugin."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import sundial

ROOT = Path(__file__).resolve().parents[3]
PLACEHOLDER_SHA256 = "0" * 64


def test_the_krew_manifest_describes_this_plugin() -> None:
    manifest = yaml.safe_load((ROOT / "config" / "krew" / "sundial.yaml").read_text())
    assert (manifest["apiVersion"], manifest["kind"]) == ("krew.googlecontainertools.github.com/v1alpha2", "Plugin")
    assert manifest["metadata"]["name"] == "sundial"
    spec = manifest["spec"]
    assert spec["version"] == f"v{sundial.__version__}"
    assert len(spec["shortDescription"]) <= 50
    selectors = set()
    for platform in spec["platforms"]:
        labels = platform["selector"]["matchLabels"]
        selectors.add((labels["os"], labels["arch"]))
        assert spec["version"] in platform["uri"] and f"{labels['os']}_{labels['arch']}" in platform["uri"]
        assert re.fullmatch(r"[0-9a-f]{64}", platform["sha256"])
        assert platform["bin"] == "kubectl-sundial"
        assert {f["from"] for f in platform["files"]} >= {"kubectl-sundial", "kubectl_complete-sundial", "LICENSE"}
    assert {"linux", "darwin"} <= {os for os, _ in selectors}
    assert len(selectors) == len(spec["platforms"])


def test_the_placeholder_checksum_is_documented() -> None:
    text = (ROOT / "config" / "krew" / "sundial.yaml").read_text()
    if PLACEHOLDER_SHA256 in text:
        assert "PLACEHOLDERS" in text and "sha256sum" in text
