"""The one error type of the time layer: every invalid input names the spec field it came from."""

from __future__ import annotations


class ScheduleError(ValueError):
    """An invalid schedule-related input.

    ``field`` names the spec field (``schedule``, ``timeZone``, ``jitter``,
    ``daylightSaving.skippedTime`` ...), ``message`` says what is wrong with it;
    ``str(err)`` is ``"<field>: <message>"`` so it can go straight into a condition or an Event.
    """

    field: str
    message: str

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message

    def __reduce__(self) -> tuple[type[ScheduleError], tuple[str, str]]:
        return (type(self), (self.field, self.message))
