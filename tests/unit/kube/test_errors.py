"""What counts as transient (retried without consuming attempts) and what is final."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from sundial.kube import errors


def _api_error(code: int, reason: str, message: str) -> ApiException:
    error = ApiException(status=code, reason=reason)
    error.body = json.dumps({"kind": "Status", "code": code, "reason": reason, "message": message}).encode()
    return error


@pytest.mark.parametrize("code", [429, 500, 502, 503, 504])
def test_throttling_and_server_errors_are_transient(code: int) -> None:
    assert isinstance(errors.classify(_api_error(code, "X", "y")), errors.TransientError)


def test_exceeded_quota_is_transient() -> None:
    error = _api_error(403, "Forbidden", 'jobs "a" is forbidden: exceeded quota: q, requested: count/jobs=1')
    assert isinstance(errors.classify(error), errors.TransientError)


def test_timeouts_are_transient() -> None:
    assert isinstance(errors.classify(TimeoutError()), errors.TransientError)


@pytest.mark.parametrize("code", [400, 403, 404, 409, 422])
def test_client_errors_are_final_and_keep_the_api_message(code: int) -> None:
    classified = errors.classify(_api_error(code, "Invalid", "spec.template: bad"))
    assert type(classified) is errors.KubeError
    assert classified.code == code
    assert classified.reason == "Invalid"
    assert classified.message == "spec.template: bad"


def test_other_exceptions_are_not_api_errors() -> None:
    assert errors.classify(ValueError("bug")) is None
