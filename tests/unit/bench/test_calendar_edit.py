"""The calendar-edit scenario's objects are legal (the webhook's own checks) and what it measures is what the
issue asks: 400 referrers of 16 maximal calendars, each edit a label of metadata only or a real spec change."""

from __future__ import annotations

from bench import calendaredit, scenarios
from bench.neighbour import calendar, maximal_exclude

from sundial.model import calendars
from sundial.runtime.serving.admission import calendar_problems
from sundial.runtime.watch.calendars import spec_digest


def test_every_referrer_names_all_sixteen_maximal_calendars_and_both_are_admitted() -> None:
    exclude = maximal_exclude()
    body = calendaredit.referrer("ref-000")
    assert body["spec"]["calendarRefs"] == [f"max-{i:02d}" for i in range(16)]
    assert sum(len(entry["dates"]) for entry in exclude) == calendars.MAX_DATES_IN_ALL  # maximal
    calendaredit.check_legal(calendar("max-00", exclude), body)  # raises if the webhook would refuse either
    assert all(size["calendar_edit_referrers"] == 400 for size in scenarios.SIZES.values())


def test_the_spec_edit_changes_the_calendars_meaning_and_stays_legal_and_a_label_edit_does_not() -> None:
    exclude = maximal_exclude()
    before = calendar("max-00", exclude)
    dates = list(exclude[0]["dates"])
    dates[0] = "2099-12-31"  # as CalendarEdit._edit moves it
    after = calendar("max-00", [{"dates": dates}, *exclude[1:]])
    assert calendar_problems(after) == []
    assert spec_digest(after) != spec_digest(before)
    labelled = calendar("max-00", exclude)
    labelled["metadata"]["labels"] = {"bench.sundial.dev/edit": "1"}
    assert spec_digest(labelled) == spec_digest(before)


def test_the_full_size_phases_give_at_least_200_lag_samples_each() -> None:
    full = scenarios.SIZES["full"]
    assert full["calendar_edit_victims"] * full["calendar_edit_seconds"] // 5 >= 200
