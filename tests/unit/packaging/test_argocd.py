"""Argo CD integration (config/argocd): the Lua customizations, tested the way Argo CD tests its own.

``config/argocd/resource_customizations/sundial.dev/ScheduledJob/`` is laid out like a directory of Argo CD's
``resource_customizations/``: ``health.lua`` with ``health_test.yaml`` and ``testdata/``, and
``actions/discovery.lua``, ``actions/<name>/action.lua`` with ``actions/action_test.yaml`` and
``actions/testdata/``. This module is the runner for those YAML files (Argo CD's are
``util/lua/health_test.go`` and ``custom_actions_test.go``): every script runs in Lua 5.1 (lupa) inside
``argocd_vm.lua``, a VM with what Argo CD opens for argocd-cm customizations and nothing more.

``config/argocd/argocd-cm-patch.yaml`` embeds the Lua files; it is rendered by this module:

    .venv/bin/python tests/unit/packaging/test_argocd.py --write
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.model import names
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType, DeadLetterReason
from sundial.model.resource import GROUP, KIND, parse_spec, parse_status

ROOT = Path(__file__).resolve().parents[3]
ARGOCD = ROOT / "config" / "argocd"
CUSTOMIZATION = ARGOCD / "resource_customizations" / GROUP / KIND
GROUP_KIND = f"{GROUP}_{KIND}"
HEALTH_KEY = f"resource.customizations.health.{GROUP_KIND}"
ACTIONS_KEY = f"resource.customizations.actions.{GROUP_KIND}"
IGNORE_UPDATES_KEY = f"resource.customizations.ignoreResourceUpdates.{GROUP_KIND}"
IGNORE_DIFFERENCES_KEY = f"resource.customizations.ignoreDifferences.{GROUP_KIND}"
ACTIONS = ("trigger", "redrive")
#: The VM's clock for os.time / os.date: 2027-01-15T08:00:00Z.
NOW = int(datetime(2027, 1, 15, 8, tzinfo=UTC).timestamp())
#: Argo CD stops a script after 1 s; an instruction budget stands in for that deadline.
INSTRUCTION_BUDGET = 1_000_000
#: gitops-engine's HealthStatusCode values; anything else becomes Unknown (lua.go, isValidHealthStatusCode).
HEALTH_STATUSES = frozenset({"Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing"})
SCRIPTS = ("health.lua", "actions/discovery.lua", *(f"actions/{a}/action.lua" for a in ACTIONS))


def script(relative: str) -> str:
    return (CUSTOMIZATION / relative).read_text()


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


# --- the VM ----------------------------------------------------------------------------------------

LuaRunner = Callable[[str, dict[str, Any]], Any]


@pytest.fixture(scope="module")
def run_lua() -> LuaRunner:
    """Runs a script against an object and returns what it returned, decoded as gopher-json would."""
    lupa = pytest.importorskip("lupa.lua51", reason="lupa (pinned in the dev extras) is not installed")
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    vm = runtime.execute((Path(__file__).with_name("argocd_vm.lua")).read_text())

    def decode(value: Any) -> Any:
        # gopher-json: a table whose keys are exactly 1..n is an array, an empty table is [].
        if lupa.lua_type(value) != "table":
            return int(value) if isinstance(value, float) and value.is_integer() else value
        items = dict(value.items())
        if sorted(items, key=repr) == sorted(range(1, len(items) + 1), key=repr):
            return [decode(items[i]) for i in range(1, len(items) + 1)]
        return {str(k): decode(v) for k, v in items.items()}

    def run(source: str, obj: dict[str, Any]) -> Any:
        lua_obj = runtime.table_from(copy.deepcopy(obj), recursive=True)
        return decode(vm(source, lua_obj, runtime.table(), NOW, INSTRUCTION_BUDGET))

    return run


def health_of(result: Any) -> dict[str, str]:
    """ExecuteHealthLua: an empty table or nil is an empty status, an unknown status is Unknown."""
    if result is None or result == []:
        return {}
    assert isinstance(result, dict), f"expect table output from Lua script, not {result!r}"
    if result.get("status") not in HEALTH_STATUSES:
        return {"status": "Unknown", "message": "Lua returned an invalid health status"}
    return {k: v for k, v in result.items() if k in ("status", "message") and v != ""}


def cleaned(new: Any, old: Any) -> Any:
    """lua.go cleanReturnedObj: an empty table that was an object before the script stays an object."""
    if isinstance(new, dict) and isinstance(old, dict):
        return {k: cleaned(v, old[k]) if k in old else v for k, v in new.items()}
    if isinstance(new, list) and isinstance(old, dict) and not new:
        return old
    if isinstance(new, list) and isinstance(old, list):
        return [cleaned(v, old[i]) if i < len(old) else v for i, v in enumerate(new)]
    return new


# --- health_test.yaml ------------------------------------------------------------------------------

HEALTH_TESTS: list[dict[str, Any]] = load_yaml(CUSTOMIZATION / "health_test.yaml")["tests"]


@pytest.mark.parametrize("test", HEALTH_TESTS, ids=[t["inputPath"] for t in HEALTH_TESTS])
def test_health(run_lua: LuaRunner, test: dict[str, Any]) -> None:
    obj = load_yaml(CUSTOMIZATION / test["inputPath"])
    assert health_of(run_lua(script("health.lua"), obj)) == test["healthStatus"]


def test_every_health_testdata_file_is_tested() -> None:
    tested = {t["inputPath"] for t in HEALTH_TESTS}
    present = {f"testdata/{p.name}" for p in (CUSTOMIZATION / "testdata").glob("*.yaml")}
    assert tested == present


def test_health_reaches_every_status_but_missing_and_unknown() -> None:
    reached = {t["healthStatus"]["status"] for t in HEALTH_TESTS}
    assert reached == HEALTH_STATUSES - {"Missing", "Unknown"}


@pytest.mark.parametrize(
    "path",
    sorted([*(CUSTOMIZATION / "testdata").glob("*.yaml"), *(CUSTOMIZATION / "actions" / "testdata").glob("*.yaml")]),
    ids=lambda p: f"{p.parent.parent.name}/{p.name}",
)
def test_testdata_are_objects_the_operator_reads_and_writes(path: Path) -> None:
    obj = load_yaml(path)
    assert (obj["apiVersion"], obj["kind"]) == (f"{GROUP}/v1alpha1", KIND)
    if "invalid-s" not in path.name and not path.name.startswith("old-generation-invalid"):
        parse_spec(obj["spec"])  # raises SpecError naming the field
    raw = obj.get("status") or {}
    dumped = parse_status(raw).model_dump(mode="json", by_alias=True, exclude_none=True)
    for key, value in raw.items():
        assert contains(dumped.get(key), value), f"status.{key} is not what the operator would write: {value!r}"


def contains(whole: Any, part: Any) -> bool:
    """``part`` is ``whole`` with some defaulted fields left out."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and contains(whole[k], v) for k, v in part.items())
    if isinstance(part, list):
        return isinstance(whole, list) and len(whole) == len(part) and all(map(contains, whole, part))
    return bool(whole == part)


