"""The settings of ``sundial run``: small frozen groups, every field documented, each checked when made."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import Any

import pytest

from sundial.runtime import settings as module
from sundial.runtime.settings import (
    ApiSettings,
    DispatchSettings,
    EventSettings,
    GuardSettings,
    LeaseSettings,
    Settings,
    WebhookSettings,
)

GROUPS = [
    cls
    for _, cls in inspect.getmembers(module, inspect.isclass)
    if dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__
]


def test_every_group_is_frozen_and_part_of_the_settings() -> None:
    assert {cls.__name__ for cls in GROUPS} == {
        "ApiSettings",
        "LeaseSettings",
        "EventSettings",
        "WebhookSettings",
        "DispatchSettings",
        "ProbeSettings",
        "LoggingSettings",
        "GuardSettings",
        "Settings",
    }
    for cls in GROUPS:
        assert cls.__dataclass_params__.frozen, cls.__name__  # type: ignore[attr-defined]
    composed = {field.type for field in dataclasses.fields(Settings)}
    assert {cls.__name__ for cls in GROUPS if cls is not Settings} <= composed
    with pytest.raises(dataclasses.FrozenInstanceError):
        Settings(identity="me").leases.shards = 2  # type: ignore[misc]


def test_every_field_has_a_docstring_right_under_it() -> None:
    tree = ast.parse(inspect.getsource(module))
    undocumented = []
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name in {cls.__name__ for cls in GROUPS}):
            continue
        assert ast.get_docstring(node), f"{node.name} has no docstring"
        body = node.body
        for index, statement in enumerate(body):
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                following = body[index + 1] if index + 1 < len(body) else None
                documented = (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                )
                if not documented:
                    undocumented.append(f"{node.name}.{statement.target.id}")
    assert undocumented == []


@pytest.mark.parametrize(
    ("group", "values", "flag"),
    [
        (ApiSettings, {"qps": 0}, "--qps"),
        (ApiSettings, {"burst": 0}, "--burst"),
        (LeaseSettings, {"retry_period": 0}, "--retry-period"),
        (LeaseSettings, {"renew_deadline": 20}, "--renew-deadline"),
        (LeaseSettings, {"duration": 10, "renew_deadline": 10}, "--renew-deadline"),
        (LeaseSettings, {"renew_deadline": 2, "retry_period": 2}, "--retry-period"),
        (LeaseSettings, {"shards": 0}, "--shards"),
        (EventSettings, {"qps": 0}, "--event-qps"),
        (DispatchSettings, {"max_concurrency": 0}, "--max-concurrency"),
        (DispatchSettings, {"backlog_qps": 0}, "--backlog-qps"),
        (DispatchSettings, {"backlog_burst": 0}, "--backlog-burst"),
        (WebhookSettings, {"port": -1}, "--webhook-port"),
        (Settings, {"identity": ""}, "identity"),
        (Settings, {"identity": "me", "test_crash_after_claim": -1}, "SUNDIAL_TEST_CRASH_AFTER_CLAIM"),
        (Settings, {"identity": "me", "test_crash_after_create": -1}, "SUNDIAL_TEST_CRASH_AFTER_CREATE"),
        (Settings, {"identity": "me", "test_block_loop": -1.0}, "SUNDIAL_TEST_BLOCK_LOOP"),
        (Settings, {"identity": "me", "test_clock_offset": float("nan")}, "SUNDIAL_TEST_CLOCK_OFFSET"),
        (LeaseSettings, {"fencing_probe_period": 0}, "--fencing-probe-period"),
        (GuardSettings, {"unready_lag": 0}, "--watchdog-unready-lag"),
        (GuardSettings, {"unready_lag": 5, "withdraw_lag": 5}, "--watchdog-withdraw-lag"),
        (GuardSettings, {"max_clock_skew": 0.5}, "--max-clock-skew"),
    ],
)
def test_a_bad_value_is_refused_naming_its_flag(group: Any, values: dict[str, Any], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        group(**values)


def test_lease_names() -> None:
    assert LeaseSettings(name_prefix="sd").name(2) == "sd-shard-2"


def test_the_written_lease_duration_is_whole_seconds_and_at_least_one() -> None:
    assert LeaseSettings(duration=15.4, renew_deadline=10, retry_period=2).duration_seconds == 15
    assert LeaseSettings(duration=0.3, renew_deadline=0.2, retry_period=0.1).duration_seconds == 1
