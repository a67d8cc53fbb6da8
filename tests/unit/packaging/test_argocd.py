"""Argo CD integration (config/argocd): the Lua customizations, tested the way Argo CD tests its own.

``config/argocd/resource_customizations/sundial.dev/ScheduledJob/`` is laid out like a directory of Argo CD's
``resource_customizations/``: ``health.lua`` with ``health_test.yaml`` and ``testdata/``, and
``actions/discovery.lua``, ``actions/<name>/action.lua`` with ``actions/action_test.yaml`` and
``actions/testdata/``. This module is the runner for those YAML files (Argo CD's are
``util/lua/health_test.go`` and ``custom_actions_test.go``). Every script runs in ``argocd-lua``
(tools/argocd-lua: gopher-lua and gopher-json at Argo CD's versions, set up as ``util/lua/lua.go`` sets them
up: the libraries it opens, its safe ``os``, the 1 s deadline, its decoding of results), in both of Argo CD's
modes: all libraries open (its own health and discovery tests) and only the few it opens itself (its action
tests, and every script in production: argocd-cm customizations without ``useOpenLibs``).

argocd-lua is built by ``make argocd-lua`` (``make test`` runs it) and cached outside the repo; these tests
find it at $SUNDIAL_ARGOCD_LUA or in that cache and skip (saying how to get it) when it is missing.

``config/argocd/argocd-cm-patch.yaml`` embeds the Lua files; it is rendered by this module:

    .venv/bin/python tests/unit/packaging/test_argocd.py --write
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml

from sundial.model import names
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType, DeadLetterReason
from sundial.model.resource import GROUP, KIND, parse_spec, parse_status

ROOT = Path(__file__).resolve().parents[3]
ARGOCD = ROOT / "config" / "argocd"
CUSTOMIZATION = ARGOCD / "resource_customizations" / GROUP / KIND
HARNESS = ROOT / "tools" / "argocd-lua"
GROUP_KIND = f"{GROUP}_{KIND}"
HEALTH_KEY = f"resource.customizations.health.{GROUP_KIND}"
ACTIONS_KEY = f"resource.customizations.actions.{GROUP_KIND}"
IGNORE_UPDATES_KEY = f"resource.customizations.ignoreResourceUpdates.{GROUP_KIND}"
IGNORE_DIFFERENCES_KEY = f"resource.customizations.ignoreDifferences.{GROUP_KIND}"
ACTIONS = ("trigger", "redrive")
#: gitops-engine's HealthStatusCode values; anything else becomes Unknown (lua.go, isValidHealthStatusCode).
HEALTH_STATUSES = frozenset({"Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing"})
SCRIPTS = ("health.lua", "actions/discovery.lua", *(f"actions/{a}/action.lua" for a in ACTIONS))
#: Argo CD's two setups: ``open`` = UseOpenLibs (its health and discovery tests), ``closed`` = production and its
#: action tests.
MODES = ("open", "closed")


def script(relative: str) -> str:
    return (CUSTOMIZATION / relative).read_text()


class _StringTimes(yaml.SafeLoader):
    """YAML as sigs.k8s.io/yaml (Argo CD's test reader) reads it: unquoted times stay strings."""


_StringTimes.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_StringTimes)


# --- the VM ----------------------------------------------------------------------------------------


class LuaError(Exception):
    pass


class LuaRunner(Protocol):
    def __call__(
        self, kind: str, source: str, obj: dict[str, Any], *, mode: str, params: dict[str, str] | None = None
    ) -> Any: ...


def harness_path() -> Path:
    """Where tools/argocd-lua/build.sh caches the binary for these sources."""
    digest = hashlib.sha256(b"".join((HARNESS / f).read_bytes() for f in ("main.go", "go.mod", "go.sum")))
    pinned = re.search(r"^\s*github\.com/yuin/gopher-lua (v\S+)$", (HARNESS / "go.mod").read_text(), re.MULTILINE)
    assert pinned, "tools/argocd-lua/go.mod pins no gopher-lua"
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    return cache / "argocd-lua" / f"gopher-lua-{pinned.group(1)}-{digest.hexdigest()[:16]}" / "argocd-lua"


