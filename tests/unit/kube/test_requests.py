"""The send guard: :func:`requests.guarded` sets it for a block, and every request runs it before it is sent."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from sundial.kube import errors, ratelimits, requests


class RefusedError(Exception):
    pass


def _refuse() -> None:
    raise RefusedError


def _nothing() -> None:
    return None


def test_the_guard_is_set_for_the_block_and_the_previous_one_is_back_after_it() -> None:
    assert requests.SEND_GUARD.get() is None
    with requests.guarded(_nothing):
        assert requests.SEND_GUARD.get() is _nothing
        with requests.guarded(None):
            assert requests.SEND_GUARD.get() is None
        assert requests.SEND_GUARD.get() is _nothing
    assert requests.SEND_GUARD.get() is None


def test_the_guard_is_reset_when_the_block_raises() -> None:
    with pytest.raises(RefusedError), requests.guarded(_refuse):
        raise RefusedError
    assert requests.SEND_GUARD.get() is None


async def test_a_guarded_request_is_not_sent_once_the_guard_refuses() -> None:
    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000))
    sent: list[str] = []

    async def request() -> str:
        sent.append("sent")
        return "ok"

    with requests.guarded(_nothing):
        assert await requester.call(verb="get", resource="jobs", request=request) == "ok"
    with pytest.raises(RefusedError), requests.guarded(_refuse):
        await requester.call(verb="get", resource="jobs", request=request)
    assert sent == ["sent"]


async def test_a_fencing_refusal_is_counted_apart_from_rbac_refusals() -> None:
    """``code="fenced"``, so that "no 403" still means "RBAC refused nothing" with the enforcement probe."""
    seen: list[str] = []

    class Observer:
        def observe(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
            seen.append(code)

    def refusal(message: str) -> ApiException:
        error = ApiException(status=403, reason="Forbidden")
        error.body = json.dumps({"code": 403, "reason": "Forbidden", "message": message}).encode()
        return error

    requester = requests.Requester(bucket=ratelimits.TokenBucket(rate=1000.0, burst=1000), observer=Observer())
    fenced = ("events \"e\" is forbidden: ValidatingAdmissionPolicy 'sundial-fencing' with binding 'sundial-fencing' "
              "denied request: sundial.dev/fenced: fencing token 0-0-x is older than Lease s-shard-0")  # fmt: skip
    for message, kind in (
        (fenced, errors.FencedError),
        ("jobs is forbidden: User cannot patch", errors.ForbiddenError),
    ):

        async def refused(message: str = message) -> None:
            raise refusal(message)

        with pytest.raises(kind):
            await requester.call(verb="create", resource="events", request=refused)
    assert seen == [requests.FENCED_CODE, "403"]
