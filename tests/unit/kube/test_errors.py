"""What counts as transient (retried without consuming attempts) and what is final."""

from __future__ import annotations

import json

import aiohttp
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


def test_a_gateway_timeout_is_a_transient_error_of_its_own() -> None:
    classified = errors.classify(_api_error(504, "Timeout", "Too large resource version: 62781"))
    assert type(classified) is errors.GatewayTimeoutError
    assert isinstance(classified, errors.TransientError)
    assert type(errors.classify(_api_error(503, "ServiceUnavailable", "y"))) is errors.TransientError


def test_exceeded_quota_is_transient() -> None:
    error = _api_error(403, "Forbidden", 'jobs "a" is forbidden: exceeded quota: q, requested: count/jobs=1')
    assert type(errors.classify(error)) is errors.TransientError


@pytest.mark.parametrize(
    "failure",
    [TimeoutError(), aiohttp.ClientConnectionError("refused"), ConnectionResetError()],
)
def test_timeouts_and_connection_errors_are_transient(failure: BaseException) -> None:
    classified = errors.classify(failure)
    assert type(classified) is errors.TransientError
    assert classified.code == 0
    assert classified.reason == type(failure).__name__


def test_no_status_code_is_transient() -> None:
    assert type(errors.classify(ApiException(status=0, reason="X"))) is errors.TransientError


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "Invalid", errors.InvalidError),
        (400, "BadRequest", errors.InvalidError),
        (400, "Other", errors.KubeError),
        (401, "Unauthorized", errors.KubeError),
        (403, "Forbidden", errors.ForbiddenError),
        (404, "NotFound", errors.NotFoundError),
        (409, "Conflict", errors.ConflictError),
        (409, "AlreadyExists", errors.ConflictError),
        (410, "Expired", errors.GoneError),
        (422, "Invalid", errors.InvalidError),
    ],
)
def test_client_errors_are_final_classified_by_code_and_keep_the_api_message(
    code: int, reason: str, cls: type[errors.KubeError]
) -> None:
    classified = errors.classify(_api_error(code, reason, "spec.template: bad"))
    assert type(classified) is cls
    assert not isinstance(classified, errors.TransientError)
    assert classified.code == code
    assert classified.reason == reason
    assert classified.message == "spec.template: bad"


def test_other_exceptions_are_not_api_errors() -> None:
    assert errors.classify(ValueError("bug")) is None


INVALID_JOB = (
    'Job.batch "nightly-1" is invalid: [metadata.labels: Invalid value: "x y": a valid label must be an empty '
    "string (e.g. 'MyValue', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), "
    'spec.template.spec.containers[0].env[1].name: Invalid value: "TOKEN=s3cr3t-Qq7": a valid environment '
    "variable name must consist only of printable ASCII characters other than '=', "
    'spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "s3cr3t \\"quoted\\" x": supported '
    'values: "Always", "IfNotPresent", "Never", spec.parallelism: Invalid value: -1: must be greater than or '
    "equal to 0, spec.x: Duplicate value: map[a:hunter2]]"
)


def test_quoted_values_are_redacted_and_field_paths_stay() -> None:
    redacted = errors.redact(INVALID_JOB)
    for secret in ("x y", "s3cr3t", "hunter2", "-1:"):
        assert secret not in redacted
    for path in (
        "metadata.labels: Invalid value",
        "spec.template.spec.containers[0].env[1].name: Invalid value",
        "imagePullPolicy: Unsupported value",
        "spec.parallelism: Invalid value",
        "spec.x: Duplicate value",
    ):
        assert f'{path}: "{errors.REDACTED}"' in redacted
    assert "a valid environment variable name must consist only of printable ASCII" in redacted
    assert 'supported values: "Always"' in redacted


def test_api_messages_are_redacted_where_they_become_errors() -> None:
    classified = errors.classify(_api_error(422, "Invalid", INVALID_JOB))
    assert classified is not None
    assert "s3cr3t" not in str(classified)
    assert "s3cr3t" not in classified.message
    assert "env[1].name: Invalid value" in classified.message


def test_the_fencing_policys_refusal_is_its_own_error() -> None:
    message = (
        "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'sundial-fencing' with binding "
        "'sundial-fencing' denied request: sundial.dev/fenced: fencing token 0-4 is older than Lease x"
    )
    assert isinstance(errors.classify(_api_error(403, "Forbidden", message)), errors.FencedError)
    assert isinstance(errors.classify(_api_error(403, "Forbidden", message)), errors.ForbiddenError)
    rbac = errors.classify(_api_error(403, "Forbidden", "jobs is forbidden: User cannot create"))
    assert type(rbac) is errors.ForbiddenError


