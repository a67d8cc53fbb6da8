"""What the API server checks of a Sundial object before the webhook sees it, offline (``kubectl sundial lint``):
the CRD's OpenAPI schema and its CEL rules (``x-kubernetes-validations``).

* The schema is checked with ``jsonschema`` (Draft 2020-12 validator with the format checker) after the
  structural schema is read as Kubernetes reads it: an object whose schema lists ``properties`` accepts no
  other field unless it says ``x-kubernetes-preserve-unknown-fields`` (kubectl's default ``--validate=strict``
  refuses unknown fields), ``nullable: true`` admits null, ``x-kubernetes-int-or-string`` an integer or a string.
* Defaults (``default``) are applied first, as the API server applies them before it validates.
* The CEL rules are evaluated with ``cel-python`` (celpy) on every node that has them, with ``self`` typed as
  Kubernetes types it: strings of ``format: date-time`` are timestamps, ``format: duration`` durations,
  integers ints. Kubernetes' list library function ``sum()`` (the only one our rules use beyond standard
  CEL) is given to celpy. Transition rules (those that read ``oldSelf``) need the stored object and are not
  evaluated offline.

The CRDs come from the package (``sundial/data/``, byte-identical copies of ``crds/`` that a unit test checks).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from typing import Any, Final

import celpy
import jsonschema
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from sundial.schedule import ScheduleError, parse_rfc3339

CRD_FILES: Final = ("sundial.dev_scheduledjobs.yaml", "sundial.dev_schedulecalendars.yaml")
"""The CRDs in ``sundial/data/`` (copies of ``crds/``)."""


@dataclass(frozen=True)
class Problem:
    """One field the API server would refuse: its path (``spec.catchUp.window``) and why."""

    path: str
    message: str
    by: str = "schema"
    """``schema`` (the OpenAPI schema) or ``cel`` (a CEL rule)."""


@dataclass(frozen=True)
class CrdSchema:
    """The ``openAPIV3Schema`` of one served version of a Sundial CRD."""

    group: str
    kind: str
    version: str
    schema: Mapping[str, Any]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def problems(self, body: Mapping[str, Any]) -> list[Problem]:
        """Schema and CEL problems of ``body`` with the schema's defaults applied first (as the API server
        defaults before it validates), schema first, each field once."""
        body = defaulted(self.schema, body)
        found = schema_problems(self.schema, body)
        seen = {p.path for p in found}
        found += [p for p in cel_problems(self.schema, body, "") if p.path not in seen]
        return found


@functools.cache
def packaged() -> dict[tuple[str, str], CrdSchema]:
    """The packaged CRDs' served versions, by (apiVersion, kind)."""
    found: dict[tuple[str, str], CrdSchema] = {}
    data = resources.files("sundial") / "data"
    for name in CRD_FILES:
        crd = yaml.safe_load((data / name).read_text(encoding="utf-8"))
        for schema in from_crd(crd):
            found[(schema.api_version, schema.kind)] = schema
    return found


def from_crd(crd: Mapping[str, Any]) -> Iterator[CrdSchema]:
    spec = crd["spec"]
    for version in spec["versions"]:
        if version.get("served", True):
            yield CrdSchema(
                group=spec["group"],
                kind=spec["names"]["kind"],
                version=version["name"],
                schema=version["schema"]["openAPIV3Schema"],
            )


