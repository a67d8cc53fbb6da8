"""The CRD's openAPIV3Schema and the pydantic models describe the same API, field by field.

Walks ``model_fields`` (by alias) of the spec and status models together with the CRD schema and
checks, recursively: the set of field names, the JSON type, enum values, defaults, numeric bounds,
string lengths, required fields and list bounds. Adding a field to one side only fails here.
"""

from __future__ import annotations

import enum
import math
import re
import types
import typing
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import annotated_types
import pytest
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from sundial import schedule
from sundial.model import ScheduledJobSpec, ScheduledJobStatus, calendars, resource, status
from sundial.model.calendars import ScheduleCalendarSpec

CRD_PATH = Path(__file__).parents[3] / "crds" / "sundial.dev_scheduledjobs.yaml"

DURATION_PATTERN = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|μs|ms|s|m|h))+)$"

#: Lists whose bound lives in a module constant (the planner trims them), not in a pydantic constraint.
LIST_BOUNDS = {
    "status.conditions": status.MAX_CONDITIONS,
    "status.active": status.MAX_ACTIVE,
    "status.pendingRetries": status.MAX_PENDING_RETRIES,
    "status.recentRuns": status.MAX_RECENT_RUNS,
    "status.deadLetters": status.MAX_DEAD_LETTERS,
    "status.buffered": status.MAX_BUFFERED,
    "status.backfills": status.MAX_BACKFILLS,
}

#: Deliberate differences, each one the CRD being stricter than the model for values only the operator writes.
CRD_ONLY_ENUMS = {
    # metav1.Condition.status; the model keeps ``str`` so it can read any condition back.
    "status.conditions[].status": ["True", "False", "Unknown"],
}

#: Where the model is opaque (``dict[str, Any]``) and the CRD declares only an outline.
OPAQUE = {"spec.jobTemplate.metadata", "spec.jobTemplate.spec"}


def load_crd() -> dict[str, Any]:
    with CRD_PATH.open(encoding="utf-8") as handle:
        document: dict[str, Any] = yaml.safe_load(handle)
    return document


def version_schema() -> dict[str, Any]:
    (version,) = load_crd()["spec"]["versions"]
    root: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return root


@dataclass(frozen=True)
class Shape:
    """What a model annotation means in OpenAPI terms."""

    kind: str  # boolean | integer | number | string | enum | duration | timestamp | object | array | map
    model: type[BaseModel] | None = None
    enum: tuple[str, ...] = ()
    item: Shape | None = None
    constraints: tuple[Any, ...] = ()


def shape_of(annotation: Any, metadata: list[Any]) -> tuple[Shape, bool]:
    """The shape of an annotation and whether None is allowed."""
    constraints = list(metadata)
    nullable = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        nullable = len(members) < len(typing.get_args(annotation))
        assert len(members) == 1, f"unsupported union {annotation!r}"
        annotation = members[0]
        origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        constraints.extend(extra)
        annotation = base
        origin = typing.get_origin(annotation)
    flat = tuple(_flatten(constraints))
    if annotation is bool:
        return Shape("boolean", constraints=flat), nullable
    if annotation is int:
        return Shape("integer", constraints=flat), nullable
    if annotation is float:
        return Shape("number", constraints=flat), nullable
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return Shape("enum", enum=tuple(str(m.value) for m in annotation), constraints=flat), nullable
    if annotation is str:
        return Shape("string", constraints=flat), nullable
    if annotation is timedelta:
        return Shape("duration", constraints=flat), nullable
    if annotation is datetime:
        return Shape("timestamp", constraints=flat), nullable
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Shape("object", model=annotation), nullable
    if origin in (tuple, list):
        args = [arg for arg in typing.get_args(annotation) if arg is not Ellipsis]
        item, _ = shape_of(args[0], [])
        return Shape("array", item=item, constraints=flat), nullable
    if origin is dict:
        return Shape("map", constraints=flat), nullable
    raise AssertionError(f"unsupported annotation {annotation!r}")


def _flatten(constraints: list[Any]) -> list[Any]:
    result: list[Any] = []
    for item in constraints:
        if isinstance(item, annotated_types.GroupedMetadata):
            result.extend(item)
        else:
            result.append(item)
    return result


def bound(constraints: tuple[Any, ...], kind: type[Any], attribute: str) -> Any:
    values = [getattr(c, attribute) for c in constraints if isinstance(c, kind)]
    values = [v for v in values if v is not None]
    assert len(values) <= 1, f"several {kind.__name__} constraints"
    return values[0] if values else None


def json_default(info: FieldInfo) -> Any:
    """The model default as it appears in JSON; ``None`` when there is no default to put in the CRD."""
    if info.is_required():
        return None
    value = info.get_default(call_default_factory=True)
    if value is None:
        return None
    if isinstance(value, BaseModel):
        return {}
    if isinstance(value, tuple | list | dict) and not value:
        return None
    if isinstance(value, enum.Enum):
        return value.value
    return value


