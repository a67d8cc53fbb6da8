"""AdmissionReview v1 requests as the API server sends them, answered by a webhook's pure path
(:func:`sundial.runtime.serving.webhookserver.answer_review`), shared by the webhook's unit tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from sundial.runtime.serving import webhookserver


class RefusedError(Exception):
    """The webhook refused the object: CODE (422) and MESSAGE as the review answer carried them."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def review(
    body: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
    resource: str = "scheduledjobs",
    uid: str | None = None,
) -> dict[str, Any]:
    """An AdmissionReview request for BODY (OLD: the stored object of an UPDATE)."""
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": "sundial.dev", "version": "v1alpha1", "kind": body.get("kind") or "ScheduledJob"},
        "resource": {"group": "sundial.dev", "version": "v1alpha1", "resource": resource},
        "operation": operation,
        "userInfo": {"username": "tenant"},
        "object": body,
    }
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def validate(
    webhook: webhookserver.Webhook,
    body: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None = None,
    operation: str = "CREATE",
) -> None:
    """Return if WEBHOOK admits BODY, raise :class:`RefusedError` if it refuses it (an HTTP error fails)."""
    sent = review(body, old=old, operation=operation, resource=webhook.resource)
    answer = webhookserver.answer_review(webhook, json.dumps(sent).encode())
    assert answer.status == 200, answer
    response = json.loads(answer.body)["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert answer.refused == (response.get("status") or {}).get("message", "")
    if not response["allowed"]:
        raise RefusedError(response["status"]["code"], response["status"]["message"])
