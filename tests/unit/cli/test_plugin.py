"""The kubectl plugin: argument handling, descriptions and next times, with kubectl faked at its boundary."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from sundial.cli import plugin
from sundial.model import ScheduledJob, Trigger
from sundial.planner import manifests, names

NOW = datetime(2027, 3, 27, 0, 0, tzinfo=UTC)


def body(**spec: Any) -> dict[str, Any]:
    template = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    return {
        "metadata": {"name": "report", "namespace": "team-a", "uid": "u-1", "generation": 1},
        "spec": {"jobTemplate": template, **spec},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Scheduled",
                    "message": "ok",
                    "lastTransitionTime": "2027-03-26T00:00:00Z",
                }
            ],
            "deadLetters": [
                {
                    "scheduledTime": "2027-03-26T01:30:00Z",
                    "attempts": 3,
                    "reason": "MaxAttemptsExceeded",
                    "trigger": "schedule",
                    "deadLetteredAt": "2027-03-26T02:00:00Z",
                }
            ],
        },
    }


class FakeKubectl:
    """Records kubectl invocations and answers `get` with a fixed object."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj
        self.calls: list[tuple[str, ...]] = []

    def run(self, *args: str, namespaced: bool = True) -> str:
        self.calls.append(args)
        if args[:1] == ("annotate",):
            key, _, value = args[3].partition("=")
            self.obj["metadata"].setdefault("annotations", {})[key] = value
            status = self.obj["status"]
            if key == plugin.TRIGGER_ANNOTATION:
                status["lastHandledTrigger"] = value
            if key == plugin.REDRIVE_ANNOTATION:
                status["lastHandledRedrive"] = value
        return ""

    def get(self, name: str) -> dict[str, Any]:
        return self.obj


def test_next_times_follow_the_operators_dst_rules() -> None:
    obj = ScheduledJob.from_dict(body(schedule="30 2 * * *", timeZone="Europe/Berlin"))
    times = plugin.next_times(obj, after=NOW, count=3)
    assert [t.isoformat() for t in times] == [
        "2027-03-27T01:30:00+00:00",
        "2027-03-28T01:00:00+00:00",
        "2027-03-29T00:30:00+00:00",
    ]


def test_next_times_of_a_one_off_is_its_run_at_until_it_passes() -> None:
    obj = ScheduledJob.from_dict(body(runAt="2027-03-28T10:00:00Z"))
    assert plugin.next_times(obj, after=NOW, count=3) == [datetime(2027, 3, 28, 10, tzinfo=UTC)]
    assert plugin.next_times(obj, after=datetime(2027, 4, 1, tzinfo=UTC), count=3) == []


def test_next_times_respect_end_time() -> None:
    obj = ScheduledJob.from_dict(body(schedule="0 * * * *", endTime="2027-03-27T02:00:00Z"))
    assert len(plugin.next_times(obj, after=NOW, count=10)) == 2


def test_describe_shows_next_runs_conditions_and_dead_letters() -> None:
    text = plugin.describe(body(schedule="30 2 * * *", timeZone="Europe/Berlin"), now=NOW, count=2)
    assert "2027-03-27T01:30:00Z" in text
    assert "Ready=True Scheduled" in text
    assert "Dead letters: 1" in text
    assert "MaxAttemptsExceeded" in text


def test_describe_names_the_invalid_field() -> None:
    text = plugin.describe(body(schedule="61 * * * *"), now=NOW, count=2)
    assert "Invalid:" in text
    assert "spec.schedule" in text


def parse(*argv: str) -> argparse.Namespace:
    return plugin.build_parser().parse_args(list(argv))


def test_trigger_sets_a_fresh_token_annotation_and_waits_for_the_echo(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeKubectl(body(schedule="* * * * *"))
    args = parse("trigger", "report", "-n", "team-a", "--wait", "--timeout", "1")
    assert plugin.cmd_trigger(args, fake, lambda: NOW) == 0  # type: ignore[arg-type]
    assert fake.calls[0] == (
        "annotate",
        plugin.RESOURCE,
        "report",
        "sundial.dev/trigger=2027-03-27T00:00:00.000000Z",
        "--overwrite",
    )
    assert "run requested" in capsys.readouterr().out


def test_redrive_reports_how_many_dead_letters_it_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeKubectl(body(schedule="* * * * *"))
    assert plugin.cmd_redrive(parse("redrive", "report"), fake, lambda: NOW) == 0  # type: ignore[arg-type]
    assert "redrive of 1 dead letter(s)" in capsys.readouterr().out


def test_suspend_patches_spec_and_warns_about_gitops(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeKubectl(body(schedule="* * * * *"))
    assert plugin.cmd_suspend(parse("suspend", "report"), fake, lambda: NOW) == 0  # type: ignore[arg-type]
    assert fake.calls[0][:3] == ("patch", plugin.RESOURCE, "report")
    assert json.loads(fake.calls[0][-1]) == {"spec": {"suspend": True}}
    assert "GitOps" in capsys.readouterr().err


def test_preview_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeKubectl(body(schedule="30 2 * * *", timeZone="Europe/Berlin"))
    args = parse("preview", "report", "--count", "2", "-o", "json")
    assert plugin.cmd_preview(args, fake, lambda: NOW) == 0  # type: ignore[arg-type]
    assert json.loads(capsys.readouterr().out) == ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z"]


def test_kubectl_passes_global_flags_through() -> None:
    kubectl = plugin.Kubectl(parse("--kubeconfig", "/k", "--context", "c", "-n", "ns", "describe"))
    assert kubectl.base == ["kubectl", "--kubeconfig=/k", "--context=c"]
    assert kubectl.namespace == "ns"


def test_trigger_wait_lists_the_jobs_of_a_long_name_by_the_operators_label_value() -> None:
    # A ScheduledJob name may be 253 characters; a label value only 63: the operator labels its Jobs with a
    # shortened, hashed value, and the plugin must select with that same value (not the raw name).
    name = "nightly-report-for-the-finance-team-" + "x" * 34
    assert len(name) == 70
    sj = body(schedule="* * * * *")
    sj["metadata"]["name"] = name
    fake = FakeKubectl(sj)
    args = parse("trigger", name, "--wait", "--timeout", "1")
    assert plugin.cmd_trigger(args, fake, lambda: NOW) == 0  # type: ignore[arg-type]
    (listing,) = [call for call in fake.calls if call[:2] == ("get", "jobs")]
    selector = listing[listing.index("-l") + 1]
    job = manifests.build_job(
        obj=ScheduledJob.from_dict(sj), scheduled_time=NOW, attempt=1, trigger=Trigger.MANUAL, fencing_token="0-1"
    )
    label = job["metadata"]["labels"][names.SCHEDULED_JOB_LABEL]
    assert selector == f"{names.SCHEDULED_JOB_LABEL}={label}"
    assert label != name
    assert len(label) <= names.MAX_LABEL_LENGTH
