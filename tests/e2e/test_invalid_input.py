"""Bad input is refused at ``kubectl apply --server-side`` time, with a message naming the field (DESIGN §2).

Replays the corpus in ``tests/invalid/`` (see ``tests/unit/model/test_invalid_corpus.py`` for its format)
against a real API server with the CRD installed:

* ``refused-by: crd`` files must be refused by the CRD's structural schema and CEL rules today;
* ``refused-by: webhook`` files need the validating admission webhook: the ``admission_webhook`` fixture runs
  ``sundial run --webhook-port`` behind real TLS with a namespace-scoped ValidatingWebhookConfiguration
  (they would be skipped if it returned None).

All files go to the API server in ONE ``kubectl apply --server-side --dry-run=server`` call (nothing is
created, so nothing to clean up; a server dry run runs schema, CEL and admission webhooks like a real apply).
kubectl reports one error per refused object and names the object in it, which is how each parametrized test
finds its own refusal. The valid samples of ``config/samples/`` ride along in the same call as the control:
they must be accepted, which proves the refusals are not an artefact of a missing CRD or namespace.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml

from sundial_sandbox import install_crds

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.webhooks import AdmissionWebhook

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
CORPUS_DIR = REPO / "tests" / "invalid"
SAMPLES_DIR = REPO / "config" / "samples"
CRD_NAME = "scheduledjobs.sundial.dev"

WEBHOOK_SKIP_REASON = "needs the admission webhook"

HEADER = re.compile(r"^#\s*(?P<key>expect-field|refused-by):\s*(?P<value>\S+)\s*$", re.MULTILINE)
# kubectl starts every per-object error on a new line with one of these.
ERROR_START = re.compile(r"^(Error from server|error:|The \S+ \"[^\"]*\" is invalid)", re.MULTILINE)


@dataclass(frozen=True)
class Case:
    path: Path
    name: str
    expect_field: str
    refused_by: str


def _load(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    headers = {m["key"]: m["value"] for m in HEADER.finditer(text)}
    document = yaml.safe_load(text)
    return Case(
        path=path,
        name=str(document["metadata"]["name"]),
        expect_field=headers["expect-field"],
        refused_by=headers["refused-by"],
    )


CASES = [_load(p) for p in sorted(CORPUS_DIR.glob("*.yaml"))]
SAMPLES = sorted(p for p in SAMPLES_DIR.glob("*.yaml") if p.name != "kustomization.yaml")


@pytest.fixture(scope="module")
def admission_webhook(request: pytest.FixtureRequest) -> str | None:
    """The Sundial validating webhook serving this cluster: its ValidatingWebhookConfiguration's name.

    ``SUNDIAL_E2E_ADMISSION_WEBHOOK=<name>`` says an external cluster already has one. Otherwise the
    ``start_admission_webhook`` fixture (conftest.py) starts an operator serving the webhook over TLS and a
    configuration covering only the dry-run namespace, and waits until the API server uses it.
    """
    external = os.environ.get("SUNDIAL_E2E_ADMISSION_WEBHOOK")
    if external:
        return external
    namespace: str = request.getfixturevalue("dry_run_namespace")
    webhook: AdmissionWebhook = request.getfixturevalue("start_admission_webhook")(namespaces=[namespace])
    webhook.cover(namespace)
    return webhook.name


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> str:
    """Install (or re-apply, idempotently) the CRD and wait until it serves."""
    install_crds(cluster.kubeconfig, REPO / "crds")
    return CRD_NAME


@pytest.fixture(scope="module")
def dry_run_namespace(cluster: Cluster) -> Iterator[str]:
    """A namespace for the dry runs (server-side dry run still needs it to exist)."""
    name = f"e2e-invalid-input-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    yield name
    cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@dataclass(frozen=True)
class DryRun:
    """The outcome of one ``kubectl apply --server-side --dry-run=server`` over many files."""

    files: tuple[Path, ...]
    stdout: str
    stderr: str
    refusals: dict[str, str]  # object name -> kubectl's error text for it


def _dry_run_apply(cluster: Cluster, namespace: str, files: list[Path]) -> subprocess.CompletedProcess[str]:
    args = ["apply", "--server-side", "--dry-run=server", "-n", namespace]
    for path in files:
        args += ["-f", str(path)]
    return cluster.kubectl(*args, check=False, timeout=120)


def _split_refusals(stderr: str, names: list[str]) -> dict[str, str]:
    """Attribute each error chunk of kubectl's stderr to the object it names."""
    starts = [m.start() for m in ERROR_START.finditer(stderr)]
    chunks = [stderr[a:b] for a, b in zip(starts, [*starts[1:], len(stderr)], strict=True)]
    refusals: dict[str, str] = {}
    for name in names:
        # "ScheduledJob.sundial.dev "NAME" is invalid" or "(namespace/NAME; sundial.dev/v1alpha1, ...)"
        mention = re.compile(rf"[\"/]{re.escape(name)}[\";]")
        for chunk in chunks:
            if mention.search(chunk):
                refusals[name] = refusals.get(name, "") + chunk
    return refusals


