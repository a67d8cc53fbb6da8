"""Tokens are short (DESIGN §11.1): a trigger, redrive or backfill token over 253 characters is not handled, gets
one Warning Event naming the annotation and the limit, and is never copied into status; an over-long token in a
status an older version wrote is read as its marker, so a status write never fails the CRD's ``maxLength``."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from sundial.model import ScheduledJobStatus, names
from sundial.model.status import BackfillProgress
from sundial.model.types import invalid_token_marker
from sundial.planner.actions import EmitEvent, EventReason
from sundial.planner.planning import plan
from sundial.planner.plans import Plan
from sundial.planner.requests import backfills

from .builders import (
    context,
    creates,
    dead_letter,
    hours_after,
    make_obj,
    raw_spec,
    status,
    top_of_the_hour,
    with_status,
)

NOW = hours_after(1) + timedelta(seconds=3)
LONG = "x" * (names.MAX_TOKEN_LENGTH + 1)


SUSPENDED = raw_spec(suspend=True)
"""No scheduled runs (a manual trigger still runs while suspended): only the requests act."""


def _warnings(result: Plan) -> list[EmitEvent]:
    """The Warning Events about a request (not about missed schedules)."""
    refusals = (EventReason.INVALID_TOKEN, EventReason.INVALID_BACKFILL)
    return [a for a in result.actions if isinstance(a, EmitEvent) and a.type == "Warning" and a.reason in refusals]


@pytest.mark.parametrize(
    ("annotation", "field"),
    [
        (names.TRIGGER_ANNOTATION, "last_handled_trigger"),
        (names.REDRIVE_ANNOTATION, "last_handled_redrive"),
    ],
)
def test_a_token_over_the_limit_is_refused_once_and_not_copied_into_status(annotation: str, field: str) -> None:
    letters = (dead_letter(top_of_the_hour()),)
    obj = make_obj(SUSPENDED, annotations={annotation: LONG}, status=status(dead_letters=letters))
    first = plan(obj, [], context(NOW))
    [warning] = _warnings(first)
    assert warning.reason == EventReason.INVALID_TOKEN
    assert warning.message == (
        f"annotation {annotation}: the token is longer than the limit of 253 characters; "
        "it was not handled (set a shorter token)"
    )
    assert getattr(first.status, field) == invalid_token_marker(LONG)
    assert LONG not in first.status.model_dump_json()
    assert not creates(first)  # no manual run
    assert first.status.dead_letters == obj.status.dead_letters  # no redrive
    again = plan(with_status(obj, first.status), [], context(NOW + timedelta(seconds=1)))
    assert not _warnings(again)
    assert not again.write_status


def test_a_token_at_the_limit_is_handled() -> None:
    token = "y" * names.MAX_TOKEN_LENGTH
    result = plan(make_obj(SUSPENDED, annotations={names.TRIGGER_ANNOTATION: token}), [], context(NOW))
    assert result.status.last_handled_trigger == token
    assert len(creates(result)) == 1


def test_another_long_token_is_refused_again() -> None:
    obj = make_obj(SUSPENDED, annotations={names.TRIGGER_ANNOTATION: LONG})
    handled = plan(obj, [], context(NOW)).status
    other = make_obj(SUSPENDED, annotations={names.TRIGGER_ANNOTATION: LONG + "z"}, status=handled)
    [warning] = _warnings(plan(other, [], context(NOW)))
    assert warning.reason == EventReason.INVALID_TOKEN


def _backfill(token: str) -> str:
    return json.dumps({"token": token, "from": "2026-01-01T00:00:00Z", "to": "2026-01-01T03:00:00Z"})


def test_a_backfill_token_over_the_limit_is_an_invalid_request_naming_the_annotation_and_the_limit() -> None:
    raw = _backfill(LONG)
    result = plan(make_obj(SUSPENDED, annotations={names.BACKFILL_ANNOTATION: raw}), [], context(NOW))
    [warning] = _warnings(result)
    assert warning.reason == EventReason.INVALID_BACKFILL
    assert warning.message == (
        "annotation sundial.dev/backfill: token: longer than the limit of 253 characters; nothing was backfilled"
    )
    assert result.status.last_handled_backfill == backfills.invalid_marker(raw)
    assert not result.status.backfills
    assert not creates(result)


def test_a_backfill_value_over_its_limit_is_refused_before_it_is_parsed() -> None:
    raw = _backfill("ok") + " " * names.MAX_BACKFILL_ANNOTATION_LENGTH
    with pytest.raises(backfills.RequestError, match="longer than the limit of 2048 characters"):
        backfills.parse_request(raw)
    escaped = json.dumps({"token": "é" * names.MAX_TOKEN_LENGTH, "from": "2026-01-01T00:00:00Z", "to": "2026-01-02"})
    assert len(escaped) <= names.MAX_BACKFILL_ANNOTATION_LENGTH  # a legal token fits even \u-escaped


def test_an_over_long_token_in_an_older_status_is_read_as_its_marker() -> None:
    progress = {"token": LONG, "from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z", "done": True}
    read = ScheduledJobStatus.model_validate(
        {"lastHandledTrigger": LONG, "lastHandledRedrive": "short", "lastHandledBackfill": LONG}
        | {"backfills": [progress]}
    )
    assert read.last_handled_trigger == read.last_handled_backfill == invalid_token_marker(LONG)
    assert read.last_handled_redrive == "short"
    assert read.backfills[0].token == invalid_token_marker(LONG)
    assert BackfillProgress.model_validate(progress | {"token": "t"}).token == "t"
