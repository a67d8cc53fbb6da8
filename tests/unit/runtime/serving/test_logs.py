"""Log records: a webhook refusal that kopf logs as an ERROR is kept, at INFO; other errors stay errors."""

from __future__ import annotations

import logging

from sundial.runtime.serving.admission import WEBHOOK_ID
from sundial.runtime.serving.logs import RefusalsAreInfo


def record(level: int, msg: str) -> logging.LogRecord:
    return logging.LogRecord("kopf.objects", level, __file__, 1, msg, (), None)


def test_a_refusal_is_logged_at_info() -> None:
    message = 'ScheduledJob.sundial.dev "x" is invalid: spec.schedule: …'
    refusal = record(logging.ERROR, f"Webhook '{WEBHOOK_ID}' failed permanently: {message}")
    assert RefusalsAreInfo().filter(refusal)
    assert (refusal.levelno, refusal.levelname) == (logging.INFO, "INFO")


def test_other_handler_errors_stay_errors() -> None:
    other = record(logging.ERROR, "Webhook 'something-else' failed permanently: boom")
    assert RefusalsAreInfo().filter(other)
    assert (other.levelno, other.levelname) == (logging.ERROR, "ERROR")


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
