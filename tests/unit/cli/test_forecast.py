"""``kubectl sundial forecast``: bucketing, herd detection and spread as pure functions, and the command through
the fake kubectl."""

from __future__ import annotations

import json
import xml.dom.minidom
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.unit.cli.conftest import FakeKubectl, Run, scheduled_job

from sundial import schedule
from sundial.cli.kubectl import charts, herds
from sundial.cli.kubectl.calendars import ResolvedCalendars
from sundial.model import ScheduledJob

T0 = datetime(2027, 3, 27, 0, 0, tzinfo=UTC)


def sj(name: str, **spec: Any) -> ScheduledJob:
    return ScheduledJob.from_dict(scheduled_job(name=name, **spec))


def no_calendars(obj: ScheduledJob) -> ResolvedCalendars:
    return ResolvedCalendars()


def test_buckets_count_every_bucket_from_the_one_holding_start() -> None:
    times = [T0 + timedelta(seconds=s) for s in (0, 1, 59, 60, 3599)]
    counts = herds.buckets(times, start=T0 + timedelta(seconds=30), end=T0 + timedelta(hours=1), width=herds.MINUTE)
    assert len(counts) == 60
    assert counts[0] == 3 and counts[1] == 1 and counts[59] == 1 and sum(counts) == 5
    assert herds.most_per(times, herds.MINUTE) == 3
    assert herds.floor(T0 + timedelta(seconds=61.5), herds.SECOND) == T0 + timedelta(seconds=61)


def test_fires_use_the_operators_jitter_and_leave_out_suspended_invalid_and_blocked_objects() -> None:
    jittered = sj("jittered", schedule="0 * * * *", jitter="10m")
    objects = [sj("a", schedule="0 * * * *"), jittered, sj("paused", schedule="0 * * * *", suspend=True)]
    objects.append(ScheduledJob.from_dict(scheduled_job(name="broken", schedule="not cron")))

    def calendars(obj: ScheduledJob) -> ResolvedCalendars:
        return (
            ResolvedCalendars(problem="ScheduleCalendar x not found") if obj.metadata.name == "a" else no_calendars(obj)
        )

    found, skipped = herds.fires(objects, start=T0, end=T0 + timedelta(hours=3), calendars=calendars)
    assert [fire.key for fire in found] == ["team-a/jittered"] * 3
    for fire in found:
        offset = schedule.jitter_offset(uid="u-jittered", nominal=fire.nominal, jitter=timedelta(minutes=10))
        assert fire.at == fire.nominal + offset and offset > timedelta(0)
    reasons = {s.key: s.reason for s in skipped}
    assert reasons["team-a/paused"] == "suspended"
    assert reasons["team-a/a"] == "ScheduleCalendar x not found"
    assert reasons["team-a/broken"].startswith("invalid: ")


def test_a_run_nominally_before_start_that_fires_after_it_is_counted() -> None:
    obj = sj("late", schedule="59 23 * * *", jitter="1h")
    offset = schedule.jitter_offset(uid="u-late", nominal=T0 - herds.MINUTE, jitter=timedelta(hours=1))
    found, _ = herds.fires([obj], start=T0, end=T0 + timedelta(hours=1), calendars=no_calendars)
    assert offset > herds.MINUTE  # the fixture's hash lands after midnight
    assert [fire.nominal for fire in found] == [T0 - herds.MINUTE]


def test_the_exclusions_apply_like_the_operators() -> None:
    obj = sj("weekdays", schedule="0 0 * * *", exclude=[{"dates": ["2027-03-28"]}])
    found, _ = herds.fires([obj], start=T0, end=T0 + timedelta(days=3), calendars=no_calendars)
    assert [fire.nominal.day for fire in found] == [27, 29]


def test_too_many_runs_are_refused_not_enumerated() -> None:
    obj = sj("busy", schedule="* * * * * *")
    with pytest.raises(herds.TooManyRunsError, match="more than 100 runs"):
        herds.fires([obj], start=T0, end=T0 + timedelta(hours=1), calendars=no_calendars, max_runs=100)