@pytest.fixture(scope="module")
def run_lua() -> LuaRunner:
    """Runs a script against an object in argocd-lua and returns what Argo CD makes of its result: a health
    status, the impacted resources of an action, the offered actions, or (kind ``value``) the returned value
    as gopher-json encodes it. Raises LuaError with Argo CD's error message."""
    binary = os.environ.get("SUNDIAL_ARGOCD_LUA") or str(harness_path())
    if not os.access(binary, os.X_OK):
        pytest.skip(
            "argocd-lua not built: run `make argocd-lua` (bash tools/argocd-lua/build.sh), or set SUNDIAL_ARGOCD_LUA"
        )

    def run(kind: str, source: str, obj: dict[str, Any], *, mode: str, params: dict[str, str] | None = None) -> Any:
        request = {"kind": kind, "script": source, "obj": obj, "params": params or {}, "openLibs": mode == "open"}
        done = subprocess.run(
            [binary], input=json.dumps([request]), capture_output=True, text=True, check=False, timeout=30
        )
        assert done.returncode == 0, done.stderr
        (response,) = json.loads(done.stdout)
        if "error" in response:
            raise LuaError(response["error"])
        return response["result"]

    return run


def patched(impacted: Any) -> dict[str, Any]:
    """The object an old-style action returned, as Argo CD patches it."""
    assert isinstance(impacted, list) and len(impacted) == 1, impacted
    assert impacted[0]["operation"] == "patch"
    obj: dict[str, Any] = impacted[0]["resource"]
    return obj


# --- health_test.yaml ------------------------------------------------------------------------------

HEALTH_TESTS: list[dict[str, Any]] = load_yaml(CUSTOMIZATION / "health_test.yaml")["tests"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("test", HEALTH_TESTS, ids=[t["inputPath"] for t in HEALTH_TESTS])
def test_health(run_lua: LuaRunner, test: dict[str, Any], mode: str) -> None:
    obj = load_yaml(CUSTOMIZATION / test["inputPath"])
    assert run_lua("health", script("health.lua"), obj, mode=mode) == test["healthStatus"]


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


def _action(entry: dict[str, Any]) -> dict[str, Any]:
    """A ResourceAction as Go compares them (absent fields are their zero values)."""
    return {"disabled": False, "params": [], "iconClass": "", "displayName": "", **entry}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "test", ACTION_TESTS["discoveryTests"], ids=[t["inputPath"] for t in ACTION_TESTS["discoveryTests"]]
)
def test_action_discovery(run_lua: LuaRunner, test: dict[str, Any], mode: str) -> None:
    obj = load_yaml(CUSTOMIZATION / "actions" / test["inputPath"])
    offered = run_lua("discovery", script("actions/discovery.lua"), obj, mode=mode)
    # Argo CD's runner checks that each offered action is listed; this one also checks the converse.
    assert sorted(map(_action, offered), key=lambda a: a["name"]) == sorted(
        map(_action, test["result"]), key=lambda a: a["name"]
    )


@pytest.mark.parametrize(
    "test",
    ACTION_TESTS["actionTests"],
    ids=[f"{t['action']}/{t['inputPath']}" for t in ACTION_TESTS["actionTests"]],
)
@pytest.mark.parametrize("mode", MODES)
def test_action(run_lua: LuaRunner, test: dict[str, Any], mode: str) -> None:
    # Exact comparison, as Argo CD's runner compares (it masks time-based fields only of kinds it knows):
    # the actions use no clock.
    before = load_yaml(CUSTOMIZATION / "actions" / test["inputPath"])
    after = run_lua("action", script(f"actions/{test['action']}/action.lua"), before, mode=mode)
    assert patched(after) == load_yaml(CUSTOMIZATION / "actions" / test["expectedOutputPath"])


