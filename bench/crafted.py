"""The crafted admission review of the flood (issue 30): one builder for the benchmark (:mod:`bench.admission`)
and the live test (tests/e2e/test_admission_flood.py), so both measure the same request."""

from __future__ import annotations

import json
from typing import Any

KEYS = 16_860
"""Keys of each crafted jobTemplate: 2 x 16,860 make an 838 KiB review."""


def crafted_review() -> bytes:
    """An UPDATE review whose object and oldObject differ everywhere in a wide jobTemplate (838 KiB)."""

    def template(shift: int) -> dict[str, Any]:
        return {f"k{i:05d}": {"v": [i + shift]} for i in range(KEYS)}

    def body(shift: int) -> dict[str, Any]:
        spec = {"schedule": "* * * * *", "jobTemplate": {"metadata": {"labels": template(shift)}}}
        return {"apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob", "metadata": {"name": "x"}, "spec": spec}

    request = {
        "uid": "flood",
        "operation": "UPDATE",
        "resource": {"group": "sundial.dev", "version": "v1alpha1", "resource": "scheduledjobs"},
        "object": body(1),
        "oldObject": body(0),
    }
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}).encode()
