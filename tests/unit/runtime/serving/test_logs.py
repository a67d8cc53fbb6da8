"""Log records as JSON lines."""

from __future__ import annotations

import logging


def record(level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("kopf.objects", level, __file__, 1, msg, (), None)


def test_json_lines_leave_out_kopfs_settings_and_name_the_object() -> None:
    import json  # noqa: PLC0415

    from sundial.runtime.serving.logs import JsonFormatter  # noqa: PLC0415

    line = record(logging.INFO, "Webhook 'validate-scheduledjob' failed permanently: refused")
    line.settings = "OperatorSettings(" + "x" * 2000 + ")"
    line.k8s_skip = True
    line.k8s_ref = {"apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob", "name": "x", "namespace": "team-a"}
    line.shard = 3
    payload = json.loads(JsonFormatter().format(line))
    assert payload == {
        "time": payload["time"],
        "level": "info",
        "logger": "kopf.objects",
        "message": "Webhook 'validate-scheduledjob' failed permanently: refused",
        "object": "team-a/x",
        "shard": 3,
    }
