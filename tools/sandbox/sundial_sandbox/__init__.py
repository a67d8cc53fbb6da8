"""A local, real Kubernetes control plane for tests and the developer sandbox.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake nodes whose pods
"run" according to Stage rules) run as plain processes under one directory, without Docker; on request
one real node too (containerd + kubelet, :mod:`sundial_sandbox.realnode`), whose pods really run.

This package is a standalone dev/test utility: it imports nothing else from ``sundial``.
Binaries come from ``tools/controlplane/build.sh`` (or a prebuilt directory named by
``SUNDIAL_CONTROLPLANE_BIN``).
"""

from __future__ import annotations

from sundial_sandbox.binaries import BINARIES, BinariesError, ensure_binaries
from sundial_sandbox.cluster import Sandbox, SandboxError
from sundial_sandbox.crds import CrdError, install_crds
from sundial_sandbox.nodeconfig import REAL_NODE_LABEL
from sundial_sandbox.realnode import REAL_NODE_NAME, RealNodeError
from sundial_sandbox.stages import (
    DURATION_ANNOTATION,
    FAKE_NODE_ANNOTATION,
    OUTCOME_FAIL,
    OUTCOME_LABEL,
)

__all__ = [
    "BINARIES",
    "DURATION_ANNOTATION",
    "FAKE_NODE_ANNOTATION",
    "OUTCOME_FAIL",
    "OUTCOME_LABEL",
    "REAL_NODE_LABEL",
    "REAL_NODE_NAME",
    "BinariesError",
    "CrdError",
    "RealNodeError",
    "Sandbox",
    "SandboxError",
    "ensure_binaries",
    "install_crds",
]