# --- action_test.yaml ------------------------------------------------------------------------------

ACTION_TESTS: dict[str, list[dict[str, Any]]] = load_yaml(CUSTOMIZATION / "actions" / "action_test.yaml")


@pytest.mark.parametrize(
    "test", ACTION_TESTS["discoveryTests"], ids=[t["inputPath"] for t in ACTION_TESTS["discoveryTests"]]
)
def test_action_discovery(run_lua: LuaRunner, test: dict[str, Any]) -> None:
    obj = load_yaml(CUSTOMIZATION / "actions" / test["inputPath"])
    found = run_lua(script("actions/discovery.lua"), obj)
    offered = [] if found == [] else [{"name": name, **action} for name, action in found.items()]
    # Argo CD's runner checks that each offered action is listed; this one also checks the converse.
    assert sorted(offered, key=lambda a: a["name"]) == sorted(test["result"], key=lambda a: a["name"])


@pytest.mark.parametrize(
    "test",
    ACTION_TESTS["actionTests"],
    ids=[f"{t['action']}/{t['inputPath']}" for t in ACTION_TESTS["actionTests"]],
)
def test_action(run_lua: LuaRunner, test: dict[str, Any]) -> None:
    before = load_yaml(CUSTOMIZATION / "actions" / test["inputPath"])
    after = run_lua(script(f"actions/{test['action']}/action.lua"), before)
    assert isinstance(after, dict), "an old-style action returns the patched object"
    assert cleaned(after, before) == load_yaml(CUSTOMIZATION / "actions" / test["expectedOutputPath"])


def test_every_action_is_tested_and_discovered() -> None:
    actions = {p.parent.name for p in (CUSTOMIZATION / "actions").glob("*/action.lua")}
    assert actions == set(ACTIONS)
    assert {t["action"] for t in ACTION_TESTS["actionTests"]} == actions
    discovered = {a["name"] for t in ACTION_TESTS["discoveryTests"] for a in t["result"]}
    assert discovered == actions