@pytest.fixture(scope="module")
def dry_run(cluster: Cluster, crd: str, dry_run_namespace: str, admission_webhook: str | None) -> DryRun:
    """Every file that should be refused here, plus the valid samples, in one kubectl call."""
    cases = [c for c in CASES if c.refused_by == "crd" or admission_webhook is not None]
    files = [*(c.path for c in cases), *SAMPLES]
    result = _dry_run_apply(cluster, dry_run_namespace, files)
    return DryRun(
        files=tuple(files),
        stdout=result.stdout,
        stderr=result.stderr,
        refusals=_split_refusals(result.stderr, [c.name for c in cases]),
    )


def names_field(message: str, field: str) -> bool:
    """Whether the API server's message names FIELD (``spec.retry.backoff.max``).

    The API server prints the full path (``spec.x.y: Invalid value``; ``.spec.x.y: field not declared in schema``
    from server-side apply), and deeper paths for a missing child (``spec.jobTemplate.spec.template: Required``).
    As a fallback for servers that print only the leaf, the last segment as a whole word counts too.
    """
    if field in message:
        return True
    leaf = field.rsplit(".", 1)[-1]
    return leaf != "spec" and re.search(rf"(?<![\w]){re.escape(leaf)}(?![\w])", message) is not None


def test_the_valid_samples_are_accepted_in_the_same_call(dry_run: DryRun) -> None:
    for sample in SAMPLES:
        document = yaml.safe_load(sample.read_text(encoding="utf-8"))
        name, kind = document["metadata"]["name"], str(document["kind"]).lower()  # ScheduledJob, ScheduleCalendar
        assert f"{kind}.sundial.dev/{name} serverside-applied (server dry run)" in dry_run.stdout, (
            f"control sample {sample.name} was not accepted:\n{dry_run.stderr}"
        )


@pytest.mark.parametrize("case", CASES, ids=[c.path.name for c in CASES])
def test_invalid_manifest_is_refused_naming_the_field(
    case: Case, admission_webhook: str | None, request: pytest.FixtureRequest
) -> None:
    if case.refused_by == "webhook" and admission_webhook is None:
        pytest.skip(WEBHOOK_SKIP_REASON)
    run: DryRun = request.getfixturevalue("dry_run")

    message = run.refusals.get(case.name)

    if message is None:
        # Not in the batch's errors: replay it alone for a precise failure message.
        cluster: Cluster = request.getfixturevalue("cluster")
        alone = _dry_run_apply(cluster, request.getfixturevalue("dry_run_namespace"), [case.path])
        pytest.fail(
            f"{case.path.name} ({case.refused_by}) was not refused by kubectl apply --server-side: "
            f"exit {alone.returncode}\nstdout: {alone.stdout}\nstderr: {alone.stderr}"
        )
    assert names_field(message, case.expect_field), (
        f"{case.path.name} was refused, but the message does not name {case.expect_field}:\n{message}"
    )
    assert f"{case.name} serverside-applied" not in run.stdout