def test_herds_are_same_second_groups_largest_first() -> None:
    objects = [sj(f"n{i}", schedule="0 0 * * *") for i in range(6)] + [
        sj(f"h{i}", schedule="@hourly") for i in range(3)
    ]
    objects.append(sj("alone", schedule="30 0 * * *"))
    found, _ = herds.fires(objects, start=T0, end=T0 + timedelta(hours=2), calendars=no_calendars)
    top = herds.herds(found, top=5)
    assert [(h.second, len(h.fires)) for h in top] == [(T0, 9), (T0 + herds.HOUR, 3)]
    assert herds.herds(found, top=1)[0].second == T0


def test_spread_uses_the_operators_jitter_and_h() -> None:
    objects = [sj(f"n{i}", schedule="0 0 * * *") for i in range(40)] + [sj("list", schedules=["0 0 * * *"])]
    found, _ = herds.fires(objects, start=T0, end=T0 + timedelta(hours=1), calendars=no_calendars)
    (herd,) = herds.herds(found, top=5)
    jitter, _, h = herds.spread(herd).spreads
    moved = [
        fire.nominal
        + schedule.jitter_offset(uid=fire.obj.metadata.uid, nominal=fire.nominal, jitter=timedelta(seconds=30))
        for fire in herd.fires
    ]
    assert jitter.change == "jitter 30s"
    assert jitter.max_per_second == herds.most_per(moved, herds.SECOND) < 41
    assert jitter.max_per_minute == 41
    hashed = [
        schedule.parse_cron("H 0 * * *", uid=f.obj.metadata.uid).minutes[0]
        for f in herd.fires
        if f.key != "team-a/list"
    ]
    minutes = [*hashed, 0]  # the schedules list is not rewritten: it keeps minute 0
    assert h.change == "H" and h.unchanged == 1
    assert h.max_per_minute == max(minutes.count(m) for m in minutes) < 10


def test_hashed_replaces_the_fixed_minute_or_seconds() -> None:
    assert herds.hashed("0 0 * * *") == "H 0 * * *"
    assert herds.hashed("@daily") == "H 0 * * *"
    assert herds.hashed("0 0 0 * * *") == "H H 0 * * *"
    assert herds.hashed("0 */5 * * * *") == "H */5 * * * *"
    assert herds.hashed("*/5 * * * *") is None
    assert herds.hashed("H 0 * * *") is None


def test_the_terminal_chart_fits_the_width_and_keeps_the_peak() -> None:
    counts = [0] * 1440
    counts[600] = 40
    counts[10] = 5
    chart = charts.terminal(charts.Series(T0, herds.MINUTE, counts, "minute"), width=60)
    lines = chart.splitlines()
    assert max(len(line) for line in lines) <= 60
    assert lines[0].split("│")[0].strip() == "40"
    bars = [line.split("│", 1)[1] for line in lines[:8]]
    assert all("█" in row for row in bars)  # the peak column is full height
    assert bars[-1].count("█") == 2  # 5 of 40 is one full eighth of the height: the bottom row
    assert lines[-1].strip() == "one column: the busiest minute of 28, UTC"  # ceil(1440 / 52 columns)


def test_the_svg_is_a_document_with_one_bar_per_busy_column() -> None:
    counts = [0, 3, 0, 7]
    text = charts.svg(charts.Series(T0, herds.MINUTE, counts, "minute"), title="a <title>")
    document = xml.dom.minidom.parseString(text)
    bars = [r for r in document.getElementsByTagName("rect") if r.getAttribute("class") == "bar"]
    assert [b.getElementsByTagName("title")[0].firstChild.data for b in bars] == ["3", "7"]  # type: ignore[union-attr]
    assert "a &lt;title&gt;" in text


# --- the command -----------------------------------------------------------------------------------


@pytest.fixture
def herd_cluster(new_cluster: Callable[..., FakeKubectl]) -> FakeKubectl:
    specs = [{"name": f"nightly-{i}", "schedule": "0 1 * * *"} for i in range(12)]
    specs += [
        {"name": "hourly", "schedule": "30 * * * *"},
        {"name": "paused", "schedule": "0 1 * * *", "suspend": True},
    ]
    return new_cluster(*specs)


