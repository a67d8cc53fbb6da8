"""``kubectl sundial runs NAME``: the runs of one object newest first, from its Jobs and its status; and the
Events ``describe`` lists, as ``kubectl describe`` does."""

from __future__ import annotations

import json
from typing import Any

import yaml

from .conftest import FakeKubectl, Run, scheduled_job

LABEL = "sundial.dev/scheduledjob"


def job(name: str, scheduled: str, attempt: int, trigger: str, *, outcome: str) -> dict[str, Any]:
    conditions = {
        "Complete": [{"type": "Complete", "status": "True", "lastTransitionTime": "2027-03-26T23:31:30Z"}],
        "Failed": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": "Job has reached the specified backoff limit",
                "lastTransitionTime": "2027-03-26T22:01:00Z",
            }
        ],
        "Running": [],
    }[outcome]
    return {
        "metadata": {
            "name": name,
            "labels": {LABEL: "report"},
            "annotations": {
                "sundial.dev/scheduled-time": scheduled,
                "sundial.dev/attempt": str(attempt),
                "sundial.dev/trigger": trigger,
            },
            "creationTimestamp": scheduled,
        },
        "status": {"startTime": scheduled, "conditions": conditions}
        | ({"completionTime": "2027-03-26T23:31:30Z"} if outcome == "Complete" else {}),
    }


def cluster() -> FakeKubectl:
    obj = scheduled_job(schedule="30 * * * *")
    obj["status"] |= {
        "recentRuns": [
            {
                "scheduledTime": "2027-03-26T20:30:00Z",
                "attempts": 1,
                "result": "Succeeded",
                "job": "report-pruned",
                "trigger": "schedule",
                "startedAt": "2027-03-26T20:30:01Z",
                "finishedAt": "2027-03-26T20:30:31Z",
            },
            {
                "scheduledTime": "2027-03-26T23:30:00Z",
                "attempts": 1,
                "result": "Succeeded",
                "job": "report-2330-1",
                "trigger": "schedule",
                "finishedAt": "2027-03-26T23:31:30Z",
            },
        ],
        "active": [
            {
                "scheduledTime": "2027-03-27T00:30:00Z",
                "attempt": 1,
                "job": "report-0030-1",
                "trigger": "manual",
                "claimedAt": "2027-03-27T00:30:00Z",
            }
        ],
        "pendingRetries": [
            {
                "scheduledTime": "2027-03-26T22:00:00Z",
                "attempt": 2,
                "notBefore": "2027-03-26T22:05:00Z",
                "trigger": "backfill",
                "lastJob": "report-2200-1",
            }
        ],
    }
    fake = FakeKubectl(obj)
    fake.jobs = [
        job("report-2330-1", "2027-03-26T23:30:00Z", 1, "schedule", outcome="Complete"),
        job("report-2200-1", "2027-03-26T22:00:00Z", 1, "backfill", outcome="Failed"),
    ]
    return fake


def test_runs_lists_every_attempt_newest_first(run: Run) -> None:
    code, out, err = run(cluster(), "runs", "report")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "SCHEDULED",
        "TIME",
        "ATTEMPT",
        "TRIGGER",
        "JOB",
        "OUTCOME",
        "DURATION",
        "DEAD",
        "LETTER",
    ]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        ("2027-03-27T00:30:00Z", "1", "manual", "report-0030-1", "Starting"),
        ("2027-03-26T23:30:00Z", "1", "schedule", "report-2330-1", "Succeeded"),
        ("2027-03-26T22:00:00Z", "2", "backfill", "report-2200-1", "RetryPending"),
        ("2027-03-26T22:00:00Z", "1", "backfill", "report-2200-1", "Failed"),
        ("2027-03-26T20:30:00Z", "1", "schedule", "report-pruned", "Succeeded"),
        ("2027-03-26T01:30:00Z", "3", "schedule", "<none>", "DeadLettered"),  # from deadLetters only
    ]
    assert rows[1][5] == "90s"  # Job start to completion
    assert rows[4][5] == "30s"  # from recentRuns: the Job is gone


def test_runs_shows_dead_letters_and_limits(run: Run) -> None:
    fake = cluster()
    code, out, _ = run(fake, "runs", "report", "--limit", "2", "-o", "json")
    assert code == 0
    found = json.loads(out)
    assert [f["scheduledTime"] for f in found] == ["2027-03-27T00:30:00Z", "2027-03-26T23:30:00Z"]
    assert found[1]["durationSeconds"] == 90.0
    code, out, _ = run(fake, "runs", "report", "-o", "yaml")
    letters = [r for r in yaml.safe_load(out) if r["deadLetter"]]
    assert letters == [
        {
            "scheduledTime": "2027-03-26T01:30:00Z",
            "attempt": 3,
            "trigger": "schedule",
            "job": None,
            "outcome": "DeadLettered",
            "startedAt": None,
            "finishedAt": None,
            "durationSeconds": None,
            "deadLetter": "MaxAttemptsExceeded",
            "message": None,
        }
    ]
    code, out, _ = run(fake, "runs", "report", "-o", "wide")
    failed = next(line for line in out.splitlines() if " Failed " in line)
    assert "BackoffLimitExceeded: Job has reached the specified backoff limit" in failed


def test_describe_lists_the_recent_events(run: Run) -> None:
    fake = cluster()
    fake.events = [
        {
            "involvedObject": {"uid": "u-report"},
            "type": "Warning",
            "reason": "DeadLettered",
            "message": "run 01:30 dead-lettered after 3 attempts",
            "lastTimestamp": "2027-03-26T02:00:00Z",
            "count": 1,
            "source": {"component": "sundial"},
        },
        {
            "involvedObject": {"uid": "u-report"},
            "type": "Normal",
            "reason": "SuccessfulCreate",
            "message": "Created Job report-0030-1",
            "lastTimestamp": "2027-03-26T23:58:00Z",
            "count": 3,
            "source": {"component": "sundial"},
        },
        {"involvedObject": {"uid": "u-other"}, "type": "Normal", "reason": "Other", "message": "not ours"},
    ]
    code, out, _ = run(fake, "describe", "report")
    assert code == 0
    block = out[out.index("Events:") :].splitlines()
    assert block[1].split() == ["Type", "Reason", "Age", "From", "Message"]
    assert block[2].split()[:4] == ["Warning", "DeadLettered", "22h", "sundial"]
    assert block[3].split()[:5] == ["Normal", "SuccessfulCreate", "2m", "(x3)", "sundial"]
    assert "not ours" not in out
    code, out, _ = run(fake, "describe", "report", "-o", "json")
    assert [e["reason"] for e in json.loads(out)["events"]] == ["DeadLettered", "SuccessfulCreate"]


def test_describe_without_events_says_none(run: Run) -> None:
    code, out, _ = run(cluster(), "describe", "report")
    assert code == 0 and out.rstrip().endswith("Events:      <none>")
