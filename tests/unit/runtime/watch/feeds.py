"""The three sinks of the intake over one store, with a recording dispatcher: what the informers would feed (a
test helper shared by the watch wing's tests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sundial.runtime.watch import intake
from sundial.runtime.watch.quarantine import Quarantine
from sundial.runtime.watch.store import Key, Store


class Recorder:
    """A dispatcher and reconciler that record what they are told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Key]] = []

    @property
    def touched(self) -> list[Key]:
        return [key for call, key in self.calls if call.startswith("touch")]

    def touch(self, key: Key, *, soft: bool = False) -> None:
        self.calls.append(("touch (a Job)" if soft else "touch", key))

    def forget(self, key: Key) -> None:
        self.calls.append(("forget", key))


class Feed:
    """Hands objects to the sinks as an informer does: inside the same guard (an exception quarantines)."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store if store is not None else Store()
        self.dispatcher = Recorder()
        self.reconciler = Recorder()
        self.counted: list[tuple[str, str]] = []
        self.quarantine = Quarantine(on_quarantine=lambda kind, reason: self.counted.append((kind, reason)))
        self.scheduled_jobs = intake.ScheduledJobs(
            store=self.store, dispatcher=self.dispatcher, reconciler=self.reconciler, quarantine=self.quarantine
        )
        self.jobs = intake.Jobs(store=self.store, dispatcher=self.dispatcher, quarantine=self.quarantine)
        self.calendars = intake.ScheduleCalendars(
            store=self.store, dispatcher=self.dispatcher, quarantine=self.quarantine
        )

    @staticmethod
    def _hand(sink: Any, event: str | None, body: Mapping[str, Any]) -> None:
        try:
            sink.apply(event, body)
        except Exception as error:
            sink.quarantine(event, body, error)

    def scheduled_job(self, event: str | None, body: Mapping[str, Any]) -> None:
        self._hand(self.scheduled_jobs, event, body)

    def job(self, event: str | None, body: Mapping[str, Any]) -> None:
        self._hand(self.jobs, event, body)

    def calendar(self, event: str | None, body: Mapping[str, Any]) -> None:
        self._hand(self.calendars, event, body)
