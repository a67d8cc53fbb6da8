"""The bad-input corpus (``tests/invalid/``): every manifest is refused by ``parse_spec``, naming the field.

``parse_spec`` is the one validation the admission webhook and the runtime share, so a corpus file it accepts
would reach the scheduler silently (DESIGN §2). Each file is one complete ScheduledJob with one defect and a
header the tests read::

    # what is wrong (free text)
    # expect-field: spec.retry.backoff.max   <- the field the refusal must name
    # refused-by: crd                        <- crd: the API server's schema/CEL refuses it;
                                                webhook: only Python can see it

``tests/e2e/test_invalid_input.py`` replays the same files against a real API server.
The samples in ``config/samples/`` are the control: all of them parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.model import SpecError, parse_spec
from sundial.model.calendars import CALENDAR_KIND, ScheduleCalendar

REPO = Path(__file__).resolve().parents[3]
CORPUS_DIR = REPO / "tests" / "invalid"
SAMPLES_DIR = REPO / "config" / "samples"

MIN_CORPUS_SIZE = 45
REFUSERS = ("crd", "webhook")
FILE_NAME = re.compile(r"^\d{2,3}-[a-z0-9]+(-[a-z0-9]+)*\.yaml$")
HEADER = re.compile(r"^#\s*(?P<key>expect-field|refused-by):\s*(?P<value>\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Case:
    path: Path
    expect_field: str
    refused_by: str
    document: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.document["metadata"]["name"])


def _headers(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for match in HEADER.finditer(text):
        found.setdefault(match["key"], []).append(match["value"])
    return found


def load(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    headers = _headers(text)
    document = yaml.safe_load(text)
    return Case(
        path=path,
        expect_field=headers["expect-field"][0],
        refused_by=headers["refused-by"][0],
        document=document,
    )


CORPUS_FILES = sorted(CORPUS_DIR.glob("*.yaml"))
SAMPLE_FILES = sorted(p for p in SAMPLES_DIR.glob("*.yaml") if p.name != "kustomization.yaml")


def test_the_corpus_has_enough_cases() -> None:
    assert len(CORPUS_FILES) >= MIN_CORPUS_SIZE, f"{len(CORPUS_FILES)} files in {CORPUS_DIR}"


def test_every_corpus_file_has_both_headers_exactly_once_and_a_known_refuser() -> None:
    problems = []
    for path in CORPUS_FILES:
        headers = _headers(path.read_text(encoding="utf-8"))
        for key in ("expect-field", "refused-by"):
            if len(headers.get(key, [])) != 1:
                problems.append(f"{path.name}: needs exactly one '# {key}:' header, found {headers.get(key, [])}")
        refuser = headers.get("refused-by", [""])[0]
        if refuser not in REFUSERS:
            problems.append(f"{path.name}: refused-by {refuser!r} is not one of {REFUSERS}")
        field = headers.get("expect-field", [""])[0]
        if not field.startswith("spec."):
            problems.append(f"{path.name}: expect-field {field!r} is not a spec.… path")
    assert not problems, "\n".join(problems)


def test_corpus_file_names_and_object_names_are_unique_and_well_formed() -> None:
    problems = [f"{p.name}: not NN-short-name.yaml" for p in CORPUS_FILES if not FILE_NAME.match(p.name)]
    numbers = [p.name.split("-", 1)[0] for p in CORPUS_FILES]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    if duplicates:
        problems.append(f"duplicate numbers: {duplicates}")
    names = [load(p).name for p in CORPUS_FILES]
    duplicate_names = sorted({n for n in names if names.count(n) > 1})
    if duplicate_names:
        problems.append(f"duplicate metadata.name: {duplicate_names}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_corpus_file_is_a_complete_scheduled_job_or_calendar(path: Path) -> None:
    case = load(path)
    document = case.document

    assert isinstance(document, dict)
    assert document.get("apiVersion") == "sundial.dev/v1alpha1"
    assert document.get("kind") in ("ScheduledJob", CALENDAR_KIND)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", case.name) and len(case.name) <= 63
    assert isinstance(document.get("spec"), dict), "the defect must be inside spec"
    assert set(document) == {"apiVersion", "kind", "metadata", "spec"}


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_corpus_file_is_refused_by_parse_spec_naming_the_field(path: Path) -> None:
    case = load(path)

    if case.document["kind"] == CALENDAR_KIND:
        error = ScheduleCalendar.from_dict(case.document).error
        assert error is not None, "the calendar parsed"
    else:
        with pytest.raises(SpecError) as caught:
            parse_spec(case.document["spec"])
        error = caught.value

    problems = error.problems
    assert problems, "SpecError without problems"
    assert all(problem.message for problem in problems)
    named = [p for p in problems if p.path.startswith(case.expect_field) or case.expect_field in p.path]
    assert named, f"expected a problem on {case.expect_field}, got: {error}"


def test_the_corpus_covers_both_refusers() -> None:
    refusers = {load(p).refused_by for p in CORPUS_FILES}
    assert refusers == set(REFUSERS)


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.name for p in SAMPLE_FILES])
def test_every_sample_is_accepted(path: Path) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))

    if document["kind"] == CALENDAR_KIND:
        calendar = ScheduleCalendar.from_dict(document)
        assert calendar.spec is not None, calendar.error
        assert calendar.spec.exclude
        return
    spec = parse_spec(document["spec"])

    assert spec.job_template.spec["template"]["spec"]["containers"]


def test_there_are_samples_to_control_with() -> None:
    assert SAMPLE_FILES