def crd_default(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "duration":
        return schedule.parse_duration(value, field="default")
    if kind == "timestamp":
        return schedule.parse_rfc3339(value, field="default")
    return value


class Mismatch(list[str]):
    def add(self, path: str, message: str) -> None:
        self.append(f"{path}: {message}")


def compare_model(model: type[BaseModel], schema: dict[str, Any], path: str, problems: Mismatch) -> None:
    if schema.get("type") != "object":
        problems.add(path, f"CRD type {schema.get('type')!r}, model is an object")
        return
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    properties: dict[str, Any] = schema.get("properties", {})
    for name in sorted(set(fields) - set(properties)):
        problems.add(f"{path}.{name}", "in the model, missing from the CRD")
    for name in sorted(set(properties) - set(fields)):
        problems.add(f"{path}.{name}", "in the CRD, missing from the model")
    required = sorted(name for name, info in fields.items() if info.is_required())
    if sorted(schema.get("required", [])) != required:
        problems.add(path, f"CRD required {sorted(schema.get('required', []))}, model requires {required}")
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        problems.add(path, "a modelled object must not preserve unknown fields")
    for name in sorted(set(fields) & set(properties)):
        info = fields[name]
        shape, _nullable = shape_of(info.annotation, list(info.metadata))
        compare_field(shape, info, properties[name], f"{path}.{name}", problems)


def compare_field(shape: Shape, info: FieldInfo | None, schema: dict[str, Any], path: str, problems: Mismatch) -> None:
    if not schema.get("description"):
        problems.add(path, "has no description in the CRD")
    expected_type = {
        "boolean": "boolean",
        "integer": "integer",
        "number": "number",
        "string": "string",
        "enum": "string",
        "duration": "string",
        "timestamp": "string",
        "object": "object",
        "array": "array",
        "map": "object",
    }[shape.kind]
    if schema.get("type") != expected_type:
        problems.add(path, f"CRD type {schema.get('type')!r}, model type {expected_type!r}")
        return

    if info is not None:
        model_default = json_default(info)
        crd_value = crd_default(shape.kind, schema.get("default"))
        if model_default != crd_value and not (
            shape.kind == "number"
            and model_default is not None
            and crd_value is not None
            and math.isclose(model_default, crd_value)
        ):
            problems.add(path, f"CRD default {schema.get('default')!r}, model default {model_default!r}")

    if shape.kind in {"integer", "number"}:
        for attribute, kind, key in (
            ("ge", annotated_types.Ge, "minimum"),
            ("le", annotated_types.Le, "maximum"),
        ):
            model_bound = bound(shape.constraints, kind, attribute)
            if model_bound != schema.get(key):
                problems.add(path, f"CRD {key} {schema.get(key)!r}, model {attribute} {model_bound!r}")
        for attribute, strict in (("gt", annotated_types.Gt), ("lt", annotated_types.Lt)):
            if bound(shape.constraints, strict, attribute) is not None:
                problems.add(path, f"model uses {attribute}: express it as ge/le so the CRD can mirror it")
        if shape.kind == "integer" and schema.get("format") not in {"int32", "int64"}:
            problems.add(path, "integer without format int32/int64")

    if shape.kind in {"string", "enum", "duration", "timestamp"}:
        if "maxLength" not in schema and "enum" not in schema:
            problems.add(path, "string without maxLength (or enum) in the CRD")
        model_max = bound(shape.constraints, annotated_types.MaxLen, "max_length")
        if model_max is not None and model_max != schema.get("maxLength"):
            problems.add(path, f"CRD maxLength {schema.get('maxLength')!r}, model max_length {model_max!r}")
        model_min = bound(shape.constraints, annotated_types.MinLen, "min_length")
        if model_min != schema.get("minLength"):
            problems.add(path, f"CRD minLength {schema.get('minLength')!r}, model min_length {model_min!r}")

    if shape.kind == "string":
        expected_enum = CRD_ONLY_ENUMS.get(path)
        if schema.get("enum") != expected_enum:
            problems.add(path, f"CRD enum {schema.get('enum')!r} on a free string field")
    if shape.kind == "enum" and list(shape.enum) != schema.get("enum"):
        problems.add(path, f"CRD enum {schema.get('enum')!r}, model enum {list(shape.enum)!r}")
    if shape.kind == "duration":
        if schema.get("pattern") != DURATION_PATTERN:
            problems.add(path, f"duration pattern {schema.get('pattern')!r}")
        if "format" in schema:
            problems.add(path, "durations are Go duration strings; no OpenAPI format")
    if shape.kind == "timestamp" and schema.get("format") != "date-time":
        problems.add(path, f"timestamp with format {schema.get('format')!r}")

    if shape.kind == "object":
        assert shape.model is not None
        compare_model(shape.model, schema, path, problems)
    if shape.kind == "array":
        assert shape.item is not None
        model_max = bound(shape.constraints, annotated_types.MaxLen, "max_length") or LIST_BOUNDS.get(path)
        if schema.get("maxItems") is None:
            problems.add(path, "list without maxItems in the CRD")
        elif model_max != schema.get("maxItems"):
            problems.add(path, f"CRD maxItems {schema.get('maxItems')!r}, model bound {model_max!r}")
        compare_field(shape.item, None, schema.get("items", {}), f"{path}[]", problems)
    if shape.kind == "map" and path not in OPAQUE:
        problems.add(path, "a free-form map outside the known opaque fields")


def test_the_spec_schema_matches_the_model_field_by_field() -> None:
    problems = Mismatch()
    compare_model(ScheduledJobSpec, version_schema()["properties"]["spec"], "spec", problems)
    assert problems == []


def test_the_status_schema_matches_the_model_field_by_field() -> None:
    problems = Mismatch()
    compare_model(ScheduledJobStatus, version_schema()["properties"]["status"], "status", problems)
    assert problems == []


class _Extra(ScheduledJobSpec):
    surprise: int = 0


class _Fewer(ScheduledJobStatus):
    pass


def test_a_model_field_missing_from_the_crd_is_reported() -> None:
    problems = Mismatch()
    compare_model(_Extra, version_schema()["properties"]["spec"], "spec", problems)
    assert "spec.surprise: in the model, missing from the CRD" in problems


def test_a_crd_field_missing_from_the_model_is_reported() -> None:
    schema = version_schema()["properties"]["status"]
    schema["properties"]["counters"]["properties"]["bonus"] = {"type": "integer", "description": "x"}
    problems = Mismatch()
    compare_model(_Fewer, schema, "status", problems)
    assert problems == ["status.counters.bonus: in the CRD, missing from the model"]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            lambda s: s["properties"]["retry"]["properties"].__setitem__(
                "maxAttempts", {**s["properties"]["retry"]["properties"]["maxAttempts"], "maximum": 99}
            ),
            "spec.retry.maxAttempts: CRD maximum 99, model le 100",
            id="numeric-bound",
        ),
        pytest.param(
            lambda s: s["properties"]["catchUp"]["properties"]["policy"].__setitem__("enum", ["Latest"]),
            "spec.catchUp.policy: CRD enum ['Latest'], model enum ['Latest', 'All']",
            id="enum-values",
        ),
        pytest.param(
            lambda s: s["properties"]["retry"]["properties"]["backoff"]["properties"]["max"].__setitem__(
                "default", "2h"
            ),
            "spec.retry.backoff.max: CRD default '2h', model default datetime.timedelta(seconds=3600)",
            id="duration-default",
        ),
        pytest.param(
            lambda s: s["properties"]["suspend"].__setitem__("type", "string"),
            "spec.suspend: CRD type 'string', model type 'boolean'",
            id="type",
        ),
        pytest.param(
            lambda s: s["properties"]["timeZone"].pop("description"),
            "spec.timeZone: has no description in the CRD",
            id="description",
        ),
    ],
)
def test_a_drifted_crd_is_reported(mutate: Any, expected: str) -> None:
    schema = version_schema()["properties"]["spec"]
    mutate(schema)
    problems = Mismatch()
    compare_model(ScheduledJobSpec, schema, "spec", problems)
    assert problems == [expected]


