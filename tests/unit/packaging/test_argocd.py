"""Argo CD integration (config/argocd): the health check and the resource actions run here in Lua 5.1
(lupa) inside a sandbox that offers only what Argo CD's VM opens (base, table, and a "safe" ``os`` with
``time`` and ``date`` reached through ``require("os")``), against ScheduledJob status fixtures.

``config/argocd/argocd-cm-patch.yaml`` embeds the Lua files; it is rendered by this module:

    .venv/bin/python tests/unit/packaging/test_argocd.py --write
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.model import resource
from sundial.model.enums import (
    CompleteReason,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeadLetterReason,
    Trigger,
)
from sundial.planner import names

ROOT = Path(__file__).resolve().parents[3]
ARGOCD = ROOT / "config" / "argocd"
GROUP_KIND = f"{resource.GROUP}_{resource.KIND}"
HEALTH_KEY = f"resource.customizations.health.{GROUP_KIND}"
ACTIONS_KEY = f"resource.customizations.actions.{GROUP_KIND}"
IGNORE_UPDATES_KEY = f"resource.customizations.ignoreResourceUpdates.{GROUP_KIND}"
IGNORE_DIFFERENCES_KEY = f"resource.customizations.ignoreDifferences.{GROUP_KIND}"
#: Each resource action and the token annotation it sets.
ACTION_ANNOTATIONS = {"trigger": names.TRIGGER_ANNOTATION, "redrive": names.REDRIVE_ANNOTATION}
ACTIONS = tuple(ACTION_ANNOTATIONS)
NOW = 1_800_000_000  # 2027-01-15T08:00:00Z: the sandbox's clock for os.time / os.date
NOW_TOKEN = "2027-01-15T08:00:00Z"


def lua_file(relative: str) -> str:
    return (ARGOCD / relative).read_text()


# --- rendering argocd-cm-patch.yaml ----------------------------------------------------------------


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


PATCH_HEADER = """\
# Argo CD settings for Sundial, as a strategic-merge patch of the argocd-cm ConfigMap.
#
#   kubectl -n argocd patch configmap argocd-cm --patch-file config/argocd/argocd-cm-patch.yaml
#
# or, when Argo CD itself is installed with kustomize, add the Component in this folder:
#
#   components: [<path to sundial>/config/argocd]
#
# GENERATED from health.lua and actions/**/*.lua beside this file: edit those, then run
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
""" + "".join(f"      - /metadata/annotations/{key.replace('/', '~1')}\n" for key in names.TOKEN_ANNOTATIONS)


def render_patch() -> str:
    definitions = "".join(
        f"      - name: {name}\n        action.lua: |\n{_indent(lua_file(f'actions/{name}/action.lua'), 10)}"
        for name in ACTIONS
    )
    return (
        PATCH_HEADER
        + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n"
        + "  # Health: Degraded only for spec errors; suspended, dead-lettered and complete objects are\n"
        + "  # Healthy.\n"
        + f"  {HEALTH_KEY}: |\n{_indent(lua_file('health.lua'), 4)}"
        + "  # Actions trigger and redrive: set a new token annotation; the spec stays as in Git.\n"
        + f"  {ACTIONS_KEY}: |\n"
        + f"    discovery.lua: |\n{_indent(lua_file('actions/discovery.lua'), 6)}"
        + f"    definitions:\n{definitions}"
        + PATCH_TAIL
    )


# --- a Lua 5.1 sandbox shaped like Argo CD's VM ----------------------------------------------------

SANDBOX = """
function(script, obj, now)
  local safe_os = {
    time = function(t) if t == nil then return now end return os.time(t) end,
    date = function(format, t) return os.date(format, t or now) end,
  }
  local env = {
    assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs, pcall = pcall,
    select = select, tonumber = tonumber, tostring = tostring, type = type, unpack = unpack,
    table = table, obj = obj,
  }
  env.require = function(name)
    if name == "os" then return safe_os end
    error("module " .. tostring(name) .. " is not available in Argo CD")
  end
  local fn, err = loadstring(script, "script")
  if fn == nil then error(err) end
  setfenv(fn, env)
  return fn()
