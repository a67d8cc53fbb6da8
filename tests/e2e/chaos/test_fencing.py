"""The chart's server-side fencing policy against the real API server (docs/fencing.md, issue 14 item 3).

Two pods of the operator's ServiceAccount, ``replica-a`` and ``replica-b``, write with pod-bound tokens while
the shard Leases say who holds what; every rule of the policy is exercised with kubectl:

* a Job create, a ScheduledJob status update and an Event create or patch under a token older than the
  Lease's ``leaseTransitions`` are refused (403 Forbidden, ``sundial.dev/fenced``); under the current token
  (or a newer one) they pass; an Event patch must carry the writer's token (the Event may be older);
* a Job delete by a pod that does not hold the Job's shard Lease is refused, by the holder it passes;
* other users (the admin), writes without a token, another release's Leases (another prefix, the same
  labels) and a namespace without labelled Leases are not fenced;
* the ``sundial.dev/shard`` label is the operator's (``<fullname>-fencing-label``): a real tenant with ``edit``
  (a client certificate from the sandbox CA) may not create a Job carrying it, nor add, change or remove it,
  and still edits and deletes its Jobs otherwise; the relabel before a delete (``ObjectsApi.delete_job``, the
  operator's own code) is refused under a zombie's stale token, and the delete is bound to the Job's
  ``resourceVersion``.

The operator end to end (a write in flight across a takeover, refused and counted) is the zombie test in
``test_faults.py``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.tenancy.users import user_kubeconfig

from sundial.kube import connections, errors, objects, ratelimits, requests, results
from sundial.model import names

from .fencing import ServerFencing, helm

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

PREFIX = "fenced"
FENCED = "sundial.dev/fenced:"


@pytest.fixture
def fencing(cluster: Any, namespace: str, tmp_path: Path) -> Iterator[ServerFencing]:
    binary = helm()
    if binary is None:
        pytest.skip("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
    from sundial_sandbox import install_crds  # noqa: PLC0415 - only where the sandbox runs

    install_crds(cluster.kubeconfig, Path(__file__).resolve().parents[3] / "crds")
    installed = ServerFencing(cluster, namespace, namespace, PREFIX, tmp_path).install(binary)
    try:
        yield installed
    finally:
        installed.close()


def _lease(name: str, shard: str, holder: str, transitions: int) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "labels": {names.SHARD_LEASE_LABEL: shard}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "leaseTransitions": transitions},
    }


def _job(name: str, token: str | None, *, label: bool = True) -> dict[str, Any]:
    """A Job as the operator makes it: the token annotation and (LABEL) the token's shard as its label."""
    metadata: dict[str, Any] = {"name": name}
    if token is not None:
        if label:
            metadata["labels"] = {names.SHARD_LABEL: names.token_shard(token)}
        metadata["annotations"] = {names.FENCING_TOKEN_ANNOTATION: token}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "x"}]}}},
    }


def _event(name: str, token: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "annotations": {names.FENCING_TOKEN_ANNOTATION: token}},
        "involvedObject": {"kind": "ScheduledJob", "name": "x", "namespace": namespace},
        "reason": "Test",
        "message": "m",
        "type": "Normal",
    }


