"""``sundial preview``: next nominal run times as a table or JSON; bad input exits 2 naming the field."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sundial.cli.commands import preview

FROZEN_NOW = datetime(2027, 3, 27, 0, 0, tzinfo=UTC)


def run_preview(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="sundial")
    preview.register(parser.add_subparsers(dest="command", required=True), now=lambda: FROZEN_NOW)
    args = parser.parse_args(["preview", *argv])
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(
            ["--after", "2027-03-27T00:00:00Z"],
            ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"],
            id="berlin_spring_fixed_time_runs_after_change",
        ),
        pytest.param(
            ["--after", "2027-10-30T00:00:00Z"],
            ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"],
            id="berlin_autumn_fixed_time_runs_once",
        ),
        pytest.param(
            ["--after", "2027-03-27T00:00:00Z", "--daylight-saving-skipped", "Skip"],
            ["2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z", "2027-03-30T00:30:00Z"],
            id="skip_policy_from_the_command_line",
        ),
        pytest.param(
            ["--after", "2027-10-30T00:00:00Z", "--daylight-saving-repeated", "Twice"],
            ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-10-31T01:30:00Z"],
            id="twice_policy_from_the_command_line",
        ),
        pytest.param(
            [],
            ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"],
            id="without_after_uses_the_injected_clock",
        ),
    ],
)
def test_json_output_lists_rfc3339_utc_times(
    argv: list[str], expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_preview(
        ["--schedule", "30 2 * * *", "--time-zone", "Europe/Berlin", "--count", "3", "-o", "json", *argv],
        capsys,
    )
    assert (code, err) == (0, "")
    assert json.loads(out) == expected


def test_hourly_wildcard_in_berlin_autumn_keeps_its_rhythm(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_preview(
        [
            "--schedule",
            "30 * * * *",
            "--time-zone",
            "Europe/Berlin",
            "--after",
            "2027-10-30T22:00:00Z",
            "--count",
            "6",
            "-o",
            "json",
        ],
        capsys,
    )
    assert code == 0
    assert json.loads(out) == [
        "2027-10-30T22:30:00Z",
        "2027-10-30T23:30:00Z",
        "2027-10-31T00:30:00Z",
        "2027-10-31T01:30:00Z",
        "2027-10-31T02:30:00Z",
        "2027-10-31T03:30:00Z",
    ]


def test_table_output_shows_local_and_utc_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_preview(
        [
            "--schedule",
            "30 2 * * *",
            "--time-zone",
            "Europe/Berlin",
            "--after",
            "2027-03-27T00:00:00Z",
            "--count",
            "2",
        ],
        capsys,
    )
    assert code == 0
    assert out.splitlines() == [
        "#  LOCAL (Europe/Berlin)             UTC",
        "1  2027-03-27 02:30:00 CET (+0100)   2027-03-27T01:30:00Z",
        "2  2027-03-28 03:00:00 CEST (+0200)  2027-03-28T01:00:00Z",
    ]


def test_default_count_is_five_in_utc(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_preview(["--schedule", "@daily", "-o", "json"], capsys)
    assert code == 0
    assert len(json.loads(out)) == 5


def test_uid_seeds_hashed_fields(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = {run_preview(["--schedule", "H H * * *", "--uid", f"uid-{n}", "-o", "json"], capsys)[1] for n in range(5)}
    again = run_preview(["--schedule", "H H * * *", "--uid", "uid-0", "-o", "json"], capsys)[1]
    assert len(outputs) > 1
    assert again in outputs


def test_a_schedule_without_runs_in_the_horizon_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preview.schedule.Timetable, "iter_after", lambda self, after: iter(()))
    code, out, _ = run_preview(["--schedule", "@daily"], capsys)
    assert code == 0
    assert "no run times" in out


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        pytest.param(["--schedule", "0 0 30 2 *"], "schedule", id="impossible_schedule"),
        pytest.param(["--schedule", "61 * * * *"], "schedule", id="out_of_range_minute"),
        pytest.param(["--schedule", "@daily", "--time-zone", "Local"], "timeZone", id="local_zone"),
        pytest.param(["--schedule", "@daily", "--time-zone", "Nowhere/City"], "timeZone", id="unknown_zone"),
        pytest.param(["--schedule", "@daily", "--after", "yesterday"], "after", id="bad_after"),
        pytest.param(["--schedule", "@daily", "--after", "2027-01-01T00:00:00"], "after", id="after_without_offset"),
        pytest.param(["--schedule", "@daily", "--count", "0"], "count", id="zero_count"),
    ],
)
def test_invalid_input_names_the_field_and_exits_2(
    argv: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_preview(argv, capsys)
    assert code == 2
    assert out == ""
    assert f"error: {field}: " in err


def test_unknown_policy_is_rejected_by_argparse_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run_preview(["--schedule", "@daily", "--daylight-saving-skipped", "Never"], capsys)
    assert caught.value.code == 2


def test_registered_without_a_clock_it_reads_the_system_clock(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="sundial")
    preview.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["preview", "--schedule", "* * * * * *", "-o", "json", "--count", "1"])
    before = datetime.now(UTC)
    assert args.func(args) == 0
    (only,) = json.loads(capsys.readouterr().out)
    assert datetime.fromisoformat(only) > before


def test_schedule_may_be_given_several_times_for_the_union(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_preview(
        [
            *("--schedule", "0 18 LW * *", "--schedule", "0 18 ? * FRI#3", "--time-zone", "Europe/Berlin"),
            *("--after", "2027-03-01T00:00:00Z", "--count", "4", "-o", "json"),
        ],
        capsys,
    )
    assert (code, err) == (0, "")
    # Friday 19 March is the third Friday; Wednesday 31 March the last weekday; 16 and 30 April likewise.
    assert json.loads(out) == [
        "2027-03-19T17:00:00Z",
        "2027-03-31T16:00:00Z",
        "2027-04-16T16:00:00Z",
        "2027-04-30T16:00:00Z",
    ]


def test_a_bad_entry_of_several_names_its_index(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_preview(["--schedule", "0 3 * * *", "--schedule", "0 0 32W * *"], capsys)
    assert code == 2
    assert "schedule[1]: field 3 (day-of-month)" in err


def test_excluded_times_are_marked_in_the_table_and_left_out_of_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exclude = tmp_path / "exclude.yaml"
    exclude.write_text('- dates: ["2027-03-02"]\n')
    calendar = tmp_path / "calendar.yaml"
    calendar.write_text(
        "apiVersion: sundial.dev/v1alpha1\nkind: ScheduleCalendar\nmetadata: {name: h}\n"
        'spec:\n  exclude:\n    - schedule: "0 9 * * 4"\n'
    )
    argv = ["--schedule", "0 9 * * *", "--after", "2027-03-01T00:00:00Z", "--count", "3"]
    argv += ["--exclude-file", str(exclude), "--calendar-file", str(calendar)]
    code, out, _ = run_preview([*argv, "-o", "json"], capsys)
    assert code == 0
    assert json.loads(out) == ["2027-03-01T09:00:00Z", "2027-03-03T09:00:00Z", "2027-03-05T09:00:00Z"]
    code, out, _ = run_preview(argv, capsys)
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["1", "-", "2", "-", "3"]
    assert lines[2].endswith("excluded") and lines[4].endswith("excluded")


def test_an_exclude_file_of_a_scheduled_job_spec_and_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "job.yaml"
    good.write_text('spec:\n  schedule: "0 9 * * *"\n  exclude:\n    - dates: ["2027-03-01"]\n')
    code, out, _ = run_preview(
        [
            *("--schedule", "0 9 * * *", "--after", "2027-03-01T00:00:00Z", "--count", "1", "-o", "json"),
            *("--exclude-file", str(good)),
        ],
        capsys,
    )
    assert (code, json.loads(out)) == (0, ["2027-03-02T09:00:00Z"])
    bad = tmp_path / "bad.yaml"
    bad.write_text('- from: "2027-03-01"\n')
    code, _, err = run_preview(["--schedule", "0 9 * * *", "--exclude-file", str(bad)], capsys)
    assert code == 2
    assert "exclude[0].to: a range needs both from and to" in err
    code, _, err = run_preview(["--schedule", "0 9 * * *", "--calendar-file", str(tmp_path / "none.yaml")], capsys)
    assert code == 2 and "calendar-file" in err
