"""install_crds waits for Established by polling, not with ``kubectl wait`` (which fails at once when the new
CRD has no status.conditions yet - the race CI hit). A fake kubectl (a shell script) plays the API server."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sundial_sandbox.crds import CrdError, install_crds

NAME = "customresourcedefinition.apiextensions.k8s.io/scheduledjobs.sundial.dev"


def fake_kubectl(tmp_path: Path, *, established_after: int, apply_fails: bool = False) -> Path:
    """A kubectl whose ``get`` reports no conditions for the first ESTABLISHED_AFTER calls, then True."""
    counter = tmp_path / "gets"
    counter.write_text("0")
    script = tmp_path / "kubectl"
    script.write_text(
        f"""#!/bin/sh
echo "$@" >> {tmp_path}/calls
case "$2" in
  apply)
    {"echo 'error: the server is unavailable' >&2; exit 1" if apply_fails else f"echo {NAME}"} ;;
  get)
    n=$(cat {counter}); n=$((n+1)); echo $n > {counter}
    if [ $n -gt {established_after} ]; then printf True; fi ;;
esac
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_polls_until_established_instead_of_failing_on_missing_conditions(tmp_path: Path) -> None:
    kubectl = fake_kubectl(tmp_path, established_after=3)
    clock = FakeClock()
    names = install_crds(tmp_path / "kubeconfig", tmp_path, kubectl=str(kubectl), clock=clock, sleep=clock.sleep)
    assert names == [NAME]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0].startswith(f"--kubeconfig={tmp_path / 'kubeconfig'} apply --server-side --force-conflicts")
    assert sum(" get " in f" {c} " for c in calls) == 4  # three "not yet" answers, then True
    assert not any(" wait " in f" {c} " for c in calls)


def test_times_out_naming_the_crd(tmp_path: Path) -> None:
    kubectl = fake_kubectl(tmp_path, established_after=10_000)
    clock = FakeClock()
    with pytest.raises(CrdError, match=r"scheduledjobs\.sundial\.dev not Established after 5 s: Established=\(not set"):
        install_crds(tmp_path / "kc", tmp_path, timeout=5, kubectl=str(kubectl), clock=clock, sleep=clock.sleep)
    assert clock.now >= 5


def test_apply_failure_carries_kubectls_message(tmp_path: Path) -> None:
    kubectl = fake_kubectl(tmp_path, established_after=0, apply_fails=True)
    with pytest.raises(CrdError, match="the server is unavailable"):
        install_crds(tmp_path / "kc", tmp_path, kubectl=str(kubectl))
