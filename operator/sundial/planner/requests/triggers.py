"""Token annotations (DESIGN §5, the Flux ``requestedAt`` pattern): a new value requests the action once.

* ``sundial.dev/redrive``: every current dead letter becomes a pending retry due now, with trigger
  ``redrive``, ``attempt = attempts + 1`` and ``attemptLimit = attempts + retry.maxAttempts`` (so it gets
  a fresh set of attempts; ``maxRunAge`` does not apply to it); ``deadLetters`` is cleared, the consecutive
  dead-letter count resets and the circuit closes. Event ``Redriven``. The token is echoed in
  ``status.lastHandledRedrive``.
* ``sundial.dev/trigger``: one manual run whose nominal time is ``now`` truncated to whole seconds
  (Job name ``<name>-m<unix>-<attempt>``), subject to ``concurrencyPolicy`` like any new run and allowed
  while suspended or while the circuit is open. Echoed in ``status.lastHandledTrigger``.

A token longer than :data:`sundial.model.names.MAX_TOKEN_LENGTH` (253) is not handled: one Warning Event
``InvalidToken`` names the annotation and the limit, and status records ``invalid-<12 hex digits of its
SHA-256>`` instead of the token (so the same value is refused once, and never copied into status).
"""

from __future__ import annotations

from datetime import datetime

from sundial.model import names, types
from sundial.model.enums import Trigger
from sundial.model.status import PendingRetry
from sundial.planner.actions import EventReason
from sundial.planner.runs.attempts import when
from sundial.planner.status.drafts import Draft


def redrive(draft: Draft) -> None:
    """Handle a new ``sundial.dev/redrive`` token, if there is one."""
    token = draft.obj.metadata.annotations.get(names.REDRIVE_ANNOTATION)
    if token is None or token == draft.last_handled_redrive:
        return
    refused = too_long(draft, names.REDRIVE_ANNOTATION, token, last_handled=draft.last_handled_redrive)
    draft.last_handled_redrive = refused or token
    if refused:
        return
    letters = draft.dead_letters
    draft.dead_letters = []
    in_flight = draft.keys_in_flight()
    for letter in letters:
        if (letter.scheduled_time, letter.manual) in in_flight:
            continue  # already being retried (a redrive of a run that failed again meanwhile)
        draft.pending.append(
            PendingRetry(
                scheduled_time=letter.scheduled_time,
                attempt=max(letter.attempts + 1, 2),
                not_before=draft.now,
                trigger=Trigger.REDRIVE,
                last_job=letter.last_job or "",
                last_failure=str(letter.reason),
                attempt_limit=max(letter.attempts, 1) + draft.spec.retry.max_attempts,
                manual=letter.manual,
            )
        )
    draft.consecutive_dead_letters = 0
    draft.circuit_generation = None
    draft.emit(EventReason.REDRIVEN, f"Redriven {len(letters)} dead-lettered run(s) (token {token!r})")


def manual_request(draft: Draft) -> datetime | None:
    """The nominal time of a manual run requested by a new ``sundial.dev/trigger`` token, if any."""
    token = draft.obj.metadata.annotations.get(names.TRIGGER_ANNOTATION)
    if token is None or token == draft.last_handled_trigger:
        return None
    refused = too_long(draft, names.TRIGGER_ANNOTATION, token, last_handled=draft.last_handled_trigger)
    draft.last_handled_trigger = refused or token
    if refused:
        return None
    nominal = draft.now.replace(microsecond=0)
    draft.emit(EventReason.TRIGGERED, f"Manual run {when(nominal)} requested (token {token!r})")
    return nominal


def too_long(draft: Draft, annotation: str, token: str, *, last_handled: str | None) -> str | None:
    """The marker to record instead of TOKEN if it is too long (a Warning Event when it is new), else None."""
    if len(token) <= names.MAX_TOKEN_LENGTH:
        return None
    marker = types.invalid_token_marker(token)
    if marker != last_handled:
        draft.emit(
            EventReason.INVALID_TOKEN,
            f"annotation {annotation}: the token is longer than the limit of {names.MAX_TOKEN_LENGTH} characters; "
            "it was not handled (set a shorter token)",
            warning=True,
        )
    return marker
