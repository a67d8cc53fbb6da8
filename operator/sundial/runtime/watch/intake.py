"""What each watch event does: keep the object in the store and wake its key in the dispatcher.

A ScheduleCalendar event wakes the keys of the ScheduledJobs that refer to it (the store's reverse index).

An event whose object the store already holds at the same resourceVersion wakes nothing. That is mostly
the echo of a status write the reconciler has just kept (every run and every first pass writes one), or
kopf's re-list after a watch restart: re-planning it would only find that nothing changed, and with many
objects the echoes of the first status writes alone would cost minutes of planning CPU after start-up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from sundial.runtime.watch.store import Key, Store


class Wakes(Protocol):
    def touch(self, key: Key, *, soft: bool = False) -> None: ...

    def forget(self, key: Key) -> None: ...


class Forgets(Protocol):
    def forget(self, key: Key) -> None: ...


class Checks(Protocol):
    def check(self) -> None: ...


class Intake:
    def __init__(self, *, store: Store, dispatcher: Wakes, reconciler: Forgets, listing: Checks) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._reconciler = reconciler
        self._listing = listing

    def scheduled_job(self, kind: str | None, body: Mapping[str, Any]) -> None:
        if kind == "DELETED":
            key = self._store.drop_scheduled_job(body)
            self._dispatcher.forget(key)
            self._reconciler.forget(key)
        elif not self._store.holds(body):
            self._dispatcher.touch(self._store.put_scheduled_job(body))
        self._listing.check()

    def calendar(self, kind: str | None, body: Mapping[str, Any]) -> None:
        """A ScheduleCalendar changed: re-plan every ScheduledJob that refers to it (and only those)."""
        keys = self._store.drop_calendar(body) if kind == "DELETED" else self._store.put_calendar(body)
        for key in sorted(keys):
            self._dispatcher.touch(key)
        self._listing.check()

    def job(self, kind: str | None, body: Mapping[str, Any]) -> None:
        key = self._store.drop_job(body) if kind == "DELETED" else self._store.put_job(body)
        if key is not None:
            self._dispatcher.touch(key, soft=True)  # a key whose status write waits in the lane stays there
        self._listing.check()
