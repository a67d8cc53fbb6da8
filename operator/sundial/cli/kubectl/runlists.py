"""The runs of one ScheduledJob, newest first (``kubectl sundial runs``), from the Jobs that still exist and the
status: every attempt's Job (its annotations name the nominal time, attempt and trigger; its conditions the
outcome), then what only the status still knows - runs whose Jobs the history limits deleted
(``recentRuns``), attempts claimed whose Job is not seen yet (``active``), retries waiting (``pendingRetries``),
runs waiting for an active one (``buffered``) - with the dead letter of a run beside each of its rows.

Reads plain dicts (no model): the plugin's start-up stays light.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from sundial.cli.kubectl import outputs

SCHEDULED_TIME = "sundial.dev/scheduled-time"
_EPOCH = datetime.min.replace(tzinfo=UTC)
ATTEMPT = "sundial.dev/attempt"
TRIGGER = "sundial.dev/trigger"


@dataclass(frozen=True)
class Run:
    """One row: one attempt of one run (or a run that has no attempt yet)."""

    scheduled_time: str
    attempt: int
    trigger: str
    job: str
    outcome: str
    started: str = ""
    finished: str = ""
    dead_letter: str = ""
    message: str = ""

    def duration(self) -> str:
        start, end = _time(self.started), _time(self.finished)
        return outputs.age((end - start).total_seconds()) if start and end else ""


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _condition(job: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    conditions = (job.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind and c.get("status") == "True"), None)


def from_job(job: Mapping[str, Any]) -> Run:
    meta = job.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    status = job.get("status") or {}
    done, failed = _condition(job, "Complete"), _condition(job, "Failed")
    if done is not None:
        outcome, finished, message = "Succeeded", status.get("completionTime") or done.get("lastTransitionTime", ""), ""
    elif failed is not None:
        outcome, finished = "Failed", failed.get("lastTransitionTime", "")
        message = f"{failed.get('reason', '')}: {failed.get('message', '')}".strip(": ")
    else:
        outcome, finished, message = "Running", "", ""
    try:
        attempt = int(annotations.get(ATTEMPT, "1"))
    except ValueError:
        attempt = 0
    return Run(
        scheduled_time=str(annotations.get(SCHEDULED_TIME, "")),
        attempt=attempt,
        trigger=str(annotations.get(TRIGGER, "")),
        job=str(meta.get("name", "")),
        outcome=outcome,
        started=str(status.get("startTime") or meta.get("creationTimestamp") or ""),
        finished=str(finished or ""),
        message=message,
    )


def runs(body: Mapping[str, Any], jobs: Iterable[Mapping[str, Any]]) -> list[Run]:
    """Every row of the ScheduledJob ``body`` given its Jobs, newest nominal time first, latest attempt first."""
    status = body.get("status") or {}
    rows = [from_job(job) for job in jobs]
    seen = {row.job for row in rows}
    for record in status.get("recentRuns") or []:
        if record.get("job") in seen:
            continue
        rows.append(
            Run(
                scheduled_time=record.get("scheduledTime", ""),
                attempt=int(record.get("attempts", 0)),
                trigger=record.get("trigger", ""),
                job=record.get("job") or "",
                outcome=str(record.get("result", "")),
                started=record.get("startedAt") or "",
                finished=record.get("finishedAt") or "",
                message="" if record.get("job") else "never started",
            )
        )
        seen.add(record.get("job") or "")
    for active in status.get("active") or []:
        if active.get("job") not in seen:
            rows.append(_pending(active, attempt=int(active.get("attempt", 1)), outcome="Starting", job=active["job"]))
    for retry in status.get("pendingRetries") or []:
        message = f"attempt {retry.get('attempt')} not before {retry.get('notBefore', '')}"
        rows.append(_pending(retry, attempt=int(retry.get("attempt", 2)), outcome="RetryPending", message=message))
    for waiting in status.get("buffered") or []:
        rows.append(_pending(waiting, attempt=0, outcome="Buffered", message=f"since {waiting.get('bufferedAt', '')}"))
    letters = {entry.get("scheduledTime"): entry for entry in status.get("deadLetters") or []}
    result = []
    for row in rows:
        letter = letters.get(row.scheduled_time)
        result.append(row if letter is None else _with_letter(row, letter))
    for time, letter in letters.items():
        if not any(row.scheduled_time == time for row in rows):
            row = _pending(letter, attempt=int(letter.get("attempts", 0)), outcome="DeadLettered", job="")
            result.append(_with_letter(row, letter))
    result.sort(key=lambda row: (_time(row.scheduled_time) or _EPOCH, row.attempt), reverse=True)
    return result


def _pending(entry: Mapping[str, Any], *, attempt: int, outcome: str, job: str = "", message: str = "") -> Run:
    return Run(
        scheduled_time=entry.get("scheduledTime", ""),
        attempt=attempt,
        trigger=entry.get("trigger", ""),
        job=job or entry.get("lastJob") or "",
        outcome=outcome,
        message=message,
    )


def _with_letter(row: Run, letter: Mapping[str, Any]) -> Run:
    reason = str(letter.get("reason", "DeadLettered"))
    message = row.message or str(letter.get("message", ""))
    return Run(**{**asdict(row), "dead_letter": reason, "message": message})


def table(rows: list[Run], *, wide: bool) -> str:
    header = ["SCHEDULED TIME", "ATTEMPT", "TRIGGER", "JOB", "OUTCOME", "DURATION", "DEAD LETTER"]
    if wide:
        header += ["STARTED", "FINISHED", "MESSAGE"]
    lines = []
    for row in rows:
        line = [
            row.scheduled_time,
            str(row.attempt or "-"),
            row.trigger,
            row.job or "<none>",
            row.outcome,
            row.duration() or "-",
            row.dead_letter or "-",
        ]
        if wide:
            line += [row.started or "-", row.finished or "-", row.message or "-"]
        lines.append(line)
    return outputs.table(header, lines)


def document(rows: list[Run]) -> list[dict[str, Any]]:
    """``-o json|yaml``: camelCase, the duration in seconds when known."""
    found = []
    for row in rows:
        start, end = _time(row.started), _time(row.finished)
        found.append(
            {
                "scheduledTime": row.scheduled_time,
                "attempt": row.attempt,
                "trigger": row.trigger,
                "job": row.job or None,
                "outcome": row.outcome,
                "startedAt": row.started or None,
                "finishedAt": row.finished or None,
                "durationSeconds": (end - start).total_seconds() if start and end else None,
                "deadLetter": row.dead_letter or None,
                "message": row.message or None,
            }
        )
    return found