def defaulted(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` with the schema's ``default``s filled in where a field is absent, inside objects that exist."""
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        result = {k: defaulted(properties.get(k) or {}, v) for k, v in value.items()}
        for key, sub in properties.items():
            if key not in result and "default" in sub:
                result[key] = defaulted(sub, sub["default"])
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [defaulted(schema["items"], item) for item in value]
    return value


# The OpenAPI schema as JSON Schema ---------------------------------------------------------------------------

_DROPPED: Final = ("x-kubernetes-validations", "nullable", "x-kubernetes-int-or-string")


def json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The structural schema as a JSON Schema that refuses what the API server refuses (the module docstring)."""
    result: dict[str, Any] = {k: v for k, v in schema.items() if k not in _DROPPED and not k.startswith("x-")}
    if "properties" in schema:
        result["properties"] = {k: json_schema(v) for k, v in schema["properties"].items()}
        if not schema.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in schema:
            result["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), Mapping):
        result["additionalProperties"] = json_schema(schema["additionalProperties"])
    if "items" in schema:
        result["items"] = json_schema(schema["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            result[key] = [json_schema(s) for s in schema[key]]
    if schema.get("x-kubernetes-int-or-string"):
        result.pop("type", None)
        result["type"] = ["integer", "string"]
    if schema.get("nullable") and "type" in result:
        kinds = result["type"] if isinstance(result["type"], list) else [result["type"]]
        result["type"] = [*kinds, "null"]
    return result


def schema_problems(schema: Mapping[str, Any], body: Mapping[str, Any]) -> list[Problem]:
    """What the CRD's schema refuses in ``body`` (``metadata`` is the API server's own and not checked here)."""
    checked = dict(json_schema(schema))
    checked.get("properties", {}).pop("metadata", None)
    checked["properties"] = {**checked.get("properties", {}), "metadata": {"type": "object"}}
    validator = jsonschema.Draft202012Validator(checked, format_checker=_FORMATS)
    found = []
    for error in sorted(validator.iter_errors(dict(body)), key=lambda e: list(map(str, e.absolute_path))):
        parts = list(error.absolute_path)
        if error.validator == "additionalProperties":
            allowed = set(error.schema.get("properties") or {})
            found += [Problem(_dotted([*parts, k]), "unknown field") for k in error.instance if k not in allowed]
        elif error.validator == "required":
            missing = [k for k in error.validator_value if k not in error.instance]
            found += [Problem(_dotted([*parts, k]), "required field is missing") for k in missing]
        else:
            found.append(Problem(_dotted(parts) or "(object)", str(error.message)))
    return found


def _date_time(value: object) -> bool:
    """Kubernetes' ``date-time``: RFC 3339 with an offset (the operator's own parser, which requires one)."""
    if isinstance(value, str):
        parse_rfc3339(value, field="date-time")
    return True


_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("date-time", raises=ScheduleError)(_date_time)


def _dotted(parts: list[Any]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# CEL -------------------------------------------------------------------------------------------------------------


@functools.cache
def _environment() -> celpy.Environment:
    return celpy.Environment()


@functools.cache
def _program(rule: str) -> celpy.Runner:
    environment = _environment()
    return environment.program(environment.compile(rule), functions={"sum": _sum})


def _sum(values: celtypes.ListType) -> celtypes.Value:
    """Kubernetes' ``<list>.sum()`` (k8s.io/apiserver's CEL list library) for lists of ints or doubles."""
    if all(isinstance(v, celtypes.IntType) for v in values):
        return celtypes.IntType(sum(int(str(v)) for v in values))
    return celtypes.DoubleType(sum(float(str(v)) for v in values))


def cel_problems(schema: Mapping[str, Any], value: Any, path: str) -> list[Problem]:
    """The CEL rules of ``schema`` and its sub-schemas that ``value`` breaks (offline: no transition rules)."""
    if value is None:
        return []
    found: list[Problem] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        text = rule.get("rule", "")
        if "oldSelf" in text:
            continue
        try:
            result = _program(text).evaluate({"self": typed(value, schema)})
        except (CELEvalError, CELParseError, TypeError, ValueError) as error:
            found.append(Problem(path or "(object)", f"rule {text!r} could not be evaluated: {error}", "cel"))
            continue
        if isinstance(result, CELEvalError):
            found.append(Problem(path or "(object)", f"rule {text!r} could not be evaluated: {result}", "cel"))
        elif not (isinstance(result, celtypes.BoolType) and bool(result)):
            found.append(Problem(path or "(object)", rule.get("message") or f"failed rule: {text}", "cel"))
    properties = schema.get("properties") or {}
    if isinstance(value, Mapping):
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key) or (extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                found += cel_problems(sub, item, f"{path}.{key}" if path else str(key))
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            found += cel_problems(schema["items"], item, f"{path}[{index}]")
    return found


def typed(value: Any, schema: Mapping[str, Any]) -> celtypes.Value:
    """``value`` as a CEL value typed by its schema, as Kubernetes types ``self``."""
    kind = schema.get("type")
    if isinstance(value, Mapping):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        items = {}
        for key, item in value.items():
            sub: Mapping[str, Any] = properties.get(key) or (extra if isinstance(extra, Mapping) else {})
            items[celtypes.StringType(key)] = typed(item, sub)
        return celtypes.MapType(items)
    if isinstance(value, list):
        inner: Mapping[str, Any] = schema["items"] if isinstance(schema.get("items"), Mapping) else {}
        return celtypes.ListType([typed(item, inner) for item in value])
    if isinstance(value, str) and kind == "string":
        if schema.get("format") == "date-time":
            try:
                return celtypes.TimestampType(parse_rfc3339(value, field="date-time"))
            except ScheduleError:
                return celtypes.StringType(value)
        if schema.get("format") == "duration":
            return celtypes.DurationType(value)
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, timedelta):
        return celtypes.DurationType(value)
    result: celtypes.Value = json_to_cel(value)
    return result
