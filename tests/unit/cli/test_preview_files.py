"""``kubectl sundial preview -f``: the next runs of manifests not applied yet, with the ScheduleCalendars of the
same files, computed by the operator's code."""

from __future__ import annotations

import io
import json

import pytest
import yaml

from ..model.test_invalid_corpus import REPO, SAMPLES_DIR
from .conftest import FakeKubectl, Run


def test_the_samples_next_runs_with_the_team_calendar(run: Run) -> None:
    offline = FakeKubectl()
    code, out, err = run(offline, "preview", "-f", str(SAMPLES_DIR), "--count", "2", "-o", "json")
    assert code == 0, err
    found = json.loads(out)
    assert found["every-10-seconds"] == ["2027-03-27T00:00:10Z", "2027-03-27T00:00:20Z"]
    assert found["asap-once"] == ["once, as soon as it is created"]
    assert len(found["weekdays-except-holidays"]) == 2
    assert offline.calls == []  # offline: no kubectl call at all


def test_a_calendar_missing_from_the_files_is_said(run: Run) -> None:
    code, _, err = run(FakeKubectl(), "preview", "-f", str(SAMPLES_DIR / "weekdays-except-holidays.yaml"))
    assert code == 2
    assert "scheduledjob/weekdays-except-holidays runs nothing:" in err and "the files given" in err


def test_an_invalid_manifest_exits_2_naming_the_field(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = yaml.safe_load((REPO / "tests" / "invalid" / "05-cron-minute-60.yaml").read_text(encoding="utf-8"))
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(bad)))
    code, _, err = run(FakeKubectl(), "preview", "-f", "-")
    assert code == 2 and "is invalid: spec.schedule" in err


def test_preview_needs_a_name_or_files(run: Run) -> None:
    code, _, err = run(FakeKubectl(), "preview")
    assert code == 1 and "name a ScheduledJob, or give manifests with -f" in err
