"""``kubectl sundial check``: each of its five lines fails, naming the cause, when its part of the install is
broken, and passes when it works; ``--wait`` checks again until all pass or the time is over; the exit code
says whether all passed."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from tests.unit.cli.conftest import NOW, REFUSED, InstalledCluster

from sundial.cli.kubectl import check, checks, clusterreads, main, runner

Checked = Callable[..., tuple[int, str, str]]


@pytest.fixture
def checked(capsys: pytest.CaptureFixture[str]) -> Checked:
    """Run ``kubectl sundial check ARGS`` against a fake cluster with a clock that moves only when it sleeps."""

    def go(cluster: InstalledCluster, *argv: str, heal_after: int | None = None) -> tuple[int, str, str]:
        args = main.build_parser().parse_args(["check", *argv])
        clock = [NOW]
        sleeps = []

        def sleep(seconds: float) -> None:
            sleeps.append(seconds)
            clock[0] += timedelta(seconds=seconds)
            if heal_after is not None and len(sleeps) == heal_after:
                cluster.deployment["status"]["readyReplicas"] = 1
                cluster.webhook = "refuses"

        code = check.run(args, cluster, lambda: clock[0], sleep)  # type: ignore[arg-type]
        out, err = capsys.readouterr()
        return code, out, err

    return go


def _lines(out: str) -> dict[str, str]:
    return {line.split(":")[0].split()[-1]: line for line in out.splitlines()}


def test_a_working_install_passes_every_check(checked: Checked) -> None:
    cluster = InstalledCluster()
    code, out, _ = checked(cluster)
    lines = _lines(out)
    assert code == 0
    assert list(lines) == ["CRDs", "operator", "webhook", "fencing", "Leases"]
    assert all(line.startswith("ok ") for line in lines.values())
    assert "sundial-system/sundial 2/2 ready" in lines["operator"]
    assert "2 of 2 shard Leases held" in lines["Leases"]
    probe = json.loads(cluster.stdin[0])
    assert probe["spec"]["schedule"] == checks.NEVER and probe["metadata"]["generateName"] == "sundial-check-"
    assert ("create", "--dry-run=server", "-o", "name", "-f", "-") in cluster.calls  # nothing is stored


def test_missing_crds_say_how_to_install(checked: Checked) -> None:
    cluster = InstalledCluster()
    del cluster.crds["schedulecalendars.sundial.dev"]
    cluster.crds["scheduledjobs.sundial.dev"]["status"]["conditions"][0] |= {"status": "False", "message": "naming"}
    code, out, _ = checked(cluster)
    line = _lines(out)["CRDs"]
    assert code == 1 and line.startswith("failed ")
    assert "schedulecalendars.sundial.dev is not installed" in line
    assert "scheduledjobs.sundial.dev is not Established (naming)" in line
    assert "helm install sundial" in line


def test_an_operator_that_cannot_start_is_named_with_the_kubelets_reason(checked: Checked) -> None:
    cluster = InstalledCluster()
    cluster.deployment["status"] = {}
    cluster.pods = [
        {
            "metadata": {"name": "sundial-abc"},
            "status": {
                "containerStatuses": [
                    {"state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling "x"'}}}
                ]
            },
        }
    ]
    code, out, _ = checked(cluster)
    line = _lines(out)["operator"]
    assert code == 1
    assert line == (
        'failed  operator: sundial-system/sundial 0/2 ready: pod sundial-abc: ImagePullBackOff (Back-off pulling "x")'
    )


def test_a_webhook_that_admits_the_impossible_schedule_is_not_answering(checked: Checked) -> None:
    cluster = InstalledCluster()
    cluster.webhook = "admits"
    code, out, _ = checked(cluster)
    line = _lines(out)["webhook"]
    assert code == 1 and "was admitted: no operator replica answered" in line and "team-a" in line
    cluster.webhook = (
        'Internal error occurred: failed calling webhook "validate.scheduledjobs.sundial.dev": '
        'no endpoints available for service "sundial-webhook"'
    )
    assert "no endpoints available" in _lines(checked(cluster)[1])["webhook"]


def test_fencing_fails_without_its_policy_binding_labelled_leases_or_when_reported_not_enforced(
    checked: Checked,
) -> None:
    cluster = InstalledCluster()
    cluster.policies = ["sundial-fencing-label"]
    assert "no ValidatingAdmissionPolicy *-fencing" in _lines(checked(cluster)[1])["fencing"]
    cluster = InstalledCluster()
    cluster.bindings = []
    assert "policy sundial-fencing has no binding" in _lines(checked(cluster)[1])["fencing"]
    cluster = InstalledCluster()
    cluster.events = [{"involvedObject": {"name": "sundial-shard-1"}, "message": "the probe was admitted"}]
    line = _lines(checked(cluster)[1])["fencing"]
    assert line.startswith("failed ") and "FencingNotEnforced: the probe was admitted" in line


def test_leases_without_a_holder_or_a_fresh_renewal_fail(checked: Checked) -> None:
    cluster = InstalledCluster()
    cluster.leases[0]["spec"].pop("holderIdentity")
    cluster.leases[1]["spec"]["renewTime"] = "2027-03-26T23:59:00.000000Z"  # a minute before NOW, 15 s Leases
    line = _lines(checked(cluster)[1])["Leases"]
    assert line.startswith("failed  Leases: 0 of 2 shard Leases held")
    assert "sundial-shard-0 has no holder" in line and "sundial-shard-1 held by sundial-1 but not renewed" in line
    cluster = InstalledCluster()
    cluster.leases.pop()
    assert "sundial-system/sundial-shard-1 does not exist" in _lines(checked(cluster)[1])["Leases"]


def test_wait_checks_again_until_every_check_passes(checked: Checked) -> None:
    cluster = InstalledCluster()
    cluster.deployment["status"] = {}
    cluster.webhook = "admits"
    code, out, _ = checked(cluster, "--wait", "1m", heal_after=3)
    assert code == 0 and all(line.startswith("ok ") for line in out.splitlines())


def test_wait_gives_up_at_its_deadline_with_exit_code_1(checked: Checked) -> None:
    cluster = InstalledCluster()
    cluster.webhook = "admits"
    code, out, err = checked(cluster, "--wait", "10s")
    assert code == 1 and "failed  webhook" in out
    assert err == "error: not every check passed within 10s\n"
    rounds = sum(call[:2] == ("create", "--dry-run=server") for call in cluster.calls)
    assert rounds == 6  # at 0, 2, 4, 6, 8 and 10 s


def test_an_invalid_wait_names_the_flag(checked: Checked) -> None:
    with pytest.raises(runner.PluginError, match="--wait"):
        checked(InstalledCluster(), "--wait", "soon")


def test_an_unreachable_cluster_is_one_failed_line(checked: Checked) -> None:
    class Unreachable(InstalledCluster):
        def run(self, *args: str, namespaced: bool = True, stdin: str | None = None) -> str:
            raise runner.failure(REFUSED, 1)

    code, out, _ = checked(Unreachable())
    assert code == 1
    assert out.splitlines() == [
        "failed  cluster: the cluster is unreachable: The connection to the server 127.0.0.1:1 was refused - "
        "did you specify the right host or port?"
    ]


def test_json_output_lists_each_check(checked: Checked) -> None:
    found: list[dict[str, Any]] = json.loads(checked(InstalledCluster(), "-o", "json")[1])
    assert [(c["check"], c["ok"]) for c in found] == [
        ("CRDs", True), ("operator", True), ("webhook", True), ("fencing", True), ("Leases", True)
    ]  # fmt: skip


def test_the_renewal_is_compared_with_the_injected_clock() -> None:
    reads = clusterreads.KubectlReads(InstalledCluster())  # type: ignore[arg-type]
    later = NOW + timedelta(seconds=16)
    assert not checks.leases(reads, checks.operators(reads), now=later).ok
    assert checks.leases(reads, checks.operators(reads), now=NOW + timedelta(seconds=14)).ok