class As:
    """kubectl as one replica (its pod-bound token), in the test namespace."""

    def __init__(self, cluster: Any, kubeconfig: Path, namespace: str) -> None:
        self.cluster, self.kubeconfig, self.namespace = cluster, kubeconfig, namespace

    def run(self, *args: str, body: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(
            f"--kubeconfig={self.kubeconfig}", "-n", self.namespace, *args,
            input=None if body is None else json.dumps(body), check=False,
        )  # fmt: skip

    def create(self, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return self.run("create", "-f", "-", body=body)


def _refused(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode != 0 and "Forbidden" in result.stderr and FENCED in result.stderr


def _passed(result: subprocess.CompletedProcess[str]) -> bool:
    assert result.returncode == 0, result.stderr
    return True


def test_the_api_server_refuses_stale_tokens_and_deletes_by_a_non_holder(
    cluster: Any, namespace: str, fencing: ServerFencing
) -> None:
    ns = namespace
    a = As(cluster, fencing.kubeconfig("replica-a"), ns)
    b = As(cluster, fencing.kubeconfig("replica-b"), ns)
    whoami = json.loads(a.run("auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert whoami["username"] == fencing.user
    assert whoami["extra"]["authentication.kubernetes.io/pod-name"] == ["replica-a"]
    cluster.apply(_lease(f"{PREFIX}-shard-0", "0", "replica-b", 5), ns)
    cluster.apply(_lease(f"{PREFIX}-shard-1", "1", "replica-a", 2), ns)
    cluster.apply(_lease("other-release-shard-0", "0", "someone", 99), ns)  # not ours: never consulted
    u0, u1 = (cluster.get_json("lease", f"{PREFIX}-shard-{i}", "-n", ns)["metadata"]["uid"] for i in (0, 1))

    def t0(transitions: int) -> str:
        return names.fencing_token(0, transitions, u0)

    def t1(transitions: int) -> str:
        return names.fencing_token(1, transitions, old_u1)

    old_u1 = u1

    def admitted(result: subprocess.CompletedProcess[str]) -> bool:
        return result.returncode == 0 or FENCED not in result.stderr  # the policy may still be loading

    cluster.wait_for(lambda: _refused(a.create(_job("probe", t0(1)))), timeout=30, message="the policy in force")

    # Job creates: the token's transitions against the shard Lease's.
    assert _refused(a.create(_job("stale", t0(4))))
    assert _refused(b.create(_job("stale-1", t1(1))))
    assert _passed(b.create(_job("current", t0(5))))
    assert _passed(a.create(_job("newer", t0(6))))
    assert _passed(a.create(_job("current-1", t1(2))))
    assert _passed(a.create(_job("untokened", None)))
    admin = json.dumps(_job("admin", t0(1), label=False))  # the label is the operator's (the test below)
    assert _passed(cluster.kubectl("create", "-n", ns, "-f", "-", input=admin, check=False))

    # ScheduledJob status updates: status.fencingToken.
    cluster.apply(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": _job("x", None)["spec"]}},
        },
        ns,
    )

    def status(token: str) -> subprocess.CompletedProcess[str]:
        patch = json.dumps({"status": {"fencingToken": token}})
        return a.run("patch", "scheduledjob", "nightly", "--subresource=status", "--type=merge", "-p", patch)

    assert _refused(status(t0(4)))
    assert _passed(status(t0(5)))
    stored = cluster.get_json("scheduledjob", "nightly", "-n", ns)
    assert stored["status"]["fencingToken"] == t0(5)

    # Events: the create, and every patch (which must carry the patcher's token).
    assert _refused(a.create(_event("stale-event", t0(4), ns)))
    assert _passed(a.create(_event("series", t0(5), ns)))
    cluster.kubectl("patch", "lease", f"{PREFIX}-shard-0", "-n", ns, "--type=merge",
                    "-p", '{"spec": {"leaseTransitions": 6}}')  # fmt: skip
    assert _refused(a.run("patch", "event", "series", "--type=merge", "-p", '{"count": 2}'))
    token = json.dumps({"count": 2, "metadata": {"annotations": {names.FENCING_TOKEN_ANNOTATION: t0(6)}}})
    assert _passed(a.run("patch", "event", "series", "--type=merge", "-p", token))

    # Job deletes: only the holder of the Job's shard Lease (replica-b holds shard 0, replica-a shard 1).
    assert _refused(a.run("delete", "job", "current", "--wait=false"))
    assert _passed(b.run("delete", "job", "current", "--wait=false"))
    assert _refused(b.run("delete", "job", "current-1", "--wait=false"))
    assert _passed(a.run("delete", "job", "current-1", "--wait=false"))
    assert admitted(a.run("delete", "job", "untokened", "--wait=false"))

    # Exactly the policy's own denial (what sundial.kube.errors.is_fenced matches, --fencing-policy).
    refused = a.create(_job("stale-again", t0(4)))
    message = refused.stderr.split('error when creating "STDIN": ', 1)[-1].strip()
    assert errors.is_fenced(errors.Status(code=403, reason="Forbidden", message=message), policy=fencing.policy_name)
    assert not errors.is_fenced(errors.Status(code=403, reason="Forbidden", message=message), policy="other-fencing")

    # Tokens without the Lease UID (the old form) are refused unless fencing.policy.acceptLegacyTokens.
    assert _refused(a.create(_job("legacy", "0-6")))

    # A deleted and recreated Lease (leaseTransitions back to 0) refuses every token of the old one.
    cluster.kubectl("delete", "lease", f"{PREFIX}-shard-1", "-n", ns)
    cluster.apply(_lease(f"{PREFIX}-shard-1", "1", "replica-a", 0), ns)
    u1 = cluster.get_json("lease", f"{PREFIX}-shard-1", "-n", ns)["metadata"]["uid"]
    cluster.wait_for(lambda: _refused(a.create(_job("old-lease", t1(3)))), timeout=30,
                     message="the recreated Lease in force")  # fmt: skip
    assert _refused(a.create(_job("old-lease-2", t1(2))))  # the old Lease's UID (t1 still names it)
    assert _passed(a.create(_job("new-lease", names.fencing_token(1, 0, u1))))

    # Without a labelled Lease (a fresh install, Leases not yet relabelled by an upgraded replica): allowed.
    cluster.kubectl("label", "lease", "-n", ns, "--all", f"{names.SHARD_LEASE_LABEL}-")
    cluster.wait_for(lambda: a.create(_job("unfenced", t0(1))).returncode == 0, timeout=30, message="no params")


class _Sent:
    """The requests ``ObjectsApi`` sent, as ``verb code`` (the Requester's metrics hook)."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        self.requests.append(f"{verb} {code}")


def _delete_as(
    kubeconfig: Path, namespace: str, name: str, uid: str, sent: _Sent | None = None, **how: str
) -> results.DeleteResult:
    """``ObjectsApi.delete_job`` (the operator's own relabel-then-delete) with a replica's credentials."""

    async def delete() -> results.DeleteResult:
        api_client = connections.api_client(await connections.load_configuration(kubeconfig))
        try:
            bucket = ratelimits.TokenBucket(rate=100.0, burst=100)
            api = objects.ObjectsApi(api_client=api_client, requester=requests.Requester(bucket=bucket, observer=sent))
            return await api.delete_job(namespace=namespace, name=name, uid=uid, **how)
        finally:
            await api_client.close()

    return asyncio.run(delete())


def test_only_the_operator_writes_the_shard_label_and_its_relabel_is_fenced(
    cluster: Any, namespace: str, fencing: ServerFencing, tmp_path: Path
) -> None:
    ns, shard = namespace, names.SHARD_LABEL
    a = As(cluster, fencing.kubeconfig("replica-a"), ns)
    b = As(cluster, fencing.kubeconfig("replica-b"), ns)
    cluster.kubectl("create", "rolebinding", "tenant-edit", "--clusterrole=edit", "--user=tenant", "-n", ns)
    tenant = As(cluster, user_kubeconfig(cluster, user="tenant", directory=tmp_path / "users"), ns)
    cluster.apply(_lease(f"{PREFIX}-shard-0", "0", "replica-b", 5), ns)
    cluster.apply(_lease(f"{PREFIX}-shard-1", "1", "replica-a", 2), ns)
    u0, u1 = (cluster.get_json("lease", f"{PREFIX}-shard-{i}", "-n", ns)["metadata"]["uid"] for i in (0, 1))
    policy = f"ValidatingAdmissionPolicy '{fencing.label_policy_name}'"

    def label_refused(result: subprocess.CompletedProcess[str], doing: str) -> bool:
        message = result.stderr
        return result.returncode != 0 and policy in message and f"{doing} the label {shard}:" in message

    cluster.wait_for(lambda: _refused(a.create(_job("probe", names.fencing_token(0, 1, u0)))), timeout=30,
                     message="the fencing policy in force")  # fmt: skip
    creating = "may not create a Job carrying"
    cluster.wait_for(lambda: label_refused(tenant.create(_job("forged", names.fencing_token(0, 5, u0))), creating),
                     timeout=30, message="the label policy in force")  # fmt: skip

    # A tenant with edit: no Job carrying the label, no change to it on any Job; other edits and deletes pass.
    changing = "may not add, change or remove"
    assert _passed(b.create(_job("made", names.fencing_token(0, 5, u0))))  # the operator's Job, shard 0
    assert _passed(tenant.create(_job("own", None)))
    assert label_refused(tenant.run("label", "job", "made", "--overwrite", f"{shard}=1"), changing)
    assert label_refused(tenant.run("label", "job", "made", f"{shard}-"), f"user tenant {changing}")
    assert label_refused(tenant.run("label", "job", "own", f"{shard}=0"), changing)
    replace = cluster.get_json("job", "made", "-n", ns)
    del replace["metadata"]["labels"][shard]
    del replace["metadata"]["resourceVersion"]  # an unconditional PUT: the job controller writes status meanwhile
    assert label_refused(tenant.run("replace", "-f", "-", body=replace), changing)  # a PUT without it
    assert label_refused(cluster.kubectl("label", "job", "made", "-n", ns, "--overwrite", f"{shard}=1", check=False),
                         changing)  # the admin too: only the operator  # fmt: skip
    assert _passed(tenant.run("label", "job", "made", "team=a"))
    assert _passed(tenant.run("annotate", "job", "made", "note=edited"))
    assert _passed(tenant.run("patch", "job", "made", "--type=merge", "-p", '{"spec": {"parallelism": 2}}'))
    assert _passed(tenant.run("delete", "job", "own", "--wait=false"))
    made = cluster.get_json("job", "made", "-n", ns)["metadata"]
    assert made["labels"][shard] == "0"

    # The delete is bound to the Job as the deleter saw it: the API server answers a change since with a 409,
    # and delete_job reads the Job again and deletes what that read showed.
    seen, sent = made["resourceVersion"], _Sent()
    assert _passed(tenant.run("annotate", "job", "made", "--overwrite", "note=again"))
    assert _delete_as(b.kubeconfig, ns, "made", made["uid"], sent, resource_version=seen, label="0", shard="0",
                      token=names.fencing_token(0, 5, u0)) == results.Done()  # fmt: skip
    assert sent.requests[:2] == ["delete 409", "get 200"], sent.requests
    assert sent.requests[-1] == "delete 200", sent.requests
    cluster.wait_for(lambda: cluster.get_json("job", "made", "-n", ns) is None, timeout=30, message="made deleted")

    # A Job whose label a --shards change left stale: made for shard 1 (replica-a), its owner now in shard 0
    # (replica-b). Its delete is checked against Lease 1, so the holder of shard 0 is refused ...
    assert _passed(a.create(_job("moved", names.fencing_token(1, 2, u1))))
    moved = cluster.get_json("job", "moved", "-n", ns)["metadata"]
    assert _refused(b.run("delete", "job", "moved", "--wait=false"))
    # ... a zombie (shard 0's token from before the Lease's last transition) may not relabel it ...
    with pytest.raises(errors.ForbiddenError, match=FENCED):
        _delete_as(a.kubeconfig, ns, "moved", moved["uid"], resource_version=moved["resourceVersion"], label="1",
                   shard="0", token=names.fencing_token(0, 4, u0))  # fmt: skip
    with pytest.raises(errors.ForbiddenError, match=FENCED):  # nor under another Lease's UID (one recreated)
        _delete_as(b.kubeconfig, ns, "moved", moved["uid"], label="1", shard="0", token=names.fencing_token(0, 5, u1))
    assert cluster.get_json("job", "moved", "-n", ns)["metadata"]["labels"][shard] == "1"

    # ... and the holder relabels it under its current token and deletes what the relabel wrote.
    sent = _Sent()
    deleted = _delete_as(b.kubeconfig, ns, "moved", moved["uid"], sent, resource_version=moved["resourceVersion"],
                         label="1", shard="0", token=names.fencing_token(0, 5, u0))  # fmt: skip
    assert deleted == results.Done()
    assert sent.requests[0] == "patch 200" and sent.requests[-1] == "delete 200", sent.requests
    cluster.wait_for(lambda: cluster.get_json("job", "moved", "-n", ns) is None, timeout=30, message="moved deleted")


def test_an_operator_outside_the_policys_reach_reports_fencing_not_enforced(
    cluster: Any, namespace: str, start_operator: Any
) -> None:
    """As after a kustomize overlay whose namespace the policy's matchCondition and paramRef do not name: the
    operator's dry-run probe at acquire is admitted, so it reports ``sundial_fencing_enforced{shard="0"} 0``,
    logs it and writes a FencingNotEnforced Warning Event on the Lease."""
    operator = start_operator("--fencing-policy", "sundial-fencing", namespaces=[namespace])
    [lease] = operator.lease_names

    def gauge() -> str:
        return next((line for line in operator.metrics().splitlines()
                     if line.startswith('sundial_fencing_enforced{shard="0"}')), "")  # fmt: skip

    cluster.wait_for(lambda: gauge().endswith(" 0.0"), timeout=60, message="sundial_fencing_enforced 0")

    def warned() -> bool:
        selector = f"--field-selector=involvedObject.name={lease},reason=FencingNotEnforced"
        listing = cluster.get_json("events", "-n", operator.lease_namespace, selector)
        return any(item.get("type") == "Warning" for item in (listing or {}).get("items") or [])

    cluster.wait_for(warned, timeout=30, message="a FencingNotEnforced Warning Event on the Lease")
    assert "NOT enforced" in operator.log.read_text()
