"""The hand-over from a CronJob (``kubectl sundial import --hand-over``, DESIGN §12.4): what the ScheduledJob's
``sundial.dev/handed-over`` annotation says and how it is read.

The plugin sets the annotation when it creates the ScheduledJob, after it suspended the CronJob, to
``{"cronJobUID": "<uid>", "after": "<RFC 3339>"}``: the CronJob whose Jobs still count as this object's active
runs (``concurrencyPolicy`` Forbid, Replace and the buffers wait for them; Replace deletes them), and the time
of the CronJob's last run, after which this object's nominal times start (even before its creation, so the
minute of the switch is run by exactly one of the two). An annotation that cannot be read is ignored: the
object then starts at its creation, as any other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sundial import schedule
from sundial.model.names import HANDED_OVER_ANNOTATION

__all__ = ["HANDED_OVER_ANNOTATION", "HandOver", "handed_over"]

MAX_LENGTH: Final = 253
"""Longest value read (a UID and a timestamp need about 90 characters)."""


@dataclass(frozen=True)
class HandOver:
    """A ScheduledJob that took over from a CronJob."""

    cron_job_uid: str
    """The CronJob's ``metadata.uid``: its Jobs (labelled for this object) count as active runs."""
    after: datetime
    """The CronJob's ``status.lastScheduleTime`` (or its newest Job's time): nominal times after it are due."""

    def annotation(self) -> str:
        return json.dumps(
            {"cronJobUID": self.cron_job_uid, "after": schedule.format_rfc3339(self.after)}, separators=(",", ":")
        )


def handed_over(annotations: Mapping[str, str]) -> HandOver | None:
    """The hand-over the annotations record, None when there is none or it cannot be read."""
    raw = annotations.get(HANDED_OVER_ANNOTATION)
    if not isinstance(raw, str) or len(raw) > MAX_LENGTH:
        return None
    try:
        value = json.loads(raw)
        uid, after = value["cronJobUID"], value["after"]
        if not isinstance(uid, str) or not uid or not isinstance(after, str):
            return None
        return HandOver(cron_job_uid=uid, after=schedule.parse_rfc3339(after, field=HANDED_OVER_ANNOTATION))
    except (ValueError, KeyError, TypeError, schedule.ScheduleError):
        return None
