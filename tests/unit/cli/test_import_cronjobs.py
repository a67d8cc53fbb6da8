"""``kubectl sundial import``: real CronJob manifests (tests/unit/cli/cronjobs/, shaped as the Kubernetes docs,
kubectl create and the Kubernetes e2e suite write them) become ScheduledJobs, every difference named."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.cli.kubectl import cronjobs
from sundial.model import parse_spec

from .conftest import FakeKubectl, Run

MANIFESTS = Path(__file__).parent / "cronjobs"


def load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text(encoding="utf-8"))
    return body


@dataclass(frozen=True)
class Case:
    file: str
    # expectations
    spec: dict[str, Any]
    """The ScheduledJob's spec without its jobTemplate."""
    notes: tuple[str, ...]
    """Fields with a note, in order (the notes every import has are checked once, below)."""
    template_metadata: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)


CASES = [
    Case(
        file="docs-hello.yaml",
        spec={"schedule": "* * * * *"},
        notes=("spec.timeZone", "spec.startingDeadlineSeconds", "metadata.annotations"),
        metadata={"name": "hello", "namespace": "default"},
    ),
    Case(
        file="kubectl-create.yaml",
        spec={"schedule": "*/1 * * * *"},
        notes=("spec.timeZone", "spec.startingDeadlineSeconds", "spec.jobTemplate.metadata.name"),
        metadata={"name": "busybox", "namespace": "default"},
    ),
    Case(
        file="e2e-forbid.yaml",
        spec={
            "schedule": "*/1 * * * ?",
            "concurrencyPolicy": "Forbid",
            "successfulJobsHistoryLimit": 1,
        },
        notes=("spec.timeZone", "spec.startingDeadlineSeconds"),
        metadata={"name": "forbid", "namespace": "cronjob-1234", "labels": {"special-label": "forbid"}},
    ),
    Case(
        file="deadline-zone-replace.yaml",
        spec={
            "schedule": "30 2 * * 1-5",
            "timeZone": "Europe/Berlin",
            "suspend": True,
            "concurrencyPolicy": "Replace",
            "catchUp": {"window": "200s", "policy": "Latest"},
            "successfulJobsHistoryLimit": 0,
            "failedJobsHistoryLimit": 100,
        },
        notes=(
            "spec.startingDeadlineSeconds",
            "spec.startingDeadlineSeconds",
            "spec.failedJobsHistoryLimit",
            "metadata.annotations",
        ),
        template_metadata={
            "labels": {"app": "report", "tier": "batch"},
            "annotations": {"sidecar.istio.io/inject": "false"},
        },
        metadata={
            "name": "nightly-report",
            "namespace": "team-a",
            "labels": {"app": "report"},
            "annotations": {"owner": "data-team"},
        },
    ),
    Case(
        file="tz-prefix.yaml",
        spec={"schedule": "0 9 * * *", "timeZone": "Asia/Tokyo"},
        notes=("spec.schedule", "spec.startingDeadlineSeconds"),
        metadata={"name": "tokyo-morning", "namespace": "default"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_a_cronjob_becomes_the_equivalent_scheduled_job(case: Case) -> None:
    source = load(case.file)
    result = cronjobs.convert(source)
    manifest = result.manifest
    assert manifest["apiVersion"] == "sundial.dev/v1alpha1" and manifest["kind"] == "ScheduledJob"
    assert manifest["metadata"] == case.metadata
    spec = dict(manifest["spec"])
    template = spec.pop("jobTemplate")
    assert spec == case.spec
    assert template["spec"] == source["spec"]["jobTemplate"]["spec"]  # the Job spec unchanged
    assert template.get("metadata", {}) == case.template_metadata
    own = [note.field for note in result.notes if note.field.startswith(("spec.", "metadata."))]
    assert tuple(own) == case.notes
    parse_spec(manifest["spec"])  # what the webhook would accept


def test_every_import_names_the_differences_every_cronjob_has() -> None:
    notes = {note.field: note.text for note in cronjobs.convert(load("docs-hello.yaml")).notes}
    assert "cronjob-scheduled-timestamp" in notes["Job annotations"]
    assert "sundial.dev/scheduled-time" in notes["Job annotations"]
    assert "too many missed start times" in notes["spec.startingDeadlineSeconds"]
    assert "UTC" in notes["spec.timeZone"]
    assert "<name>-<minutes since 1970>" in notes["Job names"]


@pytest.mark.parametrize(
    ("file", "field", "problem"),
    [
        ("every.yaml", "spec.schedule", "'@every 90m' has no equivalent"),
        ("two-zones.yaml", "spec.schedule", "prefix names 'Asia/Tokyo' but spec.timeZone is 'Europe/Paris'"),
        ("impossible.yaml", "spec.schedule", "would be invalid"),
    ],
)
def test_a_cronjob_without_an_equivalent_is_refused_naming_the_field(file: str, field: str, problem: str) -> None:
    with pytest.raises(cronjobs.ConversionError) as raised:
        cronjobs.convert(load(file))
    assert field in str(raised.value) and problem in str(raised.value)


def test_a_spec_field_sundial_does_not_know_is_named() -> None:
    source = load("docs-hello.yaml")
    source["spec"]["someFutureField"] = {"x": 1}
    notes = [note.line() for note in cronjobs.convert(source).notes]
    assert "spec.someFutureField: no equivalent in a ScheduledJob: left out" in notes


def test_a_missing_job_template_is_refused() -> None:
    source = load("docs-hello.yaml")
    del source["spec"]["jobTemplate"]
    with pytest.raises(cronjobs.ConversionError, match=r"spec\.jobTemplate\.spec: missing"):
        cronjobs.convert(source)


class CronJobs(FakeKubectl):
    """The fake cluster, with CronJobs (``get cronjobs.batch`` by name, -A or -l)."""

    def __init__(self, *items: dict[str, Any]) -> None:
        super().__init__()
        self.cronjobs = list(items)

    def run(self, *args: str, namespaced: bool = True) -> str:
        if args[:2] == ("get", "cronjobs.batch"):
            self.calls.append(args)
            import json  # noqa: PLC0415

            names = [a for a in args[2:] if not a.startswith("-") and a != "json"]
            selector = next((a.partition("=")[2] for a in args if a.startswith("--selector=")), None)
            chosen = [c for c in self.cronjobs if not names or c["metadata"]["name"] in names]
            if selector:
                key, _, value = selector.partition("=")
                chosen = [c for c in chosen if (c["metadata"].get("labels") or {}).get(key) == value]
            if len(names) == 1:
                return json.dumps(chosen[0])
            return json.dumps({"kind": "List", "items": chosen})
        return super().run(*args, namespaced=namespaced)


def test_import_prints_yaml_with_the_differences_as_comments(run: Run) -> None:
    code, out, err = run(CronJobs(load("docs-hello.yaml")), "import", "cronjob/hello")
    assert code == 0, err
    assert out.startswith("# spec.timeZone: unset")
    document = yaml.safe_load(out)
    assert document["kind"] == "ScheduledJob" and document["spec"]["schedule"] == "* * * * *"


def test_import_many_by_selector_and_report_the_one_that_cannot_be_imported(run: Run) -> None:
    cluster = CronJobs(load("e2e-forbid.yaml"), load("every.yaml"), load("docs-hello.yaml"))
    cluster.cronjobs[1]["metadata"]["labels"] = {"special-label": "forbid"}
    code, out, err = run(cluster, "import", "cronjobs", "-l", "special-label=forbid")
    assert code == 1
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(out)] == ["forbid"]
    assert "error: cronjob/interval (namespace default): spec.schedule: '@every 90m' has no equivalent" in err


def test_import_all_namespaces(run: Run) -> None:
    cluster = CronJobs(load("e2e-forbid.yaml"), load("docs-hello.yaml"))
    code, out, _ = run(cluster, "import", "cronjobs", "-A", "-o", "json")
    assert code == 0
    assert ("get", "cronjobs.batch", "--all-namespaces", "-o", "json") in cluster.calls
    assert out.count('"kind": "ScheduledJob"') == 2


def test_import_needs_names_or_a_selection(run: Run) -> None:
    code, _, err = run(CronJobs(), "import", "cronjobs")
    assert code == 1 and "name the CronJobs (cronjob/NAME) or select them with -A or -l" in err
    code, _, err = run(CronJobs(), "import", "deployment/web")
    assert code == 1 and "'deployment/web': name a CronJob as cronjob/NAME" in err
