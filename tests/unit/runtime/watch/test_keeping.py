"""Only what is read is kept, and bounded (DESIGN §11.1), with the real store and planner: the token annotations
alone (each bounded), and an object over the bound only as a stub the planner refuses with ``ObjectTooLarge``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from sundial import model
from sundial.model import names
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType
from sundial.planner import planning
from sundial.planner.actions import CreateJob, EmitEvent, EventReason
from sundial.planner.plans import Context
from sundial.runtime.serving import admission
from sundial.runtime.settings import DEFAULT_MAX_JOB_TEMPLATE_BYTES
from sundial.runtime.watch import keeping
from sundial.runtime.watch.store import Store

from .test_store import KEY, scheduled_job

NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
BOUND = keeping.object_bound(DEFAULT_MAX_JOB_TEMPLATE_BYTES)
CRD = Path(__file__).resolve().parents[4] / "crds" / "sundial.dev_scheduledjobs.yaml"


def _plan(kept: dict[str, Any] | None) -> planning.Plan:
    assert kept is not None
    return planning.plan(model.ScheduledJob.from_dict(kept), [], Context(now=NOW, fencing_token="0-1"))


STATUS = {"observedGeneration": 1, "lastHandledTrigger": "t-0"}


def test_only_the_annotations_the_planner_reads_are_kept() -> None:
    body = scheduled_job(status=STATUS)
    body["metadata"]["annotations"] |= {
        "sundial.dev/notes": "n" * 10_000,  # a sundial.dev/ key the operator does not read
        names.BACKFILL_ANNOTATION: '{"token":"b"}',
        names.HANDED_OVER_ANNOTATION: '{"cronJobUID":"u","after":"2026-05-11T10:00:00Z"}',
    }
    store = Store(max_object_bytes=BOUND)
    kept = store.scheduled_job(store.put_scheduled_job(body))
    assert kept is not None
    assert kept["metadata"]["annotations"] == {
        names.TRIGGER_ANNOTATION: "t-1",
        names.REDRIVE_ANNOTATION: "r-1",
        names.BACKFILL_ANNOTATION: '{"token":"b"}',
        names.HANDED_OVER_ANNOTATION: '{"cronJobUID":"u","after":"2026-05-11T10:00:00Z"}',
    }
    assert set(kept["metadata"]) <= set(keeping.KEPT_METADATA)  # no managedFields, labels, finalizers, owners
    assert set(kept) == {"metadata", "spec", "status"}


def test_a_240_kb_token_is_kept_small_and_refused_once_by_the_planner() -> None:
    body = scheduled_job()
    token = "t" * 240_000
    body["metadata"]["annotations"][names.TRIGGER_ANNOTATION] = token
    store = Store(max_object_bytes=BOUND)
    store.put_scheduled_job(body)
    assert store.kept_bytes(KEY) < 2_000
    kept = store.scheduled_job(KEY)
    assert kept is not None
    value = kept["metadata"]["annotations"][names.TRIGGER_ANNOTATION]
    assert names.MAX_TOKEN_LENGTH < len(value) < 400
    result = _plan(kept)
    refusals = [a for a in result.actions if isinstance(a, EmitEvent) and a.reason == EventReason.INVALID_TOKEN]
    assert len(refusals) == 1 and "limit of 253 characters" in refusals[0].message
    assert len(result.status.last_handled_trigger or "") < 32
    # Another long token keeps another stand-in: it is refused again, not taken for the handled one.
    other = scheduled_job()
    other["metadata"]["annotations"][names.TRIGGER_ANNOTATION] = token[:-1] + "u"
    assert store.view(other)["metadata"]["annotations"][names.TRIGGER_ANNOTATION] != value


def _maximal(schema: dict[str, Any]) -> Any:
    """An instance at every bound of SCHEMA (arrays at maxItems, strings at maxLength): at least as large as
    any legal value."""
    if "properties" in schema:
        return {key: _maximal(value) for key, value in schema["properties"].items()}
    kind = schema.get("type")
    if kind == "array":
        return [_maximal(schema["items"]) for _ in range(schema.get("maxItems", 1))]
    if kind == "string":
        return "x" * schema.get("maxLength", 64)
    if kind in ("integer", "number"):
        return 2**31
    return True if kind == "boolean" else {}


def _sized_template(size: int) -> dict[str, Any]:
    template = {"metadata": {"annotations": {"pad": ""}}, "spec": {"template": {"spec": {"containers": []}}}}
    template["metadata"]["annotations"]["pad"] = "p" * (size - admission.serialized_size(template))
    assert admission.serialized_size(template) == size
    return template


def test_a_maximal_legal_object_is_kept_whole() -> None:
    crd = yaml.safe_load(CRD.read_text(encoding="utf-8"))
    spec = _maximal(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    spec["jobTemplate"] = _sized_template(DEFAULT_MAX_JOB_TEMPLATE_BYTES)
    body = scheduled_job()
    body["spec"] = spec
    for annotation in names.TOKEN_ANNOTATIONS:
        body["metadata"]["annotations"][annotation] = "a" * names.token_limit(annotation)
    store = Store(max_object_bytes=BOUND)
    kept = store.scheduled_job(store.put_scheduled_job(body))
    assert kept is not None
    assert kept["spec"] == spec
    assert model.resource.TOO_LARGE_FIELD not in kept


def test_an_object_over_the_bound_is_kept_as_a_stub_and_refused_with_a_condition_once() -> None:
    body = scheduled_job(status=STATUS)
    body["spec"]["jobTemplate"] = _sized_template(BOUND)  # the spec alone is over the bound
    store = Store(max_object_bytes=BOUND)
    store.put_scheduled_job(body)
    assert store.kept_bytes(KEY) < 2_000
    kept = store.scheduled_job(KEY)
    assert kept is not None
    assert "spec" not in kept and "annotations" not in kept["metadata"]
    assert kept["status"] == body["status"]  # the operator's own status stays (its writes keep it)
    size = kept[model.resource.TOO_LARGE_FIELD]["size"]
    assert size > BOUND
    assert store.view(body) == kept  # a body returned by a write or a read is planned as the same stub
    result = _plan(kept)
    ready = result.status.condition(ConditionType.READY)
    assert ready is not None
    assert (ready.status, ready.reason) == (ConditionStatus.FALSE, ConditionReason.OBJECT_TOO_LARGE)
    assert f"object: is {size} bytes of JSON" in ready.message
    assert f"over the operator's bound of {BOUND} bytes" in ready.message
    assert [a.reason for a in result.actions if isinstance(a, EmitEvent)] == [EventReason.OBJECT_TOO_LARGE]
    assert not any(isinstance(a, CreateJob) for a in result.actions)
    assert result.write_status
    stored = json.loads(json.dumps(model.resource.dump_status(result.status)))
    again = _plan({**kept, "status": stored})
    assert not again.actions and not again.write_status  # written once


def test_without_a_bound_everything_read_is_kept() -> None:
    body = scheduled_job()
    body["spec"]["jobTemplate"] = _sized_template(BOUND)
    assert keeping.object_bound(0) == 0
    store = Store(max_object_bytes=0)
    kept = store.scheduled_job(store.put_scheduled_job(body))
    assert kept is not None and kept["spec"] == body["spec"]


def test_an_invalid_specs_error_does_not_keep_the_body_alive() -> None:
    # The error stays with the parsed object; its traceback's frames and pydantic's error would hold the whole
    # body (bench.memory --maximal measured 19 MB per maximal object alive at idle, 2.8 MB without them).
    body = scheduled_job()
    body["spec"]["schedule"] = "not cron"
    error = model.ScheduledJob.from_dict(body).spec_error
    assert error is not None and "spec.schedule" in str(error)
    assert error.__traceback__ is None and error.__context__ is None
