"""Version skew (issue 21 item 5): a pass keeps the status fields of a newer version it does not know.

Inside the entries it keeps (``active[]`` and the other lists, ``counters``) unknown keys ride along with the
entry; unknown top-level fields are never read, and the write (a merge patch of the owned fields,
:func:`sundial.model.resource.status_patch`) leaves them to the API server.
"""

from __future__ import annotations

from typing import Any

from sundial.model import parse_status
from sundial.model.resource import STATUS_FIELDS, dump_status, status_patch
from sundial.planner.observed import JobPhase
from sundial.planner.planning import plan

from .builders import (
    active_run,
    context,
    dead_letter,
    hours_after,
    job,
    make_obj,
    name_at,
    seconds_after,
    status,
    top_of_the_hour,
)

T = top_of_the_hour()


def _newer_status() -> dict[str, Any]:
    """A status as a newer version wrote it: a field of its own at each level."""
    raw = dump_status(status(active=(active_run(T),), dead_letters=(dead_letter(hours_after(-1, T)),)))
    raw["active"][0]["futureKey"] = {"prepared": True}
    raw["deadLetters"][0]["futureKey"] = "note"
    raw["counters"]["futureCounter"] = 3
    raw["futureField"] = "kept by the server"
    return raw


def test_a_pass_keeps_unknown_keys_of_the_entries_it_keeps() -> None:
    obj = make_obj(status=parse_status(_newer_status()))
    finished = job(name_at(T), JobPhase.SUCCEEDED, finished=seconds_after(30, T))
    result = plan(obj, [finished], context(seconds_after(60, T)))
    assert result.write_status, "the pass must write (the run finished)"
    written = dump_status(result.status)
    assert written["active"] == [], "the run ended: its entry (and what a newer version kept in it) is gone"
    [letter] = written["deadLetters"]
    assert letter["futureKey"] == "note", "an entry this pass kept keeps the newer version's key"
    assert written["counters"]["succeeded"] == 1, "counters were updated by this version"
    assert written["counters"]["futureCounter"] == 3, "and still keep the newer version's counter"


def test_an_entry_updated_in_place_keeps_its_unknown_keys() -> None:
    raw = _newer_status()
    raw["active"][0]["jobSeen"] = False
    obj = make_obj(status=parse_status(raw))
    result = plan(obj, [job(name_at(T), JobPhase.ACTIVE)], context(seconds_after(60, T)))
    [entry] = dump_status(result.status)["active"]
    assert entry["jobSeen"] is True
    assert entry["futureKey"] == {"prepared": True}


def test_the_write_never_names_an_unknown_top_level_field_and_nulls_removed_owned_ones() -> None:
    obj = make_obj(status=parse_status(_newer_status()))
    patch = status_patch(dump_status(obj.status))
    assert "futureField" not in patch, "a merge patch without the key leaves the server's value alone"
    assert set(patch) == set(STATUS_FIELDS)
    assert patch["lastHandledBackfill"] is None and patch["backfills"] == []


def test_unknown_keys_alone_do_not_make_a_write() -> None:
    obj = make_obj(status=parse_status(_newer_status()))
    running, now = [job(name_at(T), JobPhase.ACTIVE)], context(seconds_after(60, T))
    first = plan(obj, running, now)  # may write (its conditions catch up with the dead letter)
    assert dump_status(first.status)["deadLetters"][0]["futureKey"] == "note"
    assert plan(make_obj(status=first.status), running, now).write_status is False
