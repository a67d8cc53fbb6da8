"""``kubectl sundial version``: the plugin's version and, when the cluster answers, the CRD's and operator's.

The operator is found as the Deployments labelled ``app.kubernetes.io/name=sundial`` (the chart and the
kustomize base both set it); its version is their ``app.kubernetes.io/version`` label, else the image tag.
What cannot be read (no cluster, no permission to list Deployments) is reported, not fatal: an unreachable
cluster is one line (``Server: unreachable (...)``, kubectl's own summary without client-go's log lines), so is
a refused login (``Server: login refused (...)``), and the client's version is printed all the same; the exit
code is then 1, as kubectl's ``version`` exits when it cannot reach the server.
"""

from __future__ import annotations

import argparse
import platform
from typing import Any

import sundial
from sundial.cli.kubectl import outputs
from sundial.cli.kubectl.runner import (
    OPERATOR_SELECTOR,
    RESOURCE,
    Clock,
    Kubectl,
    LoginError,
    PluginError,
    UnreachableError,
    add_command,
)

VERSION_LABEL = "app.kubernetes.io/version"


def register(commands: Any) -> None:
    sub = add_command(
        commands, "version", run, "print the plugin's version and, if reachable, the operator's and CRD's"
    )
    sub.add_argument("--client", action="store_true", help="the plugin's version only")
    outputs.flag(sub, "json", "yaml")


def _crd(kubectl: Kubectl) -> dict[str, Any]:
    body = kubectl.get_json("customresourcedefinition", RESOURCE, namespaced=False)
    versions = body.get("spec", {}).get("versions") or []
    return {
        "name": RESOURCE,
        "served": [v["name"] for v in versions if v.get("served")],
        "storage": next((v["name"] for v in versions if v.get("storage")), None),
        "version": (body.get("metadata", {}).get("labels") or {}).get(VERSION_LABEL),
    }


def _operators(kubectl: Kubectl) -> list[dict[str, Any]]:
    listing = kubectl.get_json("deployments", "--all-namespaces", "-l", OPERATOR_SELECTOR, namespaced=False)
    found = []
    for deployment in listing.get("items") or []:
        meta, spec, status = deployment["metadata"], deployment.get("spec") or {}, deployment.get("status") or {}
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
        image = str(containers[0].get("image", ""))
        tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
        found.append(
            {
                "namespace": meta["namespace"],
                "name": meta["name"],
                "version": (meta.get("labels") or {}).get(VERSION_LABEL) or tag or None,
                "image": image,
                "ready": f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            }
        )
    return found


def versions(kubectl: Kubectl, *, client_only: bool) -> dict[str, Any]:
    """Everything ``version`` prints, as one document."""
    result: dict[str, Any] = {
        "clientVersion": {"version": sundial.__version__, "python": platform.python_version()},
    }
    if client_only:
        return result
    errors: list[str] = []
    for key, read in (("crd", _crd), ("operators", _operators)):
        try:
            result[key] = read(kubectl)
        except UnreachableError as error:
            result["unreachable"] = str(error)
            break
        except LoginError as error:
            result["loginRefused"] = str(error)
            break
        except PluginError as error:
            errors.append(f"{key}: {str(error).splitlines()[0] if str(error) else 'unreachable'}")
    if errors:
        result["errors"] = errors
    return result


def text(found: dict[str, Any]) -> str:
    client = found["clientVersion"]
    lines = [f"Client Version: {client['version']} (kubectl-sundial, Python {client['python']})"]
    crd = found.get("crd")
    if crd is not None:
        label = f", chart/app version {crd['version']}" if crd.get("version") else ""
        lines.append(f"CRD: {crd['name']} serves {', '.join(crd['served'])} (storage {crd['storage']}){label}")
    operators = found.get("operators")
    if operators == []:
        lines.append(f"Operator: no Deployment labelled {OPERATOR_SELECTOR}")
    for operator in operators or []:
        lines.append(
            f"Operator Version: {operator['version'] or 'unknown'} "
            f"({operator['namespace']}/{operator['name']}, image {operator['image']}, ready {operator['ready']})"
        )
    if found.get("unreachable"):
        lines.append(f"Server: unreachable ({found['unreachable'].removeprefix('the cluster is unreachable: ')})")
    if found.get("loginRefused"):
        lines.append(f"Server: login refused ({found['loginRefused']})")
    lines.extend(f"warning: {error}" for error in found.get("errors") or [])
    return "\n".join(lines)


def run(args: argparse.Namespace, kubectl: Kubectl, now: Clock) -> int:
    found = versions(kubectl, client_only=args.client)
    print(outputs.dump(found, args.output) if args.output else text(found))
    return 1 if found.get("unreachable") or found.get("loginRefused") else 0