def test_an_action_always_changes_the_token_even_within_one_second(run_lua: LuaRunner) -> None:
    # The operator acts when the annotation differs from status.lastHandled*: a request must change it.
    obj = load_yaml(CUSTOMIZATION / "actions" / "testdata" / "scheduledjob.yaml")
    for action in ACTIONS:
        key = f"sundial.dev/{action}"
        for _ in range(3):
            before = obj.get("metadata", {}).get("annotations", {}).get(key)
            obj = run_lua(script(f"actions/{action}/action.lua"), obj)
            assert obj["metadata"]["annotations"][key] not in (before, "")


# --- the scripts and the operator agree --------------------------------------------------------------


def test_the_scripts_use_the_operators_names() -> None:
    health = script("health.lua")
    for name in (
        ConditionType.READY,
        ConditionType.SUSPENDED,
        ConditionType.COMPLETE,
        ConditionReason.CONSECUTIVE_DEAD_LETTERS,
        DeadLetterReason.INVALID_JOB_TEMPLATE,
    ):
        assert f'"{name}"' in health, name
    assert f'"{names.TRIGGER_ANNOTATION}"' in script("actions/trigger/action.lua")
    assert f'"{names.REDRIVE_ANNOTATION}"' in script("actions/redrive/action.lua")
    quoted = set(re.findall(r'"([A-Z][A-Za-z]+)"', health)) - HEALTH_STATUSES
    known = {
        *ConditionType,
        *DeadLetterReason,
        ConditionReason.CONSECUTIVE_DEAD_LETTERS,
        ConditionStatus.TRUE,
        ConditionStatus.FALSE,
    }
    assert quoted <= known, f"health.lua names conditions or reasons the operator never writes: {quoted - known}"


#: Libraries Argo CD does not open for argocd-cm scripts, and string methods (``s:upper()``).
FORBIDDEN_IN_LUA = (r"\bstring\.", r"\bmath\.", r"\bio\.", r"\bos\.(?!date|time)\w+", r"\bdebug\.", r"[\w)\]\"']:\w+\(")


@pytest.mark.parametrize("relative", SCRIPTS)
def test_scripts_use_no_library_that_argo_cd_does_not_open(relative: str) -> None:
    # The VM enforces this for the branches the tests reach; this covers the others.
    code = "\n".join(line.split("--", 1)[0] for line in script(relative).splitlines())
    for forbidden in FORBIDDEN_IN_LUA:
        assert not re.search(forbidden, code), (relative, forbidden)
    if "os." in code:
        assert 'local os = require("os")' in code, "Argo CD exposes the safe os library through require"


def test_the_vm_refuses_what_argo_cd_refuses(run_lua: LuaRunner) -> None:
    lupa = pytest.importorskip("lupa.lua51")
    assert run_lua('return {status = "Healthy", message = tostring(os)}', {}) == {
        "status": "Healthy",
        "message": "nil",
    }
    assert run_lua('local os = require("os"); return os.date("!%Y-%m-%dT%H:%M:%SZ")', {}) == "2027-01-15T08:00:00Z"
    for refused in ('return ("x"):upper()', "return string.upper('x')", "return math.floor(1)", "while true do end"):
        with pytest.raises(lupa.LuaError):
            run_lua(refused, {})
    assert health_of(run_lua('return {status = "Fine"}', {})) == {
        "status": "Unknown",
        "message": "Lua returned an invalid health status",
    }


# --- argocd-cm patch, kustomize Component, Application ---------------------------------------------


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


PATCH_HEADER = f"""\
# Argo CD settings for Sundial, as a strategic-merge patch of the argocd-cm ConfigMap.
#
#   kubectl -n argocd patch configmap argocd-cm --patch-file config/argocd/argocd-cm-patch.yaml
#
# or, when Argo CD itself is installed with kustomize, add the Component in this folder:
#
#   components: [<path to sundial>/config/argocd]
#
# GENERATED from the .lua files in {CUSTOMIZATION.relative_to(ARGOCD)}/: edit those, then run
#   .venv/bin/python tests/unit/packaging/test_argocd.py --write
# (tests/unit/packaging/test_argocd.py fails when this file drifts from them).
"""

