"""What each object the informers hand on does: keep it in the store and wake its key in the dispatcher - or,
when it cannot be read, keep its stub (:mod:`.quarantine`). One :class:`Sink` per kind (the informers' side of
the contract: :class:`sundial.runtime.watch.listwatch.Sink`).

* A ScheduledJob is kept (or forgotten) and its key woken. An event whose object the store already holds at the
  same resourceVersion wakes nothing: mostly the echo of a status write the reconciler has just kept, or a relist;
  re-planning it would only find that nothing changed. A quarantined one is kept as a stub the planner reports
  (``Ready=False``, ``Quarantined``).
* A Job is kept as what the planner is told of it (and no longer awaited: :mod:`.unseen`); its owner is woken
  softly (a key whose status write waits in the dispatcher's lane stays there). A quarantined Job is left out of
  its owner's view; the last readable version of it, if any, stays (a Job is never taken for gone because one
  version could not be read).
* A ScheduleCalendar wakes the keys of the ScheduledJobs that refer to it (the store's reverse index); a
  quarantined one is kept as an invalid calendar, which its referrers report.
* Gone (``DELETED``, or absent from a relist): forgotten, and for a Job a tombstone is kept while its owner may
  still count it as active (a deleted unfinished Job ends its attempt as JobLost).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from sundial.runtime.watch.quarantine import Quarantine, identity_of, stub_of
from sundial.runtime.watch.store import Key, Store, key_of
from sundial.runtime.watch.unseen import Unseen

SCHEDULED_JOB = "ScheduledJob"
JOB = "Job"
SCHEDULE_CALENDAR = "ScheduleCalendar"


class Wakes(Protocol):
    def touch(self, key: Key, *, soft: bool = False) -> None: ...

    def forget(self, key: Key) -> None: ...


class Forgets(Protocol):
    def forget(self, key: Key) -> None: ...


class ScheduledJobs:
    """The ScheduledJobs' sink."""

    def __init__(self, *, store: Store, dispatcher: Wakes, reconciler: Forgets, quarantine: Quarantine) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._reconciler = reconciler
        self._quarantine = quarantine

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        if event == "DELETED":
            self._forget(key_of(body))
        elif not self._store.holds(body):
            key = self._store.put_scheduled_job(body)
            self._quarantine.release(SCHEDULED_JOB, *key)
            self._dispatcher.touch(key)

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        stub = stub_of(SCHEDULED_JOB, body, error)
        if event == "DELETED":
            self._forget((stub.namespace, stub.name))
            return
        self._quarantine.add(stub)
        if not stub.name:
            return  # nothing to report it on
        status = body.get("status") if isinstance(body, Mapping) else None
        key = self._store.put_quarantined(
            namespace=stub.namespace, name=stub.name, uid=stub.uid, resource_version=stub.resource_version,
            generation=stub.generation, reason=stub.reason, message=stub.message, status=status,
        )  # fmt: skip
        self._dispatcher.touch(key)

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        return set(self._store.scheduled_job_names(namespace)) | self._quarantine.names(SCHEDULED_JOB, namespace)

    def vanished(self, identity: tuple[str, str]) -> None:
        namespace, name = identity
        self._forget((namespace, name))

    def _forget(self, key: Key) -> None:
        self._store.forget_scheduled_job(key)
        self._quarantine.release(SCHEDULED_JOB, *key)
        self._dispatcher.forget(key)
        self._reconciler.forget(key)


class Jobs:
    """The Jobs' sink."""

    def __init__(
        self, *, store: Store, dispatcher: Wakes, quarantine: Quarantine, unseen: Unseen | None = None
    ) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._quarantine = quarantine
        self._unseen = unseen or Unseen()

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        key = self._store.drop_job(body) if event == "DELETED" else self._store.put_job(body)
        namespace, name = identity_of(body)
        self._unseen.seen(namespace, name)
        self._quarantine.release(JOB, namespace, name)
        self._wake(key)

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        stub = stub_of(JOB, body, error)
        if event == "DELETED":
            self._quarantine.release(JOB, stub.namespace, stub.name)
            self._wake(self._store.vanish_job(stub.namespace, stub.name))
        else:
            self._quarantine.add(stub)

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        return set(self._store.job_names(namespace)) | self._quarantine.names(JOB, namespace)

    def vanished(self, identity: tuple[str, str]) -> None:
        namespace, name = identity
        self._quarantine.release(JOB, namespace, name)
        self._wake(self._store.vanish_job(namespace, name))

    def _wake(self, key: Key | None) -> None:
        if key is not None:
            self._dispatcher.touch(key, soft=True)  # a key whose status write waits in the lane stays there


class ScheduleCalendars:
    """The ScheduleCalendars' sink: a change re-plans every ScheduledJob that refers to the calendar, and only those."""

    def __init__(self, *, store: Store, dispatcher: Wakes, quarantine: Quarantine) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._quarantine = quarantine

    def apply(self, event: str | None, body: Mapping[str, Any]) -> None:
        keys = self._store.drop_calendar(body) if event == "DELETED" else self._store.put_calendar(body)
        self._quarantine.release(SCHEDULE_CALENDAR, *identity_of(body))
        self._wake(keys)

    def quarantine(self, event: str | None, body: Any, error: BaseException) -> None:
        stub = stub_of(SCHEDULE_CALENDAR, body, error)
        key = (stub.namespace, stub.name)
        if event == "DELETED":
            self._quarantine.release(SCHEDULE_CALENDAR, *key)
            self._wake(self._store.calendars.drop_key(key))
            return
        self._quarantine.add(stub)
        self._wake(
            self._store.calendars.put_unreadable(
                namespace=stub.namespace, name=stub.name, resource_version=stub.resource_version, message=stub.message
            )
        )

    def held(self, namespace: str | None) -> set[tuple[str, str]]:
        return set(self._store.calendars.names(namespace)) | self._quarantine.names(SCHEDULE_CALENDAR, namespace)

    def vanished(self, identity: tuple[str, str]) -> None:
        namespace, name = identity
        self._quarantine.release(SCHEDULE_CALENDAR, namespace, name)
        self._wake(self._store.calendars.drop_key((namespace, name)))

    def _wake(self, keys: set[Key]) -> None:
        for key in sorted(keys):
            self._dispatcher.touch(key)
