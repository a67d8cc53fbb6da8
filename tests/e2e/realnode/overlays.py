"""The example overlay ``config/overlays/other-namespace`` installed with ``kubectl apply --server-side -k`` on the
real node, under an overlay of the test ground's that adds only what this machine needs and what keeps the
shared API server safe for the other e2e modules:

* the image ``make image`` built, imported into the node and named by digest (``imagePullPolicy: Never``);
* the real node's nodeSelector and toleration; one replica;
* the operator watching, and the webhook and the requester-authority policy
  covering, only the test's work namespace (cluster-wide they would catch every other module's writes);
* no CRDs: the suite's ``crds`` fixture owns them for the whole session (``kubectl delete -k`` would delete
  every ScheduledJob of every module with them).

Everything else is the example as users copy it: its namespace (restricted Pod Security), its name prefix and
its replacements.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.harness.cluster import REPO

from sundial_sandbox import REAL_NODE_LABEL

EXAMPLE = REPO / "config" / "overlays" / "other-namespace"
NAMESPACE, PREFIX = "batch-scheduling", "acme-"
CRDS = ("scheduledjobs.sundial.dev", "schedulecalendars.sundial.dev")
#: The line of the example's kustomization.yaml that applies the fencing replacements.
FENCING = "  - path: fencing.yaml\n"


def unfenced_copy(directory: Path) -> Path:
    """A copy of the example without its fencing replacements (as if a user had not written them)."""
    shutil.copytree(EXAMPLE, directory)
    kustomization = directory / "kustomization.yaml"
    text = kustomization.read_text(encoding="utf-8")
    assert FENCING in text, "the example no longer applies fencing.yaml on a line of its own"
    default = os.path.relpath(REPO / "config" / "default", directory)
    kustomization.write_text(text.replace(FENCING, "").replace("../../default", default), encoding="utf-8")
    return directory


def _json_patch(kind: str, name: str, operations: list[dict[str, Any]], group: str = "") -> dict[str, Any]:
    target = {"kind": kind, "name": name, **({"group": group} if group else {})}
    return {"target": target, "patch": json.dumps(operations)}


def ground(directory: Path, base: Path, *, repository: str, digest: str, work: str) -> Path:
    """Write the test ground's overlay on top of ``base`` (the example, or its unfenced copy) into ``directory``."""
    directory.mkdir(parents=True)
    only_work = {"matchLabels": {"kubernetes.io/metadata.name": work}}
    toleration = {"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    container = "/spec/template/spec/containers/0"
    operator = [
        {"op": "add", "path": f"{container}/args/-", "value": f"--namespace={work}"},
        {"op": "replace", "path": f"{container}/imagePullPolicy", "value": "Never"},
        {"op": "add", "path": "/spec/template/spec/nodeSelector", "value": {REAL_NODE_LABEL: "true"}},
        {"op": "add", "path": "/spec/template/spec/tolerations", "value": [toleration]},
    ]
    webhooks = [{"op": "replace", "path": f"/webhooks/{i}/namespaceSelector", "value": only_work} for i in (0, 1)]
    authority = [{"op": "add", "path": "/spec/matchResources", "value": {"namespaceSelector": only_work}}]
    without_crds = [
        {"patch": json.dumps({"$patch": "delete", "apiVersion": "apiextensions.k8s.io/v1",
                              "kind": "CustomResourceDefinition", "metadata": {"name": crd}})}
        for crd in CRDS
    ]  # fmt: skip
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(base, directory)],
        "images": [{"name": "localhost/sundial", "newName": repository, "digest": digest}],
        "replicas": [{"name": "sundial-operator", "count": 1}],
        "patches": [
            _json_patch("Deployment", "sundial-operator", operator, group="apps"),
            _json_patch("ValidatingWebhookConfiguration", "sundial", webhooks),
            _json_patch("ValidatingAdmissionPolicyBinding", "sundial-requester-authority", authority),
            *without_crds,
        ],
    }
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization, indent=2), encoding="utf-8")
    return directory