PATCH_TAIL = """\
  # The operator writes status often (next/last schedule times, active runs, counters): do not
  # reconcile the Application for that churn. Argo CD still reconciles when the health changes.
  resource.customizations.ignoreResourceUpdates.sundial.dev_ScheduledJob: |
    jsonPointers:
      - /status/nextScheduleTime
      - /status/lastScheduleTime
      - /status/lastSuccessfulTime
      - /status/lastFailureTime
      - /status/scheduleCursor
      - /status/active
      - /status/pendingRetries
      - /status/recentRuns
      - /status/counters
      - /status/lastHandledTrigger
      - /status/lastHandledRedrive
    jqPathExpressions:
      - .status.conditions[]?.lastTransitionTime
  # The trigger/redrive token annotations are requests, not desired state: never show them as drift.
  resource.customizations.ignoreDifferences.sundial.dev_ScheduledJob: |
    jsonPointers:
      - /metadata/annotations/sundial.dev~1trigger
      - /metadata/annotations/sundial.dev~1redrive
"""


def render_patch() -> str:
    definitions = "".join(
        f"      - name: {name}\n        action.lua: |\n{_indent(script(f'actions/{name}/action.lua'), 10)}"
        for name in ACTIONS
    )
    return (
        PATCH_HEADER
        + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n"
        + "  # Health: Degraded for what Git must fix, Progressing until observed or while deleted,\n"
        + "  # Suspended for spec.suspend and an open dead-letter circuit, Healthy otherwise.\n"
        + f"  {HEALTH_KEY}: |\n{_indent(script('health.lua'), 4)}"
        + "  # Actions trigger and redrive: set a new token annotation; the spec stays as in Git.\n"
        + f"  {ACTIONS_KEY}: |\n"
        + f"    discovery.lua: |\n{_indent(script('actions/discovery.lua'), 6)}"
        + f"    definitions:\n{definitions}"
        + PATCH_TAIL
    )


def test_the_argocd_cm_patch_is_rendered_from_the_lua_files() -> None:
    assert (ARGOCD / "argocd-cm-patch.yaml").read_text() == render_patch(), (
        "config/argocd/argocd-cm-patch.yaml drifted from the .lua files: "
        "run .venv/bin/python tests/unit/packaging/test_argocd.py --write"
    )


def test_the_argocd_cm_patch_parses_as_argo_cd_reads_it() -> None:
    data = load_yaml(ARGOCD / "argocd-cm-patch.yaml")["data"]
    assert data[HEALTH_KEY] == script("health.lua")
    actions = yaml.safe_load(data[ACTIONS_KEY])
    assert actions["discovery.lua"] == script("actions/discovery.lua")
    assert {d["name"]: d["action.lua"] for d in actions["definitions"]} == {
        a: script(f"actions/{a}/action.lua") for a in ACTIONS
    }
    ignored = yaml.safe_load(data[IGNORE_UPDATES_KEY])
    assert "/status/nextScheduleTime" in ignored["jsonPointers"]
    # Health-relevant fields must keep triggering reconciles.
    assert not {"/status", "/status/conditions", "/status/deadLetters", "/status/observedGeneration"} & set(
        ignored["jsonPointers"]
    )
    differences = yaml.safe_load(data[IGNORE_DIFFERENCES_KEY])
    assert set(differences["jsonPointers"]) == {f"/metadata/annotations/sundial.dev~1{a}" for a in ACTIONS}


def test_the_kustomize_component_patches_an_existing_argocd_cm(tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (for kubectl kustomize) is not on PATH")
    (tmp_path / "argocd-cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\n"
        "data: {url: https://argocd.example.com}\n"
    )
    (tmp_path / "kustomization.yaml").write_text(
        f"resources: [argocd-cm.yaml]\ncomponents: [{os.path.relpath(ARGOCD, tmp_path)}]\n"
    )
    out = subprocess.run(
        [kubectl, "kustomize", "--load-restrictor=LoadRestrictionsNone", str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (config_map,) = list(yaml.safe_load_all(out))
    assert config_map["data"]["url"] == "https://argocd.example.com"
    assert config_map["data"][HEALTH_KEY] == script("health.lua")
    assert IGNORE_UPDATES_KEY in config_map["data"]


def test_the_example_applications_install_the_chart_and_a_teams_jobs() -> None:
    apps = list(yaml.safe_load_all((ARGOCD / "application.yaml").read_text()))
    assert [a["kind"] for a in apps] == ["Application", "Application"]
    operator = apps[0]["spec"]
    assert operator["source"]["path"] == "charts/sundial"
    assert (ROOT / operator["source"]["path"] / "Chart.yaml").exists()
    assert "ServerSideApply=true" in operator["syncPolicy"]["syncOptions"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        (ARGOCD / "argocd-cm-patch.yaml").write_text(render_patch())
    else:
        sys.exit("usage: test_argocd.py --write")
