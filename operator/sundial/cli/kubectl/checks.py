"""The checks of ``kubectl sundial check``: each reads the cluster (:class:`Reads`: through kubectl, or through
Sundial's own client in a pod, :mod:`.clusterreads`) and says ok or why not.

* **CRDs**: ``scheduledjobs.sundial.dev`` and ``schedulecalendars.sundial.dev`` exist and are Established.
* **operator**: a Deployment labelled ``app.kubernetes.io/name=sundial`` has a ready replica; if none, the
  waiting reason of its pods (``ImagePullBackOff``, ``CrashLoopBackOff``, ...) and the server's message.
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sundial.cli.kubectl.runner import (
    INSTALL_HINT,
    OPERATOR_SELECTOR,
    RESOURCE,
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
#: The lists the checks read (resource plurals); the last two are cluster-scoped.
DEPLOYMENTS, PODS, LEASES, EVENTS = "deployments", "pods", "leases", "events"
POLICIES, BINDINGS = "validatingadmissionpolicies", "validatingadmissionpolicybindings"


class Reads(Protocol):
    """What the checks read, and the one dry run they make. Failures raise :class:`PluginError` with the API
    server's message (:class:`UnreachableError`, :class:`LoginError` when it cannot be reached or refuses)."""

    #: Where the webhook check's dry run is made (None: the kubeconfig context's namespace).
    namespace: str | None

    def crd(self, name: str) -> dict[str, Any] | None:
        """The CustomResourceDefinition NAME, None when it does not exist."""

    def items(
        self, kind: str, *, namespace: str | None = None, selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        """The objects of KIND in NAMESPACE (every namespace when None) matching SELECTOR and FIELD_SELECTOR."""

    def dry_run(self, body: Mapping[str, Any]) -> None:
        """A server-side dry run of creating BODY in :attr:`namespace`; raises when it is refused."""


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


def operators(reads: Reads, namespace: str | None = None) -> list[Operator]:
    """The Deployments labelled :data:`OPERATOR_SELECTOR` in NAMESPACE (every namespace when None)."""
    found = []
    for deployment in reads.items(DEPLOYMENTS, namespace=namespace, selector=OPERATOR_SELECTOR):
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


def crds(reads: Reads) -> Result:
    problems, fine = [], []
    for crd in CRDS:
        body = reads.crd(crd)
        if body is None:
            problems.append(f"{crd} is not installed")
            continue
        conditions = {c.get("type"): c for c in (body.get("status") or {}).get("conditions") or []}
        established = conditions.get("Established") or {}
        if established.get("status") == "True":
            fine.append(crd)
        else:
            problems.append(f"{crd} is not Established ({established.get('message') or 'no condition yet'})")
    if problems:
        return Result("CRDs", ok=False, reason=f"{'; '.join(problems)}; {INSTALL_HINT}")
    return Result("CRDs", ok=True, reason=f"{', '.join(fine)} established")


def _pod_problems(reads: Reads, operator: Operator) -> list[str]:
    """Why the operator's pods are not ready, as the kubelet says it (the waiting or last terminated reason)."""
    problems = []
    for pod in reads.items(PODS, namespace=operator.namespace, selector=OPERATOR_SELECTOR):
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


def operator_ready(reads: Reads, found: Sequence[Operator]) -> Result:
    if not found:
        return Result("operator", ok=False, reason=f"no Deployment labelled {OPERATOR_SELECTOR}; {INSTALL_HINT}")
    ready = [o for o in found if o.ready > 0]
    if ready:
        shown = ", ".join(f"{o.namespace}/{o.name} {o.ready}/{o.replicas} ready" for o in ready)
        return Result("operator", ok=True, reason=shown)
    reasons = []
    for operator in found:
        try:
            problems = _pod_problems(reads, operator) or ["no pod yet"]
        except (UnreachableError, LoginError):
            raise
        except PluginError as error:  # the chart's test pod may not read pods (their specs may hold secrets)
            problems = [f"its pods are not readable here ({error})"]
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


def webhook(reads: Reads) -> Result:
    where = f"in namespace {reads.namespace}" if reads.namespace else "in the current namespace"
    try:
        reads.dry_run(_probe_object(None))
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


def _leases(reads: Reads, operator: Operator) -> list[dict[str, Any]]:
    listing = reads.items(LEASES, namespace=operator.namespace, selector=names.SHARD_LEASE_LABEL)
    prefix = f"{operator.lease_prefix}-shard-"
    return [lease for lease in listing if lease["metadata"]["name"].startswith(prefix)]


def fencing(reads: Reads, found: Sequence[Operator]) -> Result:
    if not found:
        return Result("fencing", ok=False, reason="no operator found")
    policies = reads.items(POLICIES)
    bindings = reads.items(BINDINGS)
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
        leases = _leases(reads, operator)
        if not leases:
            problems.append(f"{operator.namespace}: no labelled shard Lease yet (nothing is refused until one exists)")
            continue
        events = reads.items(EVENTS, namespace=operator.namespace, field_selector=f"reason={NOT_ENFORCED}")
        held = {lease["metadata"]["name"] for lease in leases}
        reported = [e for e in events if (e.get("involvedObject") or {}).get("name") in held]
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


def leases(reads: Reads, found: Sequence[Operator], *, now: datetime) -> Result:
    if not found:
        return Result("Leases", ok=False, reason="no operator found")
    problems, held = [], 0
    wanted = 0
    for operator in found:
        by_name = {lease["metadata"]["name"]: lease for lease in _leases(reads, operator)}
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


def run_all(reads: Reads, *, now: datetime, operator_namespace: str | None = None) -> list[Result]:
    """Every check, in order; a check that cannot be read (no permission, say) fails with the server's message.
    An unreachable cluster or a refused login ends the round: every later check would say the same. The
    operator is looked for in OPERATOR_NAMESPACE (every namespace when None)."""
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
        found.extend(operators(reads, operator_namespace))
        return operator_ready(reads, found)

    try:
        attempt("CRDs", lambda: crds(reads))
        attempt("operator", find)
        attempt("webhook", lambda: webhook(reads))
        attempt("fencing", lambda: fencing(reads, found))
        attempt("Leases", lambda: leases(reads, found, now=now))
    except (UnreachableError, LoginError) as error:
        results.append(Result("cluster", ok=False, reason=str(error)))
    return results
