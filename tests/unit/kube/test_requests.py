"""The send guard: :func:`requests.guarded` sets it for a block, and every request runs it before it is sent."""

from __future__ import annotations

import pytest

from sundial.kube import ratelimits, requests


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
