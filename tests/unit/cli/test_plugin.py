"""The kubectl plugin: kubectl's conventions (global flags, -o, create job --from), with kubectl faked."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from sundial.cli.kubectl import nextruns, printers, runner
from sundial.model import ScheduledJob, names

NOW = datetime(2027, 3, 27, 0, 0, tzinfo=UTC)
Run = Callable[..., tuple[int, str, str]]


def body(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {
        "metadata": {"name": "report", "namespace": "team-a", "uid": "u-1", "generation": 1},
        "spec": {"jobTemplate": template, **spec},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "Scheduled", "message": "ok"}],
            "deadLetters": [{"scheduledTime": "2027-03-26T01:30:00Z", "attempts": 3, "reason": "MaxAttemptsExceeded"}],
        },
    }


# --- times and descriptions ------------------------------------------------------------------------


def test_next_times_follow_the_operators_dst_rules() -> None:
    obj = ScheduledJob.from_dict(body(schedule="30 2 * * *", timeZone="Europe/Berlin"))
    times = nextruns.next_times(obj, after=NOW, count=3)
    assert [t.isoformat() for t in times] == [
        "2027-03-27T01:30:00+00:00",
        "2027-03-28T01:00:00+00:00",
        "2027-03-29T00:30:00+00:00",
    ]


def test_next_times_of_a_one_off_is_its_run_at_until_it_passes() -> None:
    obj = ScheduledJob.from_dict(body(runAt="2027-03-28T10:00:00Z"))
    assert nextruns.next_times(obj, after=NOW, count=3) == [datetime(2027, 3, 28, 10, tzinfo=UTC)]
    assert nextruns.next_times(obj, after=datetime(2027, 4, 1, tzinfo=UTC), count=3) == []


def test_next_times_respect_end_time() -> None:
    obj = ScheduledJob.from_dict(body(schedule="0 * * * *", endTime="2027-03-27T02:00:00Z"))
    assert len(nextruns.next_times(obj, after=NOW, count=10)) == 2


def test_describe_shows_next_runs_conditions_and_dead_letters() -> None:
    text = printers.text(body(schedule="30 2 * * *", timeZone="Europe/Berlin"), now=NOW, count=2)
    assert "2027-03-27T01:30:00Z" in text
    assert "Ready=True Scheduled" in text
    assert "Dead letters: 1" in text
    assert "MaxAttemptsExceeded" in text


def test_describe_names_the_invalid_field() -> None:
    text = printers.text(body(schedule="61 * * * *"), now=NOW, count=2)
    assert "Invalid:" in text
    assert "spec.schedule" in text


# --- kubectl's global flags ------------------------------------------------------------------------


def test_global_flags_are_taken_from_anywhere_on_the_line() -> None:
    options, rest = runner.split_global_flags(
        ["describe", "report", "--context", "prod", "-n", "team-a", "-o", "yaml", "--kubeconfig=/k", "--as", "me"]
    )
    assert rest == ["describe", "report", "-o", "yaml"]
    assert options.namespace == "team-a"
    assert runner.Kubectl(options).base == ["kubectl", "--context=prod", "--kubeconfig=/k", "--as=me"]


def test_global_flags_in_short_joined_and_repeated_forms_and_up_to_a_double_dash() -> None:
    options, rest = runner.split_global_flags(["-nteam-b", "get", "--as-group", "a", "--as-group=b", "--", "-n", "x"])
    assert options.namespace == "team-b"
    assert runner.Kubectl(options).base == ["kubectl", "--as-group=a", "--as-group=b"]
    assert rest == ["get", "--", "-n", "x"]
    with pytest.raises(runner.PluginError, match="--context"):
        runner.split_global_flags(["get", "--context"])


def test_the_namespace_goes_to_namespaced_calls_only(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    class Done:
        returncode, stdout, stderr = 0, "{}", ""

    monkeypatch.setattr(runner.subprocess, "run", lambda command, **_: seen.append(command) or Done())
    kubectl = runner.Kubectl(runner.split_global_flags(["-n", "ns", "--context", "c"])[0])
    kubectl.run("get", "x")
    kubectl.run("get", "crd", namespaced=False)
    assert seen == [["kubectl", "--context=c", "--namespace=ns", "get", "x"], ["kubectl", "--context=c", "get", "crd"]]


# --- get, describe, preview ------------------------------------------------------------------------


def test_get_prints_a_table_with_next_and_last_runs(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "get")
    assert code == 0
    header, row = out.splitlines()
    assert header.split()[:4] == ["NAME", "SCHEDULE", "SUSPEND", "ACTIVE"]
    assert row.split()[0] == "report"
    assert "in 3h" in row and "30m" in row, row  # next run in 3 h, last scheduled 30 min ago


def test_get_all_namespaces_and_wide_add_columns(run: Run, new_cluster: Callable[..., Any]) -> None:
    fake = new_cluster({"name": "a", "schedule": "@daily"}, {"name": "b", "schedule": "@hourly", "namespace": "team-b"})
    _, out, _ = run(fake, "get", "-A", "-o", "wide")
    lines = out.splitlines()
    assert lines[0].startswith("NAMESPACE") and "DEAD LETTERS" in lines[0] and "TIME ZONE" in lines[0]
    assert [line.split()[:2] for line in lines[1:]] == [["team-a", "a"], ["team-b", "b"]]
    assert "--all-namespaces" in fake.calls[0]


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_get_o_json_and_yaml_print_the_objects_as_kubectl_does(
    run: Run, new_cluster: Callable[..., Any], output: str
) -> None:
    fake = new_cluster({"name": "a", "schedule": "@daily"}, {"name": "b", "schedule": "@hourly"})
    _, out, _ = run(fake, "get", "a", "-o", output)
    one = json.loads(out) if output == "json" else yaml.safe_load(out)
    assert one["metadata"]["name"] == "a"
    _, out, _ = run(fake, "list", "-o", output)
    several = json.loads(out) if output == "json" else yaml.safe_load(out)
    assert several["kind"] == "List" and [i["metadata"]["name"] for i in several["items"]] == ["a", "b"]


def test_get_o_name(run: Run, cluster: Any) -> None:
    assert run(cluster, "get", "-o", "name")[1] == "scheduledjob.sundial.dev/report\n"


def test_get_says_when_nothing_is_there(run: Run, new_cluster: Callable[..., Any]) -> None:
    code, out, err = run(new_cluster(), "get")
    assert (code, out) == (0, "")
    assert "No resources found in team-a namespace." in err


def test_describe_o_yaml_adds_the_next_runs_to_the_object(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "describe", "report", "-o", "yaml", "--count", "2")
    described = yaml.safe_load(out)
    assert code == 0
    assert described["nextRuns"] == ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z"]
    assert described["scheduledJob"]["metadata"]["name"] == "report"
    assert run(cluster, "describe", "report", "-o", "name")[1] == "scheduledjob.sundial.dev/report\n"


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_preview_prints_json_and_yaml(run: Run, cluster: Any, output: str) -> None:
    _, out, _ = run(cluster, "preview", "report", "--count", "2", "-o", output)
    assert yaml.safe_load(out) == ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z"]


# --- calendars ---------------------------------------------------------------------------------------


def _calendar(name: str, spec: dict[str, Any], namespace: str = "team-a") -> dict[str, Any]:
    return {"kind": "ScheduleCalendar", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_preview_leaves_out_the_times_a_referenced_calendar_excludes(run: Run, new_cluster: Callable[..., Any]) -> None:
    fake = new_cluster({"name": "daily", "schedule": "0 9 * * *", "calendarRefs": ["holidays"]})
    fake.calendars["holidays"] = _calendar("holidays", {"exclude": [{"dates": ["2027-03-28", "2027-03-29"]}]})
    code, out, _ = run(fake, "preview", "daily", "--count", "3", "-o", "json")
    assert code == 0
    assert json.loads(out) == ["2027-03-27T09:00:00Z", "2027-03-30T09:00:00Z", "2027-03-31T09:00:00Z"]
    _, out, _ = run(fake, "describe", "daily", "-o", "json", "--count", "2")
    assert json.loads(out)["nextRuns"] == ["2027-03-27T09:00:00Z", "2027-03-30T09:00:00Z"]


def test_a_missing_or_invalid_calendar_is_reported_as_the_operator_reports_it_and_nothing_is_listed(
    run: Run, new_cluster: Callable[..., Any]
) -> None:
    fake = new_cluster({"name": "daily", "schedule": "0 9 * * *", "calendarRefs": ["holidays"]})
    code, out, err = run(fake, "preview", "daily")
    assert (code, out) == (2, "")
    assert "ScheduleCalendar holidays not found in namespace team-a (spec.calendarRefs)" in err
    fake.calendars["holidays"] = _calendar("holidays", {"exclude": [{"schedule": "61 * * * *"}]})
    _, out, _ = run(fake, "describe", "daily", "-o", "json")
    described = json.loads(out)
    assert described["nextRuns"] == []
    assert "ScheduleCalendar holidays" in described["calendarProblem"] and "is invalid" in described["calendarProblem"]
    _, text, _ = run(fake, "describe", "daily")
    assert "Calendars:   holidays" in text and "Not running: ScheduleCalendar holidays" in text


def test_calendars_are_listed_once_per_namespace_and_only_for_objects_that_refer_to_them(
    run: Run, new_cluster: Callable[..., Any]
) -> None:
    fake = new_cluster(
        {"name": "a", "schedule": "@daily", "calendarRefs": ["holidays"]},
        {"name": "b", "schedule": "@daily", "calendarRefs": ["holidays"]},
        {"name": "c", "schedule": "@daily"},
    )
    fake.calendars["holidays"] = _calendar("holidays", {"exclude": [{"dates": ["2027-03-28"]}]})
    run(fake, "describe")
    assert [c for c in fake.calls if "schedulecalendars.sundial.dev" in c] == [
        ("get", "schedulecalendars.sundial.dev", "--namespace=team-a", "-o", "json")
    ]
    fake.calls.clear()
    run(fake, "preview", "c")
    assert not [c for c in fake.calls if "schedulecalendars.sundial.dev" in c]


# --- trigger, create job, redrive, suspend ---------------------------------------------------------


def test_trigger_sets_a_fresh_token_annotation(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "trigger", "report")
    assert code == 0
    assert cluster.calls[0] == (
        "annotate",
        runner.RESOURCE,
        "report",
        "sundial.dev/trigger=2027-03-27T00:00:00.000000Z",
        "--overwrite",
        "-o",
        "json",
    )
    assert out == "scheduledjob/report: run requested (token 2027-03-27T00:00:00.000000Z)\n"
    assert run(cluster, "trigger", "report", "-o", "name")[1] == "scheduledjob.sundial.dev/report\n"


def test_trigger_wait_prints_the_job_of_the_run(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "trigger", "report", "--wait", "--timeout", "1")
    assert code == 0
    (job,) = cluster.jobs
    assert "run requested" in out and "NAME" in out and job["metadata"]["name"] in out
    _, out, _ = run(cluster, "trigger", "report", "--wait", "--timeout", "1", "-o", "name")
    assert out == f"job.batch/{cluster.jobs[-1]['metadata']['name']}\n"
    _, out, _ = run(cluster, "trigger", "report", "--wait", "--timeout", "1", "-o", "json")
    assert json.loads(out)["kind"] == "Job"


def test_trigger_wait_fails_when_the_operator_does_not_answer(run: Run, new_cluster: Callable[..., Any]) -> None:
    code, _, err = run(
        new_cluster({"schedule": "@daily"}, operator=False), "trigger", "report", "--wait", "--timeout", "0"
    )
    assert code == 1
    assert "has not handled the request" in err


def test_create_job_from_a_scheduled_job_is_one_manual_run_named_by_the_request(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "create", "job", "rerun-1", "--from=scheduledjob/report", "--timeout", "1")
    assert code == 0
    (job,) = cluster.jobs
    assert out == f"job.batch/{job['metadata']['name']} created\n"
    assert cluster.objects["report"]["metadata"]["annotations"][names.TRIGGER_ANNOTATION] == "rerun-1"
    code, _, err = run(cluster, "create", "job", "rerun-1", "--from", "sj/report")
    assert code == 1 and "already requested" in err
    assert len(cluster.jobs) == 1
    code, _, err = run(cluster, "create", "job", "x", "--from=cronjob/report")
    assert code == 1 and "--from: expected scheduledjob/NAME" in err


def test_the_job_lookup_uses_the_operators_label_value_for_long_names(
    run: Run, new_cluster: Callable[..., Any]
) -> None:
    long_name = "a-scheduled-job-whose-name-is-much-longer-than-the-sixty-three-characters-of-a-label"
    fake = new_cluster({"name": long_name, "schedule": "@daily"})
    code, out, _ = run(fake, "create", "job", "r", f"--from=scheduledjob/{long_name}", "--timeout", "1", "-o", "name")
    assert code == 0, out
    selector = next(call for call in fake.calls if "-l" in call)
    assert names.job_selector(long_name) in selector
    assert names.scheduled_job_label_value(long_name) in names.job_selector(long_name)


def test_redrive_reports_how_many_dead_letters_it_asked_for(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "redrive", "report", "--wait", "--timeout", "1")
    assert code == 0
    assert "redrive of 1 dead letter(s)" in out
    _, out, _ = run(cluster, "redrive", "report", "-o", "json")
    assert json.loads(out)["metadata"]["annotations"][names.REDRIVE_ANNOTATION]


def test_suspend_patches_spec_and_warns_about_gitops(run: Run, cluster: Any) -> None:
    code, out, err = run(cluster, "suspend", "report")
    assert code == 0
    assert cluster.calls[0][:3] == ("patch", runner.RESOURCE, "report")
    assert cluster.objects["report"]["spec"]["suspend"] is True
    assert "GitOps" in err and out == "scheduledjob/report suspended\n"
    assert run(cluster, "resume", "report", "-o", "name")[1] == "scheduledjob.sundial.dev/report\n"


# --- version ---------------------------------------------------------------------------------------


def test_version_reports_the_client_and_what_the_cluster_says(run: Run, cluster: Any) -> None:
    code, out, _ = run(cluster, "version", "-o", "json")
    found = json.loads(out)
    assert code == 0
    assert found["clientVersion"]["version"] == __import__("sundial").__version__
    assert found["crd"]["served"] == ["v1alpha1"]
    assert found["operators"] == []
    assert "Client Version:" in run(cluster, "version")[1]


def test_version_without_a_cluster_prints_the_client_and_one_line_saying_so_and_exits_1(run: Run, cluster: Any) -> None:
    cluster.unreachable = True
    code, out, err = run(cluster, "version")
    assert code == 1, err  # as kubectl's version exits when the server cannot be reached
    client, server = out.splitlines()
    assert client.startswith("Client Version: ")
    assert server == (
        "Server: unreachable (The connection to the server 127.0.0.1:1 was refused - "
        "did you specify the right host or port?)"
    )
    assert "memcache" not in out + err
    assert len(cluster.calls) == 1  # no second attempt at the Deployments once the server is known unreachable
    found = json.loads(run(cluster, "version", "-o", "json")[1])
    assert found["unreachable"].startswith("the cluster is unreachable: The connection to the server 127.0.0.1:1")
    assert "errors" not in found and "crd" not in found
    assert run(cluster, "version", "--client")[0] == 0
    assert run(cluster, "version", "--client")[1].count("\n") == 1


def test_kubectl_failures_drop_client_go_log_lines_and_name_an_unreachable_server() -> None:
    from tests.unit.cli.conftest import REFUSED  # noqa: PLC0415

    refused = runner.failure(REFUSED, 1)
    assert isinstance(refused, runner.UnreachableError)
    assert str(refused) == (
        "the cluster is unreachable: The connection to the server 127.0.0.1:1 was refused - "
        "did you specify the right host or port?"
    )
    only_logs = runner.failure(REFUSED.splitlines()[0], 1)
    assert isinstance(only_logs, runner.UnreachableError) and "memcache.go" not in str(only_logs)
    forbidden = runner.failure('Error from server (Forbidden): deployments.apps is forbidden: User "u"', 1)
    assert type(forbidden) is runner.PluginError and str(forbidden).startswith("Error from server (Forbidden)")
    assert str(runner.failure("", 3)) == "kubectl exited with 3"


# --- backfill --------------------------------------------------------------------------------------


def test_backfill_writes_the_request_annotation_and_waits_for_its_progress(run: Run, cluster: Any) -> None:
    code, out, _ = run(
        cluster, "backfill", "report", "--from", "2027-03-20T00:00:00Z", "--to", "now", "--max-runs", "5", "--wait"
    )
    assert code == 0
    request = json.loads(cluster.objects["report"]["metadata"]["annotations"][names.BACKFILL_ANNOTATION])
    assert request == {
        "token": request["token"],
        "from": "2027-03-20T00:00:00Z",
        "to": "2027-03-27T00:00:00Z",
        "maxRuns": 5,
    }
    assert "2 run(s) started, 1 time(s) already had a run" in out


def test_backfill_of_a_one_off_reports_the_refusal(run: Run, new_cluster: Callable[..., Any]) -> None:
    fake = new_cluster({"name": "once", "runAt": "2027-04-01T00:00:00Z"})
    code, out, _ = run(fake, "backfill", "once", "--from", "2027-03-20T00:00:00Z", "--to", "now", "--wait")
    assert code == 1 and "refused" in out


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (("--from", "yesterday", "--to", "now"), "--from:"),
        (("--from", "now", "--to", "2027-03-20T00:00:00Z"), "must not be before --from"),
        (("--from", "2027-03-20T00:00:00Z", "--to", "now", "--max-runs", "0"), "--max-runs"),
    ],
)
def test_backfill_refuses_bad_flags_before_writing_anything(
    run: Run, cluster: Any, argv: tuple[str, ...], problem: str
) -> None:
    code, _, err = run(cluster, "backfill", "report", *argv)
    assert code == 1 and problem in err
    assert not [c for c in cluster.calls if c[0] == "annotate"]
