"""The real node's configuration keeps every path it can inside its directory, never routes pods anywhere but
the node's subnet and the Service CIDR, never pulls, and its clean-up removes only what appeared after start."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from sundial_sandbox import hostpaths
from sundial_sandbox.nodeconfig import (
    NODE_IP,
    REAL_NODE_LABEL,
    SERVICE_CIDR,
    SUBNET,
    NodePaths,
    cni_config,
    containerd_config,
    kubelet_config,
    write_registry_hosts,
)


@pytest.fixture
def paths(tmp_path: Path) -> NodePaths:
    return NodePaths(tmp_path / "node")


def test_the_kubelet_runs_on_cgroup_v1_with_cgroupfs_on_the_bridge_with_the_real_node_taint(paths: NodePaths) -> None:
    config = yaml.safe_load(kubelet_config(paths, Path("/ca.crt"), 10250, 10248, "n"))
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["address"] == NODE_IP
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["registerWithTaints"] == [{"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}]
    for key in ("podLogsDir", "volumePluginDir"):
        assert Path(config[key]).is_relative_to(paths.directory), key
    assert config["containerRuntimeEndpoint"] == f"unix://{paths.socket}"


def test_pods_get_no_default_route_and_no_masquerading(paths: NodePaths) -> None:
    [bridge] = json.loads(cni_config(paths))["plugins"]
    assert bridge["isGateway"] is False and bridge["ipMasq"] is False
    assert bridge["ipam"]["routes"] == [{"dst": SERVICE_CIDR, "gw": NODE_IP}]
    assert bridge["ipam"]["ranges"][0][0]["subnet"] == SUBNET
    assert Path(bridge["ipam"]["dataDir"]).is_relative_to(paths.directory)


def test_containerd_keeps_its_files_in_the_node_directory_and_never_pulls(paths: NodePaths) -> None:
    text = containerd_config(paths, "localhost/pause:1")
    quoted = re.findall(r'^\s*(?:root|state|path|address|conf_dir|config_path) = "([^"]*)"', text, re.MULTILINE)
    assert quoted and all(Path(p).is_relative_to(paths.directory) for p in quoted if p), quoted
    assert 'sandbox_image = "localhost/pause:1"' in text
    write_registry_hosts(paths)
    hosts = list(paths.registry_hosts.glob("*/hosts.toml"))
    assert {h.parent.name for h in hosts} >= {"docker.io", "registry.k8s.io"}
    assert all('server = "http://127.0.0.1:9"' in h.read_text() for h in hosts)


def test_restore_removes_only_the_host_paths_that_appeared_after_the_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = tmp_path / "was-there", tmp_path / "appeared"
    old.mkdir()
    monkeypatch.setattr(hostpaths, "HOST_PATHS", (str(old), str(new)))
    monkeypatch.setattr(hostpaths, "_CGROUP_ROOT", tmp_path / "no-cgroups")
    monkeypatch.setattr(hostpaths, "_NETNS", tmp_path / "no-netns")
    before = hostpaths.snapshot()
    (new / "device-plugins").mkdir(parents=True)
    (old / "kept").write_text("x")
    assert hostpaths.restore(before, deadline=0.0) == []
    assert not new.exists()
    assert (old / "kept").read_text() == "x"