def _walk(schema: dict[str, Any], path: str) -> typing.Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}{{}}")


def test_every_string_and_list_in_the_crd_is_bounded() -> None:
    root = version_schema()
    for path, node in _walk(root, ""):
        if path in {".apiVersion", ".kind"}:
            continue
        if node.get("type") == "string":  # an enum bounds a string as well as maxLength does
            assert "maxLength" in node or "enum" in node, path
        if node.get("type") == "array":
            assert "maxItems" in node, path


def test_every_field_below_spec_and_status_has_a_description() -> None:
    root = version_schema()
    missing = [
        path
        for path, node in _walk(root, "")
        if path.startswith((".spec", ".status")) and not path.endswith(("{}", "]")) and not node.get("description")
    ]
    assert missing == []


def test_the_crd_names_match_the_model_constants() -> None:
    crd = load_crd()
    assert crd["metadata"]["name"] == f"{resource.PLURAL}.{resource.GROUP}"
    assert crd["spec"]["group"] == resource.GROUP
    assert crd["spec"]["names"]["kind"] == resource.KIND
    assert crd["spec"]["names"]["plural"] == resource.PLURAL
    assert crd["spec"]["names"]["singular"] == "scheduledjob"
    assert crd["spec"]["names"]["shortNames"] == ["sj"]
    assert crd["spec"]["names"]["categories"] == ["sundial"]
    (version,) = crd["spec"]["versions"]
    assert version["name"] == resource.VERSION
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_the_printer_columns_are_the_ones_documented() -> None:
    (version,) = load_crd()["spec"]["versions"]
    columns = [(c["name"], c["jsonPath"], c.get("priority", 0)) for c in version["additionalPrinterColumns"]]
    assert columns == [
        ("Schedule", ".spec.schedule", 0),
        ("Timezone", ".spec.timeZone", 0),
        ("Suspend", ".spec.suspend", 0),
        ("Active", ".status.active[*].job", 0),
        ("Last Schedule", ".status.lastScheduleTime", 0),
        ("Last Success", ".status.lastSuccessfulTime", 0),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status', 0),
        ("Age", ".metadata.creationTimestamp", 0),
        ("Next", ".status.nextScheduleTime", 1),
        ("Message", '.status.conditions[?(@.type=="Ready")].message', 1),
    ]


