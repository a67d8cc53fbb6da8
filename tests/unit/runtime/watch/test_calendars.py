"""ScheduleCalendars in the store: the reverse index wakes exactly the ScheduledJobs that refer to a calendar."""

from __future__ import annotations

from typing import Any

from tests.unit.runtime.watch.feeds import Feed, Recorder

from sundial.runtime.watch.calendars import Calendars, refs_of
from sundial.runtime.watch.store import Store


def scheduled_job(name: str, refs: list[Any], *, namespace: str = "team-a", version: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": version},
        "spec": {"schedule": "* * * * *", "calendarRefs": refs},
    }


def calendar(name: str, *, namespace: str = "team-a", dates: tuple[str, ...] = ("2026-12-24",)) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"cal-{name}", "resourceVersion": "5"},
        "spec": {"exclude": [{"dates": list(dates)}]},
    }


def intake() -> tuple[Feed, Store, Recorder]:
    feed = Feed()
    return feed, feed.store, feed.dispatcher


def test_a_calendar_event_wakes_every_scheduled_job_that_refers_to_it_and_no_other() -> None:
    feed, _, recorder = intake()
    for name in ("a", "b", "c"):
        feed.scheduled_job("ADDED", scheduled_job(name, ["holidays"]))
    feed.scheduled_job("ADDED", scheduled_job("other", ["freeze"]))
    feed.scheduled_job("ADDED", scheduled_job("elsewhere", ["holidays"], namespace="team-b"))
    recorder.calls.clear()

    feed.calendar("MODIFIED", calendar("holidays"))

    assert recorder.touched == [("team-a", "a"), ("team-a", "b"), ("team-a", "c")]


def test_a_scheduled_job_waiting_for_a_missing_calendar_is_woken_when_it_is_created_and_deleted() -> None:
    feed, store, recorder = intake()
    feed.scheduled_job("ADDED", scheduled_job("a", ["holidays"]))
    assert store.calendars.for_object("team-a", ["holidays"]) == {}
    recorder.calls.clear()

    feed.calendar("ADDED", calendar("holidays"))
    assert recorder.touched == [("team-a", "a")]
    found = store.calendars.for_object("team-a", ["holidays"])
    assert found["holidays"] is not None and found["holidays"].exclude[0].dates == ("2026-12-24",)

    feed.calendar("DELETED", calendar("holidays"))
    assert recorder.touched == [("team-a", "a"), ("team-a", "a")]
    assert store.calendars.for_object("team-a", ["holidays"]) == {}


def test_changing_or_deleting_a_scheduled_job_moves_it_in_the_reverse_index() -> None:
    feed, store, _ = intake()
    feed.scheduled_job("ADDED", scheduled_job("a", ["holidays", "freeze"]))
    assert store.calendars.referring("team-a", "freeze") == {("team-a", "a")}
    feed.scheduled_job("MODIFIED", scheduled_job("a", ["holidays"], version="2"))
    assert store.calendars.referring("team-a", "freeze") == set()
    assert store.calendars.referring("team-a", "holidays") == {("team-a", "a")}
    feed.scheduled_job("DELETED", scheduled_job("a", ["holidays"], version="3"))
    assert store.calendars.referring("team-a", "holidays") == set()


def test_an_invalid_calendar_is_kept_as_existing_but_unusable() -> None:
    calendars = Calendars()
    calendars.put({"metadata": {"name": "bad", "namespace": "ns"}, "spec": {"exclude": [{"dates": ["nope"]}]}})
    assert calendars.for_object("ns", ["bad"]) == {"bad": None}
    assert len(calendars) == 1


def test_refs_are_read_defensively_from_raw_bodies() -> None:
    assert refs_of({"spec": {"calendarRefs": ["a", 3, "a", "b"]}}) == ("a", "b")
    assert refs_of({"spec": {"calendarRefs": "a"}}) == ()
    assert refs_of({"spec": None}) == ()
    assert refs_of({}) == ()
