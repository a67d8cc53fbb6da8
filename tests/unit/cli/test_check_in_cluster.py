"""``kubectl sundial check --in-cluster`` (the chart's ``helm test`` pod): the checks read through Sundial's own
client (:class:`sundial.kube.installreads.InstallReads`) instead of kubectl; its failures become the plugin's
(unreachable, a refused token, or the server's message), kubectl's global flags are refused with it, and outside
a pod it says so."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.unit.cli.conftest import NOW, InstalledCluster

from sundial.cli.kubectl import checks, clusterreads, main
from sundial.kube import connections, errors, installreads


class FakeInstallReads:
    """:class:`InstallReads` answering from an :class:`InstalledCluster`'s parts; ``failure`` is raised instead."""

    def __init__(self, cluster: InstalledCluster) -> None:
        self.cluster = cluster
        self.failure: errors.KubeError | None = None
        self.dry_runs: list[tuple[str, Mapping[str, Any]]] = []

    def _fail(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def crd(self, name: str) -> dict[str, Any] | None:
        self._fail()
        return self.cluster.crds.get(name)

    async def items(self, listing: installreads.Listing, **_: Any) -> list[dict[str, Any]]:
        self._fail()
        found: list[dict[str, Any]] = self.cluster._get((listing.value,))["items"]
        return found

    async def dry_run_create(self, *, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self._fail()
        self.dry_runs.append((namespace, body))
        message = 'admission webhook "validate.scheduledjobs.sundial.dev" denied the request: <redacted>'
        raise errors.InvalidError(code=400, reason="BadRequest", message=message)


@pytest.fixture
def api() -> Iterator[tuple[clusterreads.ApiReads, FakeInstallReads]]:
    loop = asyncio.new_event_loop()
    fake = FakeInstallReads(InstalledCluster())
    try:
        yield clusterreads.ApiReads(loop, fake, namespace="team-a"), fake
    finally:
        loop.close()


def test_every_check_passes_through_sundials_own_client(api: tuple[clusterreads.ApiReads, FakeInstallReads]) -> None:
    reads, fake = api
    results = checks.run_all(reads, now=NOW)
    assert [(r.name, r.ok) for r in results] == [
        ("CRDs", True), ("operator", True), ("webhook", True), ("fencing", True), ("Leases", True)
    ]  # fmt: skip
    [(namespace, probe)] = fake.dry_runs
    assert namespace == "team-a" and probe["spec"]["schedule"] == checks.NEVER


def test_an_unreachable_api_server_is_one_failed_line(api: tuple[clusterreads.ApiReads, FakeInstallReads]) -> None:
    reads, fake = api
    fake.failure = errors.TransientError(code=0, reason="ClientConnectorError", message="connect: connection refused")
    results = checks.run_all(reads, now=NOW)
    assert [(r.name, r.ok, r.reason) for r in results] == [
        ("cluster", False, "the cluster is unreachable: connect: connection refused")
    ]


def test_a_refused_token_says_so(api: tuple[clusterreads.ApiReads, FakeInstallReads]) -> None:
    reads, fake = api
    fake.failure = errors.KubeError(code=401, reason="Unauthorized", message="Unauthorized")
    [result] = checks.run_all(reads, now=NOW)
    assert result.reason == "the cluster refused the pod's service account token: Unauthorized"


def test_a_forbidden_read_fails_its_check_with_the_servers_message(
    api: tuple[clusterreads.ApiReads, FakeInstallReads],
) -> None:
    reads, fake = api
    message = 'deployments.apps is forbidden: User "system:serviceaccount:s:c" cannot list resource "deployments"'
    fake.failure = errors.ForbiddenError(code=403, reason="Forbidden", message=message)
    results = {r.name: r for r in checks.run_all(reads, now=NOW)}
    assert not results["operator"].ok and results["operator"].reason == message


def test_kubectls_global_flags_are_refused_with_in_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["check", "--in-cluster", "--context=prod"]) == 1
    assert "--in-cluster uses the pod's service account; not with --context=prod" in capsys.readouterr().err


def test_outside_a_pod_in_cluster_says_so(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    assert main.main(["check", "--in-cluster", "-n", "team-a"]) == 1
    assert "error: not in a pod with a service account" in capsys.readouterr().err


def test_the_pods_namespace_is_read_from_the_service_account_mount(tmp_path: Path) -> None:
    mount = tmp_path / "namespace"
    mount.write_text("sundial-system\n")
    assert installreads.pod_namespace(mount) == "sundial-system"
    with pytest.raises(connections.LoginError, match="not in a pod"):
        installreads.pod_namespace(tmp_path / "missing")


def test_an_operator_whose_pods_cannot_be_read_is_still_named_not_ready(
    api: tuple[clusterreads.ApiReads, FakeInstallReads],
) -> None:
    reads, fake = api
    fake.cluster.deployment["status"] = {}
    original = fake.items

    async def no_pods(listing: installreads.Listing, **options: Any) -> list[dict[str, Any]]:
        if listing is installreads.Listing.PODS:
            raise errors.ForbiddenError(code=403, reason="Forbidden", message="pods is forbidden")
        return await original(listing, **options)

    fake.items = no_pods  # type: ignore[method-assign]
    results = {r.name: r for r in checks.run_all(reads, now=NOW)}
    assert results["operator"].reason == (
        "sundial-system/sundial 0/2 ready: its pods are not readable here (pods is forbidden)"
    )
