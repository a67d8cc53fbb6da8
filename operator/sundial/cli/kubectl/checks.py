"""The checks of ``kubectl sundial check``: each reads the cluster through kubectl and says ok or why not.

* **CRDs**: ``scheduledjobs.sundial.dev`` and ``schedulecalendars.sundial.dev`` exist and are Established.
* **operator**: a Deployment labelled ``app.kubernetes.io/name=sundial`` has a ready replica; if none, the
  waiting reason of its pods (``ImagePullBackOff``, ``CrashLoopBackOff``, ...) and kubectl's message.
* **webhook**: a server-side dry run (nothing is stored) of a ScheduledJob whose schedule can never fire
  (``0 0 30 2 *``, which the CRD's rules cannot see) is refused by ``validate.scheduledjobs.sundial.dev``;
  admitted means no replica answered (``failurePolicy: Ignore`` admits unchecked) or no webhook is installed.
* **fencing**: the ValidatingAdmissionPolicy ``*-fencing`` and its binding exist, the shard Leases carry the
  label its binding selects, and no replica reported ``FencingNotEnforced`` on them (docs/fencing.md).
* **Leases**: every shard Lease (``--shards`` of the operator, 1 by default) has a holder whose renewal is
  younger than the Lease's duration.

Imports the model's names (the label and Event reason the operator writes): loaded when the command runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sundial.cli.kubectl.runner import (
    INSTALL_HINT,
    OPERATOR_SELECTOR,
    RESOURCE,
    Kubectl,
    LoginError,
    PluginError,
    UnreachableError,
)
from sundial.model import names
from sundial.schedule import ScheduleError, parse_rfc3339

CRDS = (RESOURCE, "schedulecalendars.sundial.dev")
WEBHOOK = "validate.scheduledjobs.sundial.dev"
#: A schedule the webhook refuses (February has no 30th) and the CRD's schema and CEL rules cannot see.
NEVER = "0 0 30 2 *"
NOT_ENFORCED = "FencingNotEnforced"


@dataclass(frozen=True)
class Result:
    """One check: its name, whether it passed and why (or what it found)."""

    name: str
    ok: bool
    reason: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'failed':<7} {self.name}: {self.reason}"

    def document(self) -> dict[str, Any]:
        return {"check": self.name, "ok": self.ok, "reason": self.reason}


@dataclass
class Operator:
    """An operator Deployment found by its label, with what the Lease checks need from its flags."""

    namespace: str
    name: str
    ready: int
    replicas: int
    shards: int = 1
    lease_prefix: str = "sundial"
    flags: dict[str, str] = field(default_factory=dict)


def operators(kubectl: Kubectl) -> list[Operator]:
    """The Deployments labelled :data:`OPERATOR_SELECTOR` in every namespace."""
    listing = kubectl.get_json("deployments", "--all-namespaces", "-l", OPERATOR_SELECTOR, namespaced=False)
    found = []
    for deployment in listing.get("items") or []:
        spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
        flags = dict(arg.removeprefix("--").partition("=")[::2] for arg in containers[0].get("args") or [])
        found.append(
            Operator(
                namespace=deployment["metadata"]["namespace"],
                name=deployment["metadata"]["name"],
                ready=int(status.get("readyReplicas") or 0),
                replicas=int(spec.get("replicas", 1)),
                shards=int(flags.get("shards") or 1),
                lease_prefix=flags.get("lease-name-prefix") or "sundial",
                flags=flags,
            )
        )
    return found


def crds(kubectl: Kubectl) -> Result:
    problems, fine = [], []
    for crd in CRDS:
        try:
            body = kubectl.get_json("customresourcedefinition", crd, namespaced=False)
        except PluginError as error:
            if "NotFound" in str(error) or "not found" in str(error):
                problems.append(f"{crd} is not installed")
                continue
            raise
        conditions = {c.get("type"): c for c in (body.get("status") or {}).get("conditions") or []}
        established = conditions.get("Established") or {}
        if established.get("status") == "True":
            fine.append(crd)
        else:
            problems.append(f"{crd} is not Established ({established.get('message') or 'no condition yet'})")
    if problems:
        return Result("CRDs", ok=False, reason=f"{'; '.join(problems)}; {INSTALL_HINT}")
    return Result("CRDs", ok=True, reason=f"{', '.join(fine)} established")


def _pod_problems(kubectl: Kubectl, operator: Operator) -> list[str]:
    """Why the operator's pods are not ready, as the kubelet says it (the waiting or last terminated reason)."""
    listing = kubectl.get_json("pods", f"--namespace={operator.namespace}", "-l", OPERATOR_SELECTOR, namespaced=False)
    problems = []
    for pod in listing.get("items") or []:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        for container in statuses:
            state = container.get("state") or {}
            waiting = state.get("waiting") or {}
            last = (container.get("lastState") or {}).get("terminated") or {}
            if waiting.get("reason"):
                detail = waiting.get("message") or last.get("reason") or ""
                problems.append(
                    f"pod {pod['metadata']['name']}: {waiting['reason']}" + (f" ({detail})" if detail else "")
                )
        if not statuses:
            phase = (pod.get("status") or {}).get("phase", "Unknown")
            unscheduled: Mapping[str, Any] = next(
                (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"),
                {},
            )
            reason = unscheduled.get("message") if unscheduled.get("status") == "False" else ""
            problems.append(f"pod {pod['metadata']['name']}: {phase}" + (f" ({reason})" if reason else ""))
    return problems


def operator_ready(kubectl: Kubectl, found: Sequence[Operator]) -> Result:
    if not found:
        return Result("operator", ok=False, reason=f"no Deployment labelled {OPERATOR_SELECTOR}; {INSTALL_HINT}")
    ready = [o for o in found if o.ready > 0]
    if ready:
        shown = ", ".join(f"{o.namespace}/{o.name} {o.ready}/{o.replicas} ready" for o in ready)
        return Result("operator", ok=True, reason=shown)
    reasons = []
    for operator in found:
        problems = _pod_problems(kubectl, operator) or ["no pod yet"]
        reasons.append(f"{operator.namespace}/{operator.name} 0/{operator.replicas} ready: {'; '.join(problems)}")
    return Result("operator", ok=False, reason="; ".join(reasons))


def _probe_object(namespace: str | None) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}
    metadata: dict[str, Any] = {"generateName": "sundial-check-"}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": metadata,
        "spec": {"schedule": NEVER, "jobTemplate": template},
    }


