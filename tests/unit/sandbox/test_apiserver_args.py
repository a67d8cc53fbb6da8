"""The sandbox's kube-apiserver command line: admission plugins besides the defaults only when asked."""

from __future__ import annotations

from pathlib import Path

from sundial_sandbox.args import Ports, apiserver_args
from sundial_sandbox.certs import Pki

PORTS = Ports(etcd_client=1, etcd_peer=2, apiserver=3, controller_manager=4, scheduler=5, kwok=6)


def _enabled(args: list[str]) -> list[str]:
    return [arg for arg in args if arg.startswith("--enable-admission-plugins")]


def test_the_default_adds_no_admission_plugin(tmp_path: Path) -> None:
    assert _enabled(apiserver_args(PORTS, Pki(tmp_path))) == []


def test_asked_plugins_are_enabled_besides_the_defaults(tmp_path: Path) -> None:
    args = apiserver_args(PORTS, Pki(tmp_path), admission_plugins=("OwnerReferencesPermissionEnforcement", "X"))
    assert _enabled(args) == ["--enable-admission-plugins=OwnerReferencesPermissionEnforcement,X"]
    assert not [arg for arg in args if arg.startswith("--admission-control") or arg.startswith("--disable-admission")]