@pytest.mark.parametrize(
    "text",
    ["0", "0s", "30s", "1h30m", "1.5h", "500ms", "10us", "10µs", "10μs", "2h45m30.5s"],
)
def test_the_duration_pattern_admits_what_the_model_parses(text: str) -> None:
    assert re.fullmatch(DURATION_PATTERN, text)
    schedule.parse_duration(text, field="x")


@pytest.mark.parametrize("text", ["-1s", "1", "1d", "s", "", "1h-5m", "1 h", "P1D"])
def test_the_duration_pattern_refuses_what_is_not_a_go_duration(text: str) -> None:
    assert re.fullmatch(DURATION_PATTERN, text) is None


def test_the_job_template_outline_requires_containers_and_preserves_the_rest() -> None:
    template = version_schema()["properties"]["spec"]["properties"]["jobTemplate"]
    job_spec = template["properties"]["spec"]
    pod_template = job_spec["properties"]["template"]
    pod_spec = pod_template["properties"]["spec"]

    assert template["required"] == ["spec"]
    assert template["properties"]["metadata"]["x-kubernetes-preserve-unknown-fields"] is True
    assert job_spec["x-kubernetes-preserve-unknown-fields"] is True
    assert job_spec["required"] == ["template"]
    assert pod_template["x-kubernetes-preserve-unknown-fields"] is True
    assert pod_template["required"] == ["spec"]
    assert pod_spec["x-kubernetes-preserve-unknown-fields"] is True
    assert pod_spec["required"] == ["containers"]
    assert pod_spec["properties"]["containers"]["minItems"] == 1


def test_the_cel_rules_name_their_field() -> None:
    spec = version_schema()["properties"]["spec"]
    rules = [
        *spec["x-kubernetes-validations"],
        *spec["properties"]["timeZone"]["x-kubernetes-validations"],
        *spec["properties"]["retry"]["properties"]["backoff"]["x-kubernetes-validations"],
        *spec["properties"]["exclude"]["items"]["x-kubernetes-validations"],
    ]
    assert len(rules) == 10
    for rule in rules:
        text = rule.get("message") or rule["messageExpression"]
        assert "spec." in text, rule


CALENDAR_CRD_PATH = CRD_PATH.parent / "sundial.dev_schedulecalendars.yaml"


def calendar_crd() -> dict[str, Any]:
    with CALENDAR_CRD_PATH.open(encoding="utf-8") as handle:
        document: dict[str, Any] = yaml.safe_load(handle)
    return document


def test_the_schedule_calendar_schema_matches_its_model_field_by_field() -> None:
    (version,) = calendar_crd()["spec"]["versions"]
    problems = Mismatch()
    compare_model(ScheduleCalendarSpec, version["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec", problems)
    assert problems == []


def test_the_exclude_entries_are_the_same_in_both_crds() -> None:
    (version,) = calendar_crd()["spec"]["versions"]
    in_calendar = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["exclude"]["items"]
    in_job = version_schema()["properties"]["spec"]["properties"]["exclude"]["items"]
    assert in_calendar["properties"] == in_job["properties"]
    assert in_calendar["x-kubernetes-validations"] == in_job["x-kubernetes-validations"]


def test_the_schedule_calendar_crd_names_match_the_model_constants() -> None:
    crd = calendar_crd()
    assert crd["metadata"]["name"] == f"{calendars.CALENDAR_PLURAL}.{resource.GROUP}"
    assert crd["spec"]["names"]["kind"] == calendars.CALENDAR_KIND
    assert crd["spec"]["names"]["plural"] == calendars.CALENDAR_PLURAL
    assert crd["spec"]["scope"] == "Namespaced"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == resource.VERSION
