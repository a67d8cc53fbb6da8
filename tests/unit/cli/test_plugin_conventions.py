"""The plugin keeps kubectl's conventions: every global flag passed through, ``get -l`` and ``get -w``, the
SCHEDULE of objects with ``spec.schedules`` and calendars, ``version``'s exit code, and errors that say what to
do (a missing CRD, an expired login) - with kubectl faked, or replaced by a script on PATH."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from tests.unit.cli.conftest import NOW, FakeKubectl, Run, scheduled_job

from sundial.cli.kubectl import main, printers, runner

#: The repository's own sample with two schedules (config/samples/month-end-and-third-friday.yaml).
TWO_SCHEDULES = ["0 18 LW * *", "0 18 ? * FRI#3"]

#: What kubectl prints when the API server has no such resource (no CRD installed).
NO_RESOURCE = 'error: the server doesn\'t have a resource type "scheduledjobs"\n'
#: What kubectl 1.3x prints for an expired token: client-go's discovery logs, then kubectl's summary.
EXPIRED = (
    'E1205 09:00:00.000000   4242 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API group '
    'list: the server has asked for the client to provide credentials"\n'
    "error: You must be logged in to the server (the server has asked for the client to provide credentials)\n"
)


# --- SCHEDULE and describe for spec.schedules and calendars -----------------------------------------


def test_get_shows_every_entry_of_spec_schedules_and_the_calendars(run: Run) -> None:
    cluster = FakeKubectl(
        scheduled_job("month-end", schedules=TWO_SCHEDULES, timeZone="Europe/Berlin"),
        scheduled_job("payroll", schedule="0 6 1,15 * *", calendarRefs=["holidays", "freeze"]),
        scheduled_job("once", runAt="2027-04-01T00:00:00Z"),
        scheduled_job("asap"),
    )
    code, out, _ = run(cluster, "get")
    assert code == 0
    schedule = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "0 18 LW * *; 0 18 ? * FRI#3" in schedule["month-end"]
    assert "asap" not in schedule["month-end"]
    assert "0 6 1,15 * * + 2 calendars" in schedule["payroll"]
    assert "at 2027-04-01T00:00:00Z" in schedule["once"]
    assert " asap " in schedule["asap"]
    wide = run(cluster, "get", "-o", "wide")[1].splitlines()
    assert "CALENDARS" in wide[0]
    assert "holidays,freeze" in next(line for line in wide if line.startswith("payroll"))


def test_describe_lists_each_schedule_and_the_calendars() -> None:
    text = printers.text(
        scheduled_job(schedules=TWO_SCHEDULES, timeZone="Europe/Berlin", calendarRefs=["holidays"]), now=NOW, count=2
    )
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Schedules:"))
    assert lines[start + 1 : start + 3] == ["  0 18 LW * *", "  0 18 ? * FRI#3"]
    assert "as soon as possible" not in text
    assert "Calendars:   holidays" in lines
    assert "Schedule:    once at 2027-04-01T00:00:00Z" in printers.text(
        scheduled_job(runAt="2027-04-01T00:00:00Z"), now=NOW, count=1
    )


# --- kubectl's global flags --------------------------------------------------------------------------


def test_every_global_flag_of_kubectl_is_accepted_and_passed_through() -> None:
    options, rest = runner.split_global_flags(
        [
            "get",
            "--token",
            "t0k3n",
            "--certificate-authority=/ca.crt",
            "--client-certificate",
            "/c.crt",
            "--client-key=/c.key",
            "-v6",
            "--insecure-skip-tls-verify",
            "--tls-server-name",
            "api.example",
            "--warnings-as-errors=false",
            "-o",
            "wide",
        ]
    )
    assert rest == ["get", "-o", "wide"]
    assert runner.Kubectl(options).base == [
        "kubectl",
        "--token=t0k3n",
        "--certificate-authority=/ca.crt",
        "--client-certificate=/c.crt",
        "--client-key=/c.key",
        "--tls-server-name=api.example",
        "--insecure-skip-tls-verify=true",
        "--warnings-as-errors=false",
        "--v=6",
    ]
    with pytest.raises(runner.PluginError, match="--insecure-skip-tls-verify: must be true or false"):
        runner.split_global_flags(["--insecure-skip-tls-verify=maybe"])


def test_the_parser_accepts_the_global_flags_before_and_after_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through ``main``, with a kubectl on PATH that prints one object: nothing is an unrecognized argument."""
    args = _fake_kubectl(
        tmp_path, monkeypatch, stdout=json.dumps(scheduled_job("a"), indent=4) + "\n", stderr="", code=0
    )
    code = main.main(["-v", "8", "get", "--token=x", "--certificate-authority", "/ca", "-l", "a=b", "-w"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert out.splitlines()[1].startswith("a ")
    assert args.read_text().split() == [
        "--token=x",
        "--certificate-authority=/ca",
        "--v=8",
        "get",
        runner.RESOURCE,
        "-l",
        "a=b",
        "--watch",
        "-o",
        "json",
    ]


# --- get -l, get -w ----------------------------------------------------------------------------------


def test_get_selector_is_passed_to_kubectl(run: Run) -> None:
    labelled = scheduled_job("a", schedule="0 * * * *")
    labelled["metadata"]["labels"] = {"team": "a"}
    cluster = FakeKubectl(labelled, scheduled_job("b", schedule="0 * * * *"))
    code, out, _ = run(cluster, "get", "-l", "team=a", "-o", "name")
    assert (code, out) == (0, "scheduledjob.sundial.dev/a\n")
    assert cluster.calls[-1][2:4] == ("-l", "team=a")


def test_get_watch_prints_the_header_once_and_a_line_per_change(run: Run, cluster: FakeKubectl) -> None:
    changed = copy.deepcopy(cluster.objects["report"])
    changed["spec"]["suspend"] = True
    cluster.changes = [changed]
    code, out, _ = run(cluster, "get", "-w")
    header, first, second = out.splitlines()
    assert code == 0
    assert header.split()[:2] == ["NAME", "SCHEDULE"]
    assert first.startswith("report") and " False " in first
    assert second.startswith("report") and " True " in second
    assert cluster.calls[-1][:2] == ("get", runner.RESOURCE) and "--watch" in cluster.calls[-1]
    printed = run(cluster, "get", "-w", "-o", "json")[1]
    assert [o["spec"].get("suspend", False) for o in runner.json_documents(iter(printed.splitlines(True)))] == [
        False,
        True,
    ]


def _fake_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, stdout: str, stderr: str, code: int) -> Path:
    """A ``kubectl`` on PATH that prints STDOUT and STDERR and exits with CODE; it records its arguments."""
    (tmp_path / "out").write_text(stdout)
    (tmp_path / "err").write_text(stderr)
    script = tmp_path / "kubectl"
    script.write_text(
        f'#!/bin/sh\necho "$@" > {tmp_path}/args\ncat {tmp_path}/out\ncat {tmp_path}/err >&2\nexit {code}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "args"


def test_the_stream_yields_each_object_kubectl_prints_and_fails_as_kubectl_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = [scheduled_job("a"), scheduled_job("b")]
    printed = "".join(json.dumps(o, indent=4) + "\n" for o in objects)
    args = _fake_kubectl(tmp_path, monkeypatch, stdout=printed, stderr="", code=0)
    kubectl = runner.Kubectl(runner.split_global_flags(["-n", "team-a", "--token=t"])[0])
    assert [o["metadata"]["name"] for o in kubectl.stream("get", runner.RESOURCE, "--watch")] == ["a", "b"]
    assert args.read_text().split() == [
        "--token=t",
        "--namespace=team-a",
        "get",
        runner.RESOURCE,
        "--watch",
        "-o",
        "json",
    ]
    _fake_kubectl(tmp_path, monkeypatch, stdout=printed, stderr=NO_RESOURCE, code=1)
    with pytest.raises(runner.MissingCRDError):
        list(kubectl.stream("get", runner.RESOURCE, "--watch"))


# --- errors that say what to do ---------------------------------------------------------------------


def test_a_missing_crd_says_how_to_install_sundial_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    error = runner.failure(NO_RESOURCE, 1)
    assert isinstance(error, runner.MissingCRDError)
    assert str(error).startswith("the server doesn't have a resource type \"scheduledjobs\": Sundial's CRDs are not")
    assert "helm install sundial" in str(error) and "config/default" in str(error)
    _fake_kubectl(tmp_path, monkeypatch, stdout="", stderr=NO_RESOURCE, code=1)
    assert main.main(["get"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the server doesn't have") and "error: error:" not in err


def test_an_expired_login_is_reported_as_such_not_as_an_unreachable_cluster(run: Run, cluster: Any) -> None:
    error = runner.failure(EXPIRED, 1)
    assert type(error) is runner.LoginError
    assert "expired or invalid login" in str(error) and "unreachable" not in str(error)
    assert "memcache" not in str(error)
    assert type(runner.failure("error: exec plugin: getting credentials: exec: executable aws not found", 1)) is (
        runner.LoginError
    )
    cluster.run = lambda *args, **kw: (_ for _ in ()).throw(error)
    code, out, _ = run(cluster, "version")
    assert code == 1
    assert out.splitlines()[1].startswith("Server: login refused (the cluster refused your credentials")


def test_version_exits_0_when_the_server_answers(run: Run, cluster: Any) -> None:
    assert run(cluster, "version")[0] == 0