def webhook(kubectl: Kubectl) -> Result:
    probe = json.dumps(_probe_object(None))
    where = f"in namespace {kubectl.namespace}" if kubectl.namespace else "in the current namespace"
    try:
        kubectl.run("create", "--dry-run=server", "-o", "name", "-f", "-", stdin=probe)
    except (UnreachableError, LoginError):
        raise
    except PluginError as error:
        message = str(error)
        if f'admission webhook "{WEBHOOK}" denied the request' in message:
            return Result("webhook", ok=True, reason=f"{WEBHOOK} answers (refused a dry run with schedule {NEVER!r})")
        return Result("webhook", ok=False, reason=f"a dry run {where} failed: {message}")
    return Result(
        "webhook",
        ok=False,
        reason=(
            f"a dry run {where} with schedule {NEVER!r} was admitted: no operator replica answered "
            "(failurePolicy Ignore admits unchecked writes), the webhook is not installed (webhook.enabled=false), "
            "or it does not cover this namespace (the operator's own namespace never is)"
        ),
    )


def _leases(kubectl: Kubectl, operator: Operator) -> list[dict[str, Any]]:
    listing = kubectl.get_json(
        "leases", f"--namespace={operator.namespace}", "-l", names.SHARD_LEASE_LABEL, namespaced=False
    )
    prefix = f"{operator.lease_prefix}-shard-"
    return [lease for lease in listing.get("items") or [] if lease["metadata"]["name"].startswith(prefix)]