def test_unquoted_composite_values_are_redacted_whole() -> None:
    message = (
        'spec.a: Invalid value: []string{"x", "s3cr3t-list"}: must be short, '
        'spec.b: Invalid value: map[string]string{"k":"s3cr3t-map"}: bad, '
        "spec.c: Unsupported value: s3cr3t-bare, spec.d: Invalid value: 3: must be 1"
    )
    redacted = errors.redact(message)
    assert "s3cr3t" not in redacted
    for path in (
        "spec.a: Invalid value",
        "spec.b: Invalid value",
        "spec.c: Unsupported value",
        "spec.d: Invalid value",
    ):
        assert f'{path}: "{errors.REDACTED}"' in redacted
    assert "must be short" in redacted and "must be 1" in redacted


def test_webhook_and_policy_denials_keep_only_who_denied() -> None:
    webhook = (
        'admission webhook "policy.example.com" denied the request: image registry.example/s3cr3t:1 '
        "is not allowed; env TOKEN=s3cr3t"
    )
    policy = (
        "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'images' with binding 'images' denied request: "
        "image s3cr3t:1 is not signed"
    )
    for message in (webhook, policy):
        redacted = errors.redact(message)
        assert "s3cr3t" not in redacted
        assert redacted.endswith(f"denied the request: {errors.REDACTED}") or redacted.endswith(
            f"denied request: {errors.REDACTED}"
        )
    assert 'admission webhook "policy.example.com" denied' in errors.redact(webhook)
    assert "ValidatingAdmissionPolicy 'images' with binding 'images'" in errors.redact(policy)


def test_the_fencing_policys_own_denial_is_kept() -> None:
    message = (
        "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'sundial-fencing' with binding "
        "'sundial-fencing' denied request: sundial.dev/fenced: fencing token 0-4 is older than Lease x"
    )
    assert errors.redact(message) == message


#: Denials as kube-apiserver words them (admission/plugin/policy/validating: "ValidatingAdmissionPolicy '%s'
#: with binding '%s' denied request: %s"), inside the registry's "<resource> "<name>" is forbidden: ...".
OURS = (
    "events \"sj.1\" is forbidden: ValidatingAdmissionPolicy 'prod-sundial-fencing' with binding "
    "'prod-sundial-fencing' denied request: sundial.dev/fenced: fencing token 0-4-u is older than Lease x"
)
LOOKALIKES = [
    # another admission webhook quoting an image named like the marker
    'admission webhook "images.example.com" denied the request: image sundial.dev/fenced:1 is not allowed',
    # another ValidatingAdmissionPolicy whose message quotes a field with the marker in it
    "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'image-allowlist' with binding 'image-allowlist' "
    "denied request: sundial.dev/fenced: is not an allowed image",
    # our marker quoted after another policy's prefix
    "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'other' with binding 'other' denied request: "
    "image must not be ValidatingAdmissionPolicy 'prod-sundial-fencing' with binding 'prod-sundial-fencing' "
    "denied request: sundial.dev/fenced: x",
    # our policy, another binding (someone else's binding of it would say what it likes)
    "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'prod-sundial-fencing' with binding 'evil' "
    "denied request: sundial.dev/fenced: x",
    # our policy's name, but not its marker first
    "jobs.batch \"j\" is forbidden: ValidatingAdmissionPolicy 'prod-sundial-fencing' with binding "
    "'prod-sundial-fencing' denied request: something else sundial.dev/fenced: x",
]


def test_only_the_configured_policys_own_denial_is_a_fencing_refusal() -> None:
    try:
        errors.configure_fencing("prod-sundial-fencing")
        assert isinstance(errors.classify(_api_error(403, "Forbidden", OURS)), errors.FencedError)
        assert isinstance(errors.classify(_api_error(403, "Forbidden", OURS.replace('events "sj.1"', "jobs.batch"))),
                          errors.FencedError)  # fmt: skip
        for text in LOOKALIKES:
            classified = errors.classify(_api_error(403, "Forbidden", text))
            assert type(classified) is errors.ForbiddenError, text
        assert not errors.is_fenced(errors.Status(code=400, reason="BadRequest", message=OURS))
        errors.configure_fencing("")  # no policy installed: no 403 is a fencing refusal
        assert type(errors.classify(_api_error(403, "Forbidden", OURS))) is errors.ForbiddenError
    finally:
        errors.configure_fencing(errors.DEFAULT_FENCING_POLICY)
