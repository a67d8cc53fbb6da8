"""``kubectl sundial lint``: the repository's samples pass, and every file of the bad-input corpus
(``tests/invalid/``, headers ``expect-field`` and ``refused-by``) is refused naming its field, by the refuser
its header names - the CRD's schema or CEL rules (``crd``) or the webhook's code (``webhook``)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
import yaml

from sundial.cli.kubectl import crdchecks, lint

from ..model.test_invalid_corpus import CORPUS_FILES, REPO, SAMPLES_DIR, load
from .conftest import FakeKubectl, Run

BY = {"crd": ("schema", "cel"), "webhook": ("webhook",)}


def test_the_packaged_crds_are_the_repository_s() -> None:
    for name in crdchecks.CRD_FILES:
        packaged = REPO / "operator" / "sundial" / "data" / name
        assert packaged.read_bytes() == (REPO / "crds" / name).read_bytes(), f"copy crds/{name} to {packaged}"


def test_the_samples_pass(run: Run) -> None:
    code, out, err = run(FakeKubectl(), "lint", "-f", str(SAMPLES_DIR))
    assert code == 0, out
    assert out == ""
    assert "8 Sundial object(s) checked, 0 problem(s)" in err


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_each_bad_input_is_refused_naming_its_field_by_its_refuser(path: Path) -> None:
    case = load(path)
    findings, checked = lint.check(str(path), path.read_text(encoding="utf-8"))
    assert checked == 1
    assert findings, f"{path.name} passed lint"
    first = findings[0]
    assert first.file == str(path) and first.name == case.name and first.kind == case.document["kind"]
    assert first.by in BY[case.refused_by], [f.line() for f in findings]
    # A CEL rule is reported on the object that holds it, as the API server does, its message naming the field.
    named = [
        f
        for f in findings
        if f.field == case.expect_field or f.field.startswith(case.expect_field + ".") or case.expect_field in f.message
    ]
    assert named, f"{case.expect_field} not named: {[f.line() for f in findings]}"


def test_a_directory_with_a_bad_file_fails_with_one_line_per_problem(run: Run, tmp_path: Path) -> None:
    shutil.copy(SAMPLES_DIR / "every-minute-berlin.yaml", tmp_path / "good.yaml")
    shutil.copy(REPO / "tests" / "invalid" / "05-cron-minute-60.yaml", tmp_path / "bad.yaml")
    (tmp_path / "notes.txt").write_text("not a manifest")
    code, out, err = run(FakeKubectl(), "lint", "-f", str(tmp_path))
    assert code == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{tmp_path / 'bad.yaml'}: ScheduledJob/") and ": spec.schedule: " in lines[0]
    assert lines[0].endswith("[webhook]")
    assert "2 Sundial object(s) checked, 1 problem(s)" in err


def test_stdin_lists_and_other_kinds(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = yaml.safe_load((SAMPLES_DIR / "every-minute-berlin.yaml").read_text(encoding="utf-8"))
    wrong = json.loads(json.dumps(sample))
    wrong["spec"]["concurrencyPolicy"] = "Sometimes"
    wrong["spec"]["timeZone"] = "Local"
    stream = yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "List", "items": [sample, wrong]}, {"apiVersion": "v1", "kind": "ConfigMap"}]
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(stream))
    code, out, err = run(FakeKubectl(), "lint", "-f", "-", "-o", "json")
    assert code == 1
    found = json.loads(out)
    assert {(f["field"], f["by"]) for f in found} == {("spec.concurrencyPolicy", "schema"), ("spec.timeZone", "cel")}
    assert all(f["file"] == "<stdin>" and f["document"] == 2 for f in found)
    assert "2 Sundial object(s) checked" in err


def test_an_unknown_api_version_and_an_unreadable_file(run: Run, tmp_path: Path) -> None:
    (tmp_path / "old.yaml").write_text("apiVersion: sundial.dev/v9\nkind: ScheduledJob\nmetadata: {name: x}\n")
    (tmp_path / "broken.yaml").write_text("a: [unclosed\n")
    code, out, _ = run(FakeKubectl(), "lint", "-f", str(tmp_path))
    assert code == 1
    assert "broken.yaml: ?/? (document 0): (file): cannot be read as YAML" in out
    assert "old.yaml: ScheduledJob/x (document 1): apiVersion: sundial.dev/v9 ScheduledJob is not served" in out
    code, _, err = run(FakeKubectl(), "lint", "-f", str(tmp_path / "missing.yaml"))
    assert code == 1 and "missing.yaml: No such file or directory" in err


def test_cel_types_self_as_kubernetes_does() -> None:
    schema = {
        "type": "object",
        "properties": {
            "from": {"type": "string", "format": "date-time"},
            "to": {"type": "string", "format": "date-time"},
        },
        "x-kubernetes-validations": [{"rule": "self.to > self.from", "message": "to: must be after from"}],
    }
    late = {"from": "2026-01-01T23:00:00Z", "to": "2026-01-02T00:30:00+02:00"}  # a string compare would pass
    assert [p.message for p in crdchecks.cel_problems(schema, late, "spec")] == ["to: must be after from"]
    assert crdchecks.cel_problems(schema, {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"}, "s") == []