def fencing(kubectl: Kubectl, found: Sequence[Operator]) -> Result:
    if not found:
        return Result("fencing", ok=False, reason="no operator found")
    policies = kubectl.get_json("validatingadmissionpolicies", namespaced=False).get("items") or []
    bindings = kubectl.get_json("validatingadmissionpolicybindings", namespaced=False).get("items") or []
    fencing_policies = [p["metadata"]["name"] for p in policies if p["metadata"]["name"].endswith("-fencing")]
    if not fencing_policies:
        return Result(
            "fencing",
            ok=False,
            reason="no ValidatingAdmissionPolicy *-fencing: fencing.policy.enabled=false or config/fencing left out "
            "(a stale replica's writes are not refused by the API server; docs/fencing.md)",
        )
    bound = {b.get("spec", {}).get("policyName") for b in bindings}
    unbound = [name for name in fencing_policies if name not in bound]
    if unbound:
        return Result("fencing", ok=False, reason=f"policy {', '.join(unbound)} has no binding")
    problems = []
    for operator in found:
        leases = _leases(kubectl, operator)
        if not leases:
            problems.append(f"{operator.namespace}: no labelled shard Lease yet (nothing is refused until one exists)")
            continue
        events = kubectl.get_json(
            "events", f"--namespace={operator.namespace}", f"--field-selector=reason={NOT_ENFORCED}", namespaced=False
        )
        held = {lease["metadata"]["name"] for lease in leases}
        reported = [e for e in events.get("items") or [] if (e.get("involvedObject") or {}).get("name") in held]
        if reported:
            problems.append(f"{operator.namespace}: {NOT_ENFORCED}: {reported[-1].get('message', '')}")
    if problems:
        return Result("fencing", ok=False, reason="; ".join(problems))
    return Result("fencing", ok=True, reason=f"policy {', '.join(fencing_policies)} bound; shard Leases labelled")


def _renewed(lease: Mapping[str, Any]) -> datetime | None:
    value = (lease.get("spec") or {}).get("renewTime")
    try:
        return parse_rfc3339(value, field="renewTime") if isinstance(value, str) else None
    except ScheduleError:
        return None


def leases(kubectl: Kubectl, found: Sequence[Operator], *, now: datetime) -> Result:
    if not found:
        return Result("Leases", ok=False, reason="no operator found")
    problems, held = [], 0
    wanted = 0
    for operator in found:
        by_name = {lease["metadata"]["name"]: lease for lease in _leases(kubectl, operator)}
        for shard in range(operator.shards):
            wanted += 1
            name = f"{operator.lease_prefix}-shard-{shard}"
            lease = by_name.get(name)
            spec = (lease or {}).get("spec") or {}
            renewed = _renewed(lease or {})
            duration = timedelta(seconds=float(spec.get("leaseDurationSeconds") or 15))
            if lease is None:
                problems.append(f"{operator.namespace}/{name} does not exist")
            elif not spec.get("holderIdentity"):
                problems.append(f"{operator.namespace}/{name} has no holder")
            elif renewed is None or now - renewed > duration:
                problems.append(f"{operator.namespace}/{name} held by {spec['holderIdentity']} but not renewed")
            else:
                held += 1
    if problems:
        return Result("Leases", ok=False, reason=f"{held} of {wanted} shard Leases held: {'; '.join(problems)}")
    return Result("Leases", ok=True, reason=f"{held} of {wanted} shard Leases held")


def run_all(kubectl: Kubectl, *, now: datetime) -> list[Result]:
    """Every check, in order; a check that cannot be read (no permission, say) fails with kubectl's message.
    An unreachable cluster or a refused login ends the round: every later check would say the same."""
    results: list[Result] = []
    found: list[Operator] = []

    def attempt(name: str, check: Callable[[], Result]) -> None:
        try:
            results.append(check())
        except PluginError as error:
            if isinstance(error, UnreachableError | LoginError):
                raise
            results.append(Result(name, ok=False, reason=str(error)))

    def find() -> Result:
        found.extend(operators(kubectl))
        return operator_ready(kubectl, found)

    try:
        attempt("CRDs", lambda: crds(kubectl))
        attempt("operator", find)
        attempt("webhook", lambda: webhook(kubectl))
        attempt("fencing", lambda: fencing(kubectl, found))
        attempt("Leases", lambda: leases(kubectl, found, now=now))
    except (UnreachableError, LoginError) as error:
        results.append(Result("cluster", ok=False, reason=str(error)))
    return results