end
"""


@pytest.fixture(scope="module")
def run_lua() -> Callable[[str, dict[str, Any]], Any]:
    lupa = pytest.importorskip("lupa.lua51", reason="lupa (pinned lupa==2.8) is not installed")
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    sandbox = runtime.eval(SANDBOX)

    def to_python(value: Any) -> Any:
        if lupa.lua_type(value) != "table":
            return value
        items = dict(value.items())
        if items and all(isinstance(k, int) for k in items) and sorted(items) == list(range(1, len(items) + 1)):
            return [to_python(items[i]) for i in range(1, len(items) + 1)]
        return {k: to_python(v) for k, v in items.items()}

    def run(script: str, obj: dict[str, Any]) -> Any:
        plain = json.loads(json.dumps(obj))  # enum members (the vocabulary's constants) become plain strings
        return to_python(sandbox(script, runtime.table_from(plain, recursive=True), NOW))

    return run


# --- fixtures --------------------------------------------------------------------------------------


def condition(kind: str, status: str, reason: str, message: str = "", generation: int = 2) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2027-01-15T07:00:00Z",
        "observedGeneration": generation,
    }


def scheduled_job(
    *, status: dict[str, Any] | None, generation: int = 2, suspend: bool = False, **spec: Any
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": names.API_VERSION,
        "kind": resource.KIND,
        "metadata": {"name": "nightly-report", "namespace": "team-a", "generation": generation},
        "spec": {"schedule": "30 2 * * *", "suspend": suspend, "jobTemplate": {"spec": {}}, **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def ready_status(**extra: Any) -> dict[str, Any]:
    return {
        "observedGeneration": 2,
        "conditions": [
            condition(
                ConditionType.READY, ConditionStatus.TRUE, ConditionReason.SCHEDULED, "next run at 2027-01-16T01:30:00Z"
            ),
            condition(ConditionType.SUSPENDED, ConditionStatus.FALSE, ConditionReason.NOT_SUSPENDED),
            condition(ConditionType.DEAD_LETTERED, ConditionStatus.FALSE, ConditionReason.NO_DEAD_LETTERS),
        ],
        "nextScheduleTime": "2027-01-16T01:30:00Z",
        "lastScheduleTime": "2027-01-15T01:30:00Z",
        "active": [],
        "deadLetters": [],
        "recentRuns": [],
        **extra,
    }


DEAD_LETTER = {
    "scheduledTime": "2027-01-14T01:30:00Z",
    "attempts": 3,
    "lastJob": "nightly-report-28930170-3",
    "reason": DeadLetterReason.MAX_ATTEMPTS_EXCEEDED,
    "message": "Job failed: BackoffLimitExceeded",
    "trigger": Trigger.SCHEDULE,
    "deadLetteredAt": "2027-01-14T02:40:00Z",
}


def with_conditions(status: dict[str, Any], *conditions: dict[str, Any]) -> dict[str, Any]:
    kinds = {c["type"] for c in conditions}
    status = copy.deepcopy(status)
    status["conditions"] = [c for c in status["conditions"] if c["type"] not in kinds] + list(conditions)
    return status


HEALTH_CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    # name: (object, expected status, regex the message must match)
    "healthy": (scheduled_job(status=ready_status()), "Healthy", r"^Next run at 2027-01-16T01:30:00Z$"),
    "healthy_with_an_active_run": (
        scheduled_job(
            status=ready_status(
                active=[{"scheduledTime": "2027-01-15T01:30:00Z", "attempt": 1, "job": "j", "trigger": "schedule"}]
            )
        ),
        "Healthy",
        r"1 active run\(s\)",
    ),
    "healthy_although_the_last_runs_failed": (
        scheduled_job(
            status=ready_status(
                recentRuns=[{"scheduledTime": "2027-01-15T01:30:00Z", "attempts": 3, "result": "DeadLettered"}],
                pendingRetries=[{"scheduledTime": "2027-01-15T01:30:00Z", "attempt": 2}],
            )
        ),
        "Healthy",
        r"Next run",
    ),
    "suspended_in_spec": (
        scheduled_job(
            suspend=True,
            status=with_conditions(
                ready_status(nextScheduleTime=None),
                condition("Ready", "False", "Suspended", "spec.suspend is true"),
                condition("Suspended", "True", "Suspended", "spec.suspend is true"),
            ),
        ),
        "Healthy",
        r"^Suspended \(Suspended: spec.suspend is true\)$",
    ),
    "suspended_in_spec_before_the_condition_is_written": (
        scheduled_job(suspend=True, status=ready_status()),
        "Healthy",
        r"^Suspended \(spec.suspend is true\)$",
    ),
    "suspended_by_the_dead_letter_circuit": (
        scheduled_job(
            status=with_conditions(
                ready_status(deadLetters=[DEAD_LETTER, DEAD_LETTER]),
                condition("Ready", "False", "CircuitOpen", "2 consecutive dead letters"),
                condition("Suspended", "True", "ConsecutiveDeadLetters", "2 consecutive dead letters"),
                condition("DeadLettered", "True", "MaxAttemptsExceeded"),
            ),
        ),
        "Healthy",
        r"^Suspended \(ConsecutiveDeadLetters: 2 consecutive dead letters\); 2 dead-lettered run\(s\)",
    ),
    "dead_lettered_is_visible_but_not_degraded": (
        scheduled_job(
            status=with_conditions(
                ready_status(deadLetters=[DEAD_LETTER]),
                condition("DeadLettered", "True", "MaxAttemptsExceeded", "1 dead-lettered run"),
            )
        ),
        "Healthy",
        r"1 dead-lettered run\(s\), newest 2027-01-14T01:30:00Z \(MaxAttemptsExceeded\)",
    ),
    "dead_lettered_condition_without_the_list": (
        scheduled_job(
            status=with_conditions(
                ready_status(), condition("DeadLettered", "True", "MaxAttemptsExceeded", "see events")
            )
        ),
        "Healthy",
        r"dead-lettered \(MaxAttemptsExceeded: see events\)",
    ),
    "invalid_spec_is_degraded": (
        scheduled_job(
            status=with_conditions(
                ready_status(nextScheduleTime=None),
                condition("Ready", "False", "InvalidSpec", "spec.timeZone: unknown time zone 'Mars/Olympus'"),
            )
        ),
        "Degraded",
        r"^InvalidSpec: spec.timeZone: unknown time zone 'Mars/Olympus'$",
    ),
    "invalid_schedule_is_degraded": (
        scheduled_job(
            status=with_conditions(
                ready_status(nextScheduleTime=None),
                condition("Ready", "False", "InvalidSchedule", "spec.schedule: 0 0 30 2 * never matches"),
            )
        ),
        "Degraded",
        r"^InvalidSchedule: spec.schedule",
    ),
    "other_not_ready_reasons_are_not_degraded": (
        scheduled_job(
            status=with_conditions(ready_status(), condition("Ready", "False", "Pending", "waiting for runAt"))
        ),
        "Healthy",
        r"^Not ready \(Pending: waiting for runAt\)$",
    ),
    "progressing_without_status": (
        scheduled_job(status=None),
        "Progressing",
        r"Waiting for the Sundial operator",
    ),
    "progressing_with_an_empty_status": (scheduled_job(status={}), "Progressing", r"Waiting"),
    "progressing_until_the_new_generation_is_observed": (
        scheduled_job(generation=3, status=ready_status()),
        "Progressing",
        r"generation 3 \(observed 2\)$",
    ),
    "progressing_even_when_the_old_generation_was_invalid": (
        scheduled_job(
            generation=3,
            status=with_conditions(ready_status(), condition("Ready", "False", "InvalidSpec", "bad")),
        ),
        "Progressing",
        r"generation 3",
    ),
    "complete_one_off": (
        scheduled_job(
            schedule=None,
            runAt="2027-01-15T06:00:00Z",
            status=with_conditions(
                ready_status(nextScheduleTime=None),
                condition("Ready", "True", "Complete", "one-off finished"),
                condition("Complete", "True", "Succeeded", "the run succeeded"),
            ),
        ),
        "Healthy",
        r"^Complete \(Succeeded: the run succeeded\)$",
    ),
    "complete_one_off_that_dead_lettered": (
        scheduled_job(
            schedule=None,
            status=with_conditions(
                ready_status(nextScheduleTime=None, deadLetters=[DEAD_LETTER]),
                condition("Complete", "True", "DeadLettered", "attempts ran out"),
            ),
        ),
        "Healthy",
        r"^Complete \(DeadLettered: attempts ran out\); 1 dead-lettered run\(s\)",
    ),
}


@pytest.mark.parametrize("case", list(HEALTH_CASES), ids=list(HEALTH_CASES))
def test_health(run_lua: Callable[[str, dict[str, Any]], Any], case: str) -> None:
    obj, expected_status, message = HEALTH_CASES[case]
    result = run_lua(lua_file("health.lua"), obj)
    assert result["status"] == expected_status, result
    assert re.search(message, result["message"]), result["message"]


def test_health_is_degraded_only_for_spec_errors(run_lua: Callable[[str, dict[str, Any]], Any]) -> None:
    degraded = sorted(
        case
        for case, (obj, _, _) in HEALTH_CASES.items()
        if run_lua(lua_file("health.lua"), obj)["status"] == "Degraded"
    )
    assert degraded == ["invalid_schedule_is_degraded", "invalid_spec_is_degraded"]


def test_health_never_reports_suspended(run_lua: Callable[[str, dict[str, Any]], Any]) -> None:
    # Argo CD's "Suspended" would mark the whole Application suspended (argo-cd #19126).
    for obj, _, _ in HEALTH_CASES.values():
        assert run_lua(lua_file("health.lua"), obj)["status"] != "Suspended"


# --- actions ---------------------------------------------------------------------------------------


def test_discovery_offers_trigger_always_and_redrive_only_with_dead_letters(
    run_lua: Callable[[str, dict[str, Any]], Any],
) -> None:
    script = lua_file("actions/discovery.lua")
    plain = run_lua(script, scheduled_job(status=ready_status()))
    assert set(plain) == set(ACTIONS)
    assert plain["trigger"]["disabled"] is False
    assert plain["redrive"]["disabled"] is True
    assert run_lua(script, scheduled_job(status=None))["redrive"]["disabled"] is True
    with_letters = run_lua(script, scheduled_job(status=ready_status(deadLetters=[DEAD_LETTER])))
    assert with_letters["redrive"]["disabled"] is False
    assert all(action["displayName"] and action["iconClass"] for action in with_letters.values())


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_sets_a_new_token_annotation_and_nothing_else(
    run_lua: Callable[[str, dict[str, Any]], Any], action: str
) -> None:
    before = scheduled_job(status=ready_status(deadLetters=[DEAD_LETTER]))
    after = run_lua(lua_file(f"actions/{action}/action.lua"), before)
    assert after["metadata"]["annotations"] == {ACTION_ANNOTATIONS[action]: NOW_TOKEN}
    del after["metadata"]["annotations"]
    assert after["spec"] == {k: v for k, v in before["spec"].items() if v is not None}
    assert after["metadata"] == before["metadata"]
    assert after["status"]["deadLetters"] == before["status"]["deadLetters"]


@pytest.mark.parametrize("action", ACTIONS)
def test_an_action_keeps_other_annotations_and_never_repeats_a_token(
    run_lua: Callable[[str, dict[str, Any]], Any], action: str
) -> None:
    key = ACTION_ANNOTATIONS[action]
    obj = scheduled_job(status=ready_status())
    obj["metadata"]["annotations"] = {"team": "a", key: NOW_TOKEN}
    first = run_lua(lua_file(f"actions/{action}/action.lua"), obj)["metadata"]["annotations"]
    assert first["team"] == "a"
    assert first[key] not in (NOW_TOKEN, "")
    obj["metadata"]["annotations"] = first
    second = run_lua(lua_file(f"actions/{action}/action.lua"), obj)["metadata"]["annotations"]
    assert second[key] != first[key]


@pytest.mark.parametrize(
    "relative", ["health.lua", "actions/discovery.lua", *(f"actions/{a}/action.lua" for a in ACTIONS)]
)
def test_scripts_use_no_library_that_argo_cd_does_not_open(relative: str) -> None:
    code = "\n".join(line.split("--", 1)[0] for line in lua_file(relative).splitlines())
    for forbidden in (
        r"\bstring\.",
        r"\bmath\.",
        r"\bio\.",
        r"\bos\.(?!date|time)\w+",
        r"\bdebug\.",
        r":\w+\(",
    ):
        assert not re.search(forbidden, code), (relative, forbidden)
    if "os." in code:
        assert 'local os = require("os")' in code, "Argo CD exposes the safe os library through require"


# --- the scripts speak the operator's vocabulary ------------------------------------------------------


def lua_strings(relative: str) -> set[str]:
    """The string literals of a Lua file, comments left out."""
    code = "\n".join(line.split("--", 1)[0] for line in lua_file(relative).splitlines())
    return set(re.findall(r'"([^"]*)"', code))


def test_the_actions_set_exactly_the_operators_token_annotations() -> None:
    for action, annotation in ACTION_ANNOTATIONS.items():
        keys = {text for text in lua_strings(f"actions/{action}/action.lua") if "/" in text}
        assert keys == {annotation}, action
    assert set(ACTION_ANNOTATIONS.values()) == set(names.TOKEN_ANNOTATIONS)


def test_the_health_check_reads_the_operators_condition_types_and_reasons() -> None:
    code = lua_file("health.lua")
    kinds = set(re.findall(r'condition\(status, "(\w+)"\)', code))
    assert kinds == set(ConditionType)
    (degraded,) = re.findall(r"DEGRADED_REASONS = \{([^}]*)\}", code)
    # Degraded is for a wrong spec only: the two reasons of Ready=False the planner writes for one.
    assert set(re.findall(r"(\w+) = true", degraded)) == {
        ConditionReason.INVALID_SPEC,
        ConditionReason.INVALID_SCHEDULE,
    }
    statuses = set(re.findall(r'\.status [=~]= "(\w+)"', code))
    assert statuses == {ConditionStatus.TRUE, ConditionStatus.FALSE}


def test_the_health_fixtures_use_only_the_operators_vocabulary() -> None:
    reasons = {*ConditionReason, *DeadLetterReason, *CompleteReason}
    for case, (obj, _, _) in HEALTH_CASES.items():
        for found in (obj.get("status") or {}).get("conditions") or []:
            assert found["type"] in set(ConditionType), case
            assert found["status"] in set(ConditionStatus), case
            assert found["reason"] in reasons, case
        for letter in (obj.get("status") or {}).get("deadLetters") or []:
            assert letter["reason"] in set(DeadLetterReason), case


# --- argocd-cm patch, kustomize Component, Application ---------------------------------------------


def test_the_argocd_cm_patch_is_rendered_from_the_lua_files() -> None:
    assert (ARGOCD / "argocd-cm-patch.yaml").read_text() == render_patch(), (
        "config/argocd/argocd-cm-patch.yaml drifted from the .lua files: "
        "run .venv/bin/python tests/unit/packaging/test_argocd.py --write"
    )


def test_the_argocd_cm_patch_parses_as_argo_cd_reads_it() -> None:
    data = yaml.safe_load((ARGOCD / "argocd-cm-patch.yaml").read_text())["data"]
    assert data[HEALTH_KEY] == lua_file("health.lua")
    actions = yaml.safe_load(data[ACTIONS_KEY])
    assert actions["discovery.lua"] == lua_file("actions/discovery.lua")
    assert {d["name"]: d["action.lua"] for d in actions["definitions"]} == {
        a: lua_file(f"actions/{a}/action.lua") for a in ACTIONS
    }
    ignored = yaml.safe_load(data[IGNORE_UPDATES_KEY])
    assert "/status/nextScheduleTime" in ignored["jsonPointers"]
    # Health-relevant fields must keep triggering reconciles.
    assert not {"/status", "/status/conditions", "/status/deadLetters", "/status/observedGeneration"} & set(
        ignored["jsonPointers"]
    )
    differences = yaml.safe_load(data[IGNORE_DIFFERENCES_KEY])
    assert differences["jsonPointers"] == [
        "/metadata/annotations/sundial.dev~1trigger",
        "/metadata/annotations/sundial.dev~1redrive",
    ]


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
    assert config_map["data"][HEALTH_KEY] == lua_file("health.lua")
    assert IGNORE_UPDATES_KEY in config_map["data"]


def test_the_example_applications_install_the_chart_and_a_teams_jobs() -> None:
    apps = list(yaml.safe_load_all((ARGOCD / "application.yaml").read_text()))
    assert [a["kind"] for a in apps] == ["Application", "Application"]
    operator = apps[0]["spec"]
    assert operator["source"]["path"] == "charts/sundial"
    assert (ROOT / operator["source"]["path"] / "Chart.yaml").exists() or not (ROOT / "charts" / "sundial").exists()
    assert "ServerSideApply=true" in operator["syncPolicy"]["syncOptions"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        (ARGOCD / "argocd-cm-patch.yaml").write_text(render_patch())
    else:
        sys.exit("usage: test_argocd.py --write")