def test_every_action_is_tested_and_discovered() -> None:
    actions = {p.parent.name for p in (CUSTOMIZATION / "actions").glob("*/action.lua")}
    assert actions == set(ACTIONS)
    assert {t["action"] for t in ACTION_TESTS["actionTests"]} == actions
    discovered = {a["name"] for t in ACTION_TESTS["discoveryTests"] for a in t["result"]}
    assert discovered == actions


@pytest.mark.parametrize(
    ("token", "handled", "new"),
    [
        (None, None, "1"),
        ("1", None, "2"),
        ("4", "4", "5"),
        (None, "7", "8"),  # the annotation dropped (e.g. by a Replace sync) after the operator handled 7
        ("2", "7", "8"),
        ("2027-01-15T08:00:00Z", "2027-01-15T08:00:00Z", "1"),  # kubectl sundial's time tokens count as 0
        ("9", "2027-01-15T08:00:00Z", "10"),
    ],
)
def test_an_action_always_writes_a_token_that_differs_from_the_current_and_the_handled_one(
    run_lua: LuaRunner, token: str | None, handled: str | None, new: str
) -> None:
    # The operator acts when the annotation differs from status.lastHandled*: a request must change it, and
    # must not go back to the handled token.
    for action in ACTIONS:
        key, field = f"sundial.dev/{action}", f"lastHandled{action.capitalize()}"
        obj = load_yaml(CUSTOMIZATION / "actions" / "testdata" / "scheduledjob.yaml")
        if token is not None:
            obj["metadata"]["annotations"] = {key: token}
        if handled is not None:
            obj["status"][field] = handled
        after = patched(run_lua("action", script(f"actions/{action}/action.lua"), obj, mode="closed"))
        assert after["metadata"]["annotations"][key] == new
        assert {k: v for k, v in after.items() if k != "metadata"} == {k: v for k, v in obj.items() if k != "metadata"}


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


def test_the_closed_vm_has_only_what_argo_cd_opens(run_lua: LuaRunner) -> None:
    probe = "return {os == nil, io == nil, debug == nil, table.time == nil, require('os').date ~= nil}"
    assert run_lua("value", probe, {}, mode="closed") == [True, True, True, True, True]
    assert run_lua("value", "return require('os').time() > 1700000000", {}, mode="closed") is True
    for refused in ('return ("x"):upper()', "return string.upper('x')", "return math.floor(1)"):
        with pytest.raises(LuaError):
            run_lua("value", refused, {}, mode="closed")
    # With all libraries open (Argo CD's health and discovery tests) the same calls work.
    assert run_lua("value", "return {string.upper('x'), ('y'):upper(), math.floor(1.5)}", {}, mode="open") == [
        "X",
        "Y",
        1,
    ]


@pytest.mark.parametrize("mode", MODES)
def test_the_vm_decodes_results_as_argo_cd_does(run_lua: LuaRunner, mode: str) -> None:
    def health(source: str) -> Any:
        return run_lua("health", source, {}, mode=mode)

    assert health('return {status = "Fine"}') == {
        "status": "Unknown",
        "message": "Lua returned an invalid health status",
    }
    # A message that is not a string does not decode as a HealthStatus: Argo CD shows no status at all.
    assert health('return {status = "Healthy", message = 3}') == {}
    assert health("return {}") == {}
    assert health("return nil") == {}
    with pytest.raises(LuaError, match="expect table output from Lua script, not string"):
        health('return "Healthy"')
    # A JSON null inside an array is dropped when the object becomes a Lua table (gopher-lua's Append).
    assert run_lua("value", "return #obj.list", {"list": [1, None, 2]}, mode=mode) == 2
    # An empty table that was an object in the input stays an object in an action's patch.
    assert patched(run_lua("action", "obj.spec.extra = {}; return obj", {"spec": {"extra": {"a": 1}}}, mode=mode)) == {
        "spec": {"extra": {}}
    }


@pytest.mark.parametrize("mode", MODES)
def test_a_runaway_script_is_stopped_by_the_one_second_deadline(run_lua: LuaRunner, mode: str) -> None:
    with pytest.raises(LuaError, match="context deadline exceeded"):
        run_lua("health", "while true do end", {}, mode=mode)


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
