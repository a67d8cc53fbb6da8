"""``metav1.Condition`` bookkeeping: ``lastTransitionTime`` moves only when a condition's status flips."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sundial.model.enums import CompleteReason, ConditionReason, ConditionStatus, ConditionType, DeadLetterReason
from sundial.model.status import MAX_CONDITIONS, Condition


def find(conditions: Sequence[Condition], kind: ConditionType) -> Condition | None:
    return next((c for c in conditions if c.type == kind), None)


def put(
    conditions: list[Condition],
    *,
    kind: ConditionType,
    status: ConditionStatus,
    reason: ConditionReason | CompleteReason | DeadLetterReason,
    message: str,
    now: datetime,
    generation: int,
) -> bool:
    """Set one condition in place; returns whether its (status, reason, message) changed.

    ``lastTransitionTime`` is ``now`` for a new condition or a status flip, else it is kept.
    """
    old = find(conditions, kind)
    transition = now if old is None or old.status != status else old.last_transition_time
    new = Condition(
        type=kind,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=transition,
        observed_generation=generation,
    )
    if old is None:
        conditions.append(new)
        del conditions[:-MAX_CONDITIONS]
        return True
    conditions[conditions.index(old)] = new
    return (old.status, old.reason, old.message) != (status, reason, message)
