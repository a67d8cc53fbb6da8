"""The condition -> Event map (``actions.CONDITION_EVENTS``): a ``Ready=False`` condition emits a Warning Event of
its reason, looked up in an explicit map (no conversion by value that would raise for a reason left out)."""

from __future__ import annotations

import ast
import inspect

from sundial.model import enums
from sundial.model.enums import ConditionReason
from sundial.planner.actions import CONDITION_EVENTS, EventReason

CONDITION_ONLY = frozenset(
    {
        ConditionReason.SCHEDULED,
        ConditionReason.SUSPENDED,
        ConditionReason.CIRCUIT_OPEN,
        ConditionReason.CONSECUTIVE_DEAD_LETTERS,
        ConditionReason.NOT_SUSPENDED,
        ConditionReason.NO_DEAD_LETTERS,
        ConditionReason.COMPLETE,
        ConditionReason.PENDING,
    }
)
"""Reasons of conditions that emit no Event of their reason (``Ready=True``, ``Suspended``, ``DeadLettered=False``,
``Complete=False``): their Events, if any, have reasons of their own."""


def _member_docstrings(kind: type) -> dict[str, str]:
    """The docstring under each member of an enum class, by member name."""
    [node] = ast.parse(inspect.getsource(kind)).body
    assert isinstance(node, ast.ClassDef)
    found = {}
    for statement, following in zip(node.body, node.body[1:], strict=False):
        if isinstance(statement, ast.Assign) and isinstance(following, ast.Expr):
            target = statement.targets[0]
            if isinstance(target, ast.Name) and isinstance(following.value, ast.Constant):
                found[target.id] = str(following.value.value)
    return found


def test_every_condition_reason_either_emits_a_mapped_event_or_is_known_to_emit_none() -> None:
    # A new ConditionReason fails here until it is mapped to an EventReason or listed in CONDITION_ONLY.
    assert set(CONDITION_EVENTS).isdisjoint(CONDITION_ONLY)
    assert set(CONDITION_EVENTS) | CONDITION_ONLY == set(ConditionReason)


def test_every_ready_false_reason_has_an_event() -> None:
    docs = _member_docstrings(enums.ConditionReason)
    assert set(docs) == {reason.name for reason in ConditionReason}
    ready_false = {ConditionReason[name] for name, doc in docs.items() if doc.startswith("``Ready=False``")}
    assert ready_false, "no ConditionReason is documented as a reason of Ready=False"
    assert ready_false == set(CONDITION_EVENTS)


def test_each_event_is_named_after_its_condition_reason() -> None:
    for condition, event in CONDITION_EVENTS.items():
        assert isinstance(event, EventReason)
        assert event.value == condition.value