def test_forecast_json_lists_buckets_herds_and_spreads(run: Run, herd_cluster: FakeKubectl) -> None:
    code, out, err = run(herd_cluster, "forecast", "--hours", "6", "-o", "json")
    assert code == 0, err
    found = json.loads(out)
    assert found["from"] == "2027-03-27T00:00:00Z" and found["to"] == "2027-03-27T06:00:00Z"
    assert found["by"] == "minute" and found["bucketSeconds"] == 60
    assert found["runs"] == 12 + 6 and found["scheduledJobs"] == 14
    assert found["peak"] == {"start": "2027-03-27T01:00:00Z", "runs": 12}
    assert {"start": "2027-03-27T00:30:00Z", "runs": 1} in found["buckets"]
    (herd,) = found["herds"]
    assert herd["at"] == "2027-03-27T01:00:00Z" and herd["runs"] == 12
    assert {m["name"] for m in herd["scheduledJobs"]} == {f"nightly-{i}" for i in range(12)}
    assert [s["change"] for s in herd["spread"]] == ["jitter 30s", "jitter 5m0s", "H"]
    assert all(s["maxPerSecond"] < 12 for s in herd["spread"])
    assert found["skipped"] == [{"scheduledJob": "team-a/paused", "reason": "suspended"}]


def test_forecast_prints_a_chart_and_the_herds(run: Run, herd_cluster: FakeKubectl) -> None:
    code, out, _ = run(herd_cluster, "forecast", "--hours", "6", "--by", "hour")
    assert code == 0
    assert out.startswith("Runs due per hour from 2027-03-27T00:00:00Z to 2027-03-27T06:00:00Z: 18 runs")
    assert "█" in out and "Busiest hour: 2027-03-27T01:00:00Z with 13 runs" in out
    assert "2027-03-27T01:00:00Z  12 runs: team-a/nightly-0" in out and "and 7 more" in out
    assert "with jitter 30s: at most" in out and "fires nothing: team-a/paused: suspended" in out


def test_forecast_refuses_unbounded_work_naming_the_flag(run: Run, herd_cluster: FakeKubectl) -> None:
    assert run(herd_cluster, "forecast", "--hours", "169")[2].startswith("error: --hours: must be more than 0")
    assert run(herd_cluster, "forecast", "--top", "0")[2].startswith("error: --top:")
    assert "--output-file: x.pdf must end in .svg or .png" in run(herd_cluster, "forecast", "--output-file", "x.pdf")[2]
    busy = FakeKubectl(scheduled_job(name="busy", schedule="* * * * * *"))
    code, _, err = run(busy, "forecast", "--hours", "168")
    assert code == 1 and "more than 200000 runs" in err and "--hours" in err


def test_forecast_writes_an_svg(run: Run, herd_cluster: FakeKubectl, tmp_path: Path) -> None:
    target = tmp_path / "herds.svg"
    code, _, err = run(herd_cluster, "forecast", "--hours", "6", "--output-file", str(target), "-o", "json")
    assert code == 0, err
    document = xml.dom.minidom.parse(str(target))
    assert any(r.getAttribute("class") == "bar" for r in document.getElementsByTagName("rect"))


def test_forecast_png_needs_matplotlib(
    run: Run, herd_cluster: FakeKubectl, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "png_available", lambda: False)
    code, _, err = run(herd_cluster, "forecast", "--output-file", str(tmp_path / "x.png"))
    assert code == 1 and "needs matplotlib" in err and not (tmp_path / "x.png").exists()


def test_forecast_reads_calendars_once_per_namespace(run: Run, new_cluster: Callable[..., FakeKubectl]) -> None:
    fake = new_cluster(*({"name": f"c{i}", "schedule": "0 1 * * *", "calendarRefs": ["closed"]} for i in range(3)))
    fake.calendars["closed"] = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduleCalendar",
        "metadata": {"name": "closed", "namespace": "team-a", "uid": "cal"},
        "spec": {"exclude": [{"dates": ["2027-03-27"]}]},
    }
    found = json.loads(run(fake, "forecast", "--hours", "48", "-o", "json")[1])
    assert found["herds"][0]["at"] == "2027-03-28T01:00:00Z"  # the 27th is excluded by the calendar
    assert found["runs"] == 3
    assert sum(1 for call in fake.calls if call[1] == "schedulecalendars.sundial.dev") == 1
