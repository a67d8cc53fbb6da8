"""Backfill by annotation (DESIGN §4.2, the §5 token pattern): run the nominal times of a past range once.

``sundial.dev/backfill`` holds ``{"token": "...", "from": T1, "to": T2, "maxRuns": N}`` (RFC 3339 times,
``maxRuns`` 1-1000, default 100). A new token is handled once and echoed in ``status.lastHandledBackfill``:

* Every nominal time of the schedule in ``[T1, min(T2, now)]`` (within ``startTime``/``endTime``, before
  the object's creation too) gets a run with trigger ``backfill`` and the *same* Job name and idempotency
  key as its scheduled run - unless it already has one: a run in ``recentRuns``, ``active``,
  ``pendingRetries``, ``buffered`` or ``deadLetters``, an observed Job of that run, or a time an earlier
  backfill handled. A second create of the same name fails with AlreadyExists, so even a time whose run
  left every record is never run twice at once. Known limit: a run older than ``recentRuns`` (20) whose
  Jobs were deleted by the history limits is not known, and a backfill over it runs it again.
* Progress is in ``status.backfills`` (from, to, next time, runs started, times already run, done); at
  most ``maxRuns`` runs are started, then the backfill is done with ``nextTime`` the first time not run.
* The runs are fed only as fast as ``concurrencyPolicy`` admits them, so a backfill never skips, replaces
  or buffers its own runs: ``Allow`` starts up to the active-run limit at once; ``Forbid``, ``Replace``,
  ``BufferOne`` and ``BufferAll`` one at a time, when no run is active, waiting for a retry or buffered.
  A pass starts at most ``Context.creates_per_pass`` Jobs, scheduled and catch-up runs first (DESIGN
  §11.1); the rest of the range continues in the next pass, which comes at once. Backfill runs draw from
  the namespace's budget with the catch-up runs (``Context.backlog_creates``): when it is used up the range
  continues once the budget has a create for it (``Plan.backlog_waiting``).
  Scheduled runs due in the same pass go first. Each run is then admitted like any other run. A backfill
  runs while ``spec.suspend`` is set (an explicit request, like a manual trigger), not while the
  dead-letter circuit is open or the object is being deleted. Requests are handled one at a time, oldest
  first. ``retry.maxRunAge`` does not apply to backfill runs (they are old by design).
* A one-off (``runAt``, or as soon as possible) has no schedule to backfill: the request is refused with
  a Warning Event ``BackfillRefused`` and a done entry whose message says so. An annotation that is not a
  valid request (among others a token over 253 characters, or a value over 2048) gets a Warning Event
  ``InvalidBackfill`` naming the annotation and the problem, and
  nothing else happens (its ``lastHandledBackfill`` is ``invalid-<12 hex digits of its SHA-256>``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial import schedule
from sundial.model import names, types
from sundial.model.enums import ConcurrencyPolicy, Trigger
from sundial.model.status import (
    MAX_ACTIVE,
    MAX_BACKFILLS,
    ActiveRun,
    BackfillProgress,
    BufferedRun,
    DeadLetter,
    PendingRetry,
    RunRecord,
)
from sundial.planner import manifests
from sundial.planner.actions import EventReason
from sundial.planner.observed import ObservedJob
from sundial.planner.runs.attempts import when
from sundial.planner.status.drafts import Draft, NewRun

DEFAULT_MAX_RUNS = 100
MAX_MAX_RUNS = 1000
_FIELDS = ("token", "from", "to", "maxRuns")
REFUSED = "refused: "
"""The start of the message of a refused request (its range was not handled)."""
_CHUNK = 500
"""Nominal times asked of the schedule at a time while walking a range."""


class RequestError(ValueError):
    """The annotation is not a valid backfill request (the message names the field)."""


@dataclass(frozen=True)
class Request:
    token: str
    start: datetime
    end: datetime
    max_runs: int = DEFAULT_MAX_RUNS


def parse_request(raw: str) -> Request:
    """Parse the annotation's value; raises :class:`RequestError` naming the field."""
    if len(raw) > names.MAX_BACKFILL_ANNOTATION_LENGTH:
        raise RequestError(f"longer than the limit of {names.MAX_BACKFILL_ANNOTATION_LENGTH} characters")
    try:
        value = json.loads(raw)
    except ValueError as error:
        raise RequestError(f"not valid JSON: {error}") from None
    if not isinstance(value, Mapping):
        raise RequestError('must be a JSON object {"token": "...", "from": "<RFC 3339>", "to": "<RFC 3339>"}')
    unknown = sorted(set(value) - set(_FIELDS))
    if unknown:
        raise RequestError(f"unknown field(s) {', '.join(unknown)}: expected {', '.join(_FIELDS)}")
    token = value.get("token")
    if not isinstance(token, str) or not token:
        raise RequestError("token: must be a non-empty string")
    if len(token) > names.MAX_TOKEN_LENGTH:
        raise RequestError(f"token: longer than the limit of {names.MAX_TOKEN_LENGTH} characters")
    start, end = _time(value, "from"), _time(value, "to")
    if end < start:
        raise RequestError("to: must not be before from")
    max_runs = value.get("maxRuns", DEFAULT_MAX_RUNS)
    if isinstance(max_runs, bool) or not isinstance(max_runs, int) or not 1 <= max_runs <= MAX_MAX_RUNS:
        raise RequestError(f"maxRuns: must be an integer from 1 to {MAX_MAX_RUNS}, got {max_runs!r}")
    return Request(token=token, start=start, end=end, max_runs=max_runs)


def _time(value: Mapping[str, Any], field: str) -> datetime:
    text = value.get(field)
    if not isinstance(text, str):
        raise RequestError(f"{field}: must be an RFC 3339 time string, e.g. 2026-12-24T18:00:00Z")
    try:
        return schedule.parse_rfc3339(text, field=field)
    except schedule.ScheduleError as error:
        raise RequestError(f"{field}: {error.message}") from None


def annotation_value(request: Request) -> str:
    """The annotation's JSON for ``request`` (what ``kubectl sundial backfill`` writes)."""
    body: dict[str, Any] = {"token": request.token, "from": when(request.start), "to": when(request.end)}
    if request.max_runs != DEFAULT_MAX_RUNS:
        body["maxRuns"] = request.max_runs
    return json.dumps(body, separators=(",", ":"))


def invalid_marker(raw: str) -> str:
    """``lastHandledBackfill`` for an annotation that is not a valid request."""
    return types.invalid_token_marker(raw)


def request(draft: Draft) -> None:
    """Handle a new ``sundial.dev/backfill`` annotation value, if there is one."""
    raw = draft.obj.metadata.annotations.get(names.BACKFILL_ANNOTATION)
    if raw is None:
        return
    try:
        parsed = parse_request(raw)
    except RequestError as error:
        marker = invalid_marker(raw)
        if marker != draft.last_handled_backfill:
            draft.last_handled_backfill = marker
            draft.emit(
                EventReason.INVALID_BACKFILL,
                f"annotation {names.BACKFILL_ANNOTATION}: {error}; nothing was backfilled",
                warning=True,
            )
        return
    if parsed.token == draft.last_handled_backfill:
        return
    draft.last_handled_backfill = parsed.token
    if any(b.token == parsed.token for b in draft.backfills):
        return  # handled before (the annotation was set back to an old value)
    refusal = _refusal(draft)
    if refusal:
        _keep(draft, _progress(parsed, end=parsed.end, first=None, message=REFUSED + refusal))
        draft.emit(EventReason.BACKFILL_REFUSED, f"Backfill {parsed.token!r} refused: {refusal}", warning=True)
        return
    end = min(parsed.end, draft.now)
    first = _first(draft, after=parsed.start - schedule.TICK, until=end)
    clamped = "; times after now are not backfilled" if parsed.end > draft.now else ""
    message = "" if first is not None else "no nominal times in the range"
    _keep(draft, _progress(parsed, end=end, first=first, message=message))
    draft.emit(
        EventReason.BACKFILL_STARTED,
        f"Backfill {parsed.token!r} of {when(parsed.start)} to {when(end)} accepted "
        f"(at most {parsed.max_runs} runs){clamped}",
    )
    if first is None:
        draft.emit(EventReason.BACKFILL_COMPLETED, f"Backfill {parsed.token!r}: {message}")


def _refusal(draft: Draft) -> str:
    if draft.when.finite:
        return "a one-off (runAt, or as soon as possible) has no schedule to backfill"
    if sum(not b.done for b in draft.backfills) >= MAX_BACKFILLS:
        return f"{MAX_BACKFILLS} backfills are already in progress"
    return ""


def _progress(parsed: Request, *, end: datetime, first: datetime | None, message: str) -> BackfillProgress:
    return BackfillProgress(
        token=parsed.token,
        from_=parsed.start,
        to=end,
        max_runs=parsed.max_runs,
        next_time=first,
        done=first is None,
        message=message,
    )


def _keep(draft: Draft, progress: BackfillProgress) -> None:
    """Append, then drop the oldest done entries beyond :data:`MAX_BACKFILLS`."""
    draft.backfills.append(progress)
    while len(draft.backfills) > MAX_BACKFILLS:
        oldest_done = next(i for i, b in enumerate(draft.backfills) if b.done)
        del draft.backfills[oldest_done]


def _first(draft: Draft, *, after: datetime, until: datetime) -> datetime | None:
    times, _ = draft.when.between(after, until, limit=1)
    return times[0] if times else None


def room(draft: Draft) -> int:
    """How many backfill runs may start now (see the module docstring)."""
    if draft.closing or draft.circuit_open:
        return 0
    if draft.spec.concurrency_policy is ConcurrencyPolicy.ALLOW:
        return MAX_ACTIVE - len(draft.active)
    return 0 if draft.busy or draft.buffered else 1


def in_progress(draft: Draft) -> bool:
    """A backfill is not done and could start a run now (the pass stopped at the enumeration bound)."""
    return any(not b.done for b in draft.backfills) and room(draft) > 0


def runs_to_start(draft: Draft, observed: Mapping[str, ObservedJob]) -> list[NewRun]:
    """The next runs of the oldest unfinished backfill that the concurrency policy admits now."""
    index = next((i for i, b in enumerate(draft.backfills) if not b.done), None)
    free = room(draft)
    if index is None or free <= 0:
        return []
    progress = draft.backfills[index]
    budget = min(free, progress.max_runs - progress.started, draft.creates_left())
    if budget <= 0 or not draft.may_start(Trigger.BACKFILL, progress.next_time or draft.now):
        return []
    budget = min(budget, draft.backlog_left())
    walk = _walk(draft, progress, budget=budget, ran=_ran(draft, observed, current=progress.token))
    started = progress.started + len(walk.picked)
    done = walk.next_time is None or started >= progress.max_runs
    message = ""
    if done:
        message = f"{started} run(s) started, {progress.already_run + walk.skipped} time(s) already had a run"
        if walk.next_time is not None:
            message += f"; stopped at maxRuns {progress.max_runs}, next time {when(walk.next_time)} not run"
        draft.emit(EventReason.BACKFILL_COMPLETED, f"Backfill {progress.token!r}: {message}")
    draft.backfills[index] = progress.model_copy(
        update={
            "started": started,
            "already_run": progress.already_run + walk.skipped,
            "next_time": walk.next_time,
            "done": done,
            "message": message,
        }
    )
    return [(t, Trigger.BACKFILL, False) for t in walk.picked]


@dataclass
class _Walk:
    picked: list[datetime]
    skipped: int
    next_time: datetime | None


def _walk(draft: Draft, progress: BackfillProgress, *, budget: int, ran: _Ran) -> _Walk:
    """Walk the range from ``nextTime``: pick up to ``budget`` times without a run, count the others."""
    walk = _Walk(picked=[], skipped=0, next_time=None)
    if progress.next_time is None:
        return walk
    after = progress.next_time - schedule.TICK
    looked, bound = 0, max(draft.context.max_enumerated_runs, 1)
    while True:
        times, more = draft.when.between(after, progress.to, limit=min(_CHUNK, bound))
        for nominal in times:
            if len(walk.picked) >= budget or looked >= bound:
                walk.next_time = nominal
                return walk
            looked += 1
            if ran.has(nominal) or (draft.exclusion and draft.exclusion.excludes(nominal)):
                walk.skipped += 1  # already has a run, or excluded (spec.exclude, calendars): never run
            else:
                walk.picked.append(nominal)
        if not more or not times:
            return walk
        after = times[-1]


@dataclass(frozen=True)
class _Ran:
    """The nominal times that already have a run (see the module docstring)."""

    times: frozenset[datetime]
    job_names: frozenset[str]
    covered: tuple[tuple[datetime, datetime | None, datetime], ...]
    """(from, next time, to) of the other backfills: ``[from, next)``, or ``[from, to]`` once walked."""
    scheduled_job: str

    def has(self, nominal: datetime) -> bool:
        if nominal in self.times:
            return True
        name = manifests.job_name(scheduled_job=self.scheduled_job, scheduled_time=nominal, attempt=1)
        if name in self.job_names:
            return True
        return any(
            low <= nominal and (nominal < upcoming if upcoming is not None else nominal <= high)
            for low, upcoming, high in self.covered
        )


def _ran(draft: Draft, observed: Mapping[str, ObservedJob], *, current: str) -> _Ran:
    runs: list[RunRecord | ActiveRun | PendingRetry | BufferedRun | DeadLetter] = [
        *draft.recent,
        *draft.active,
        *draft.pending,
        *draft.buffered,
        *draft.dead_letters,
    ]
    times = {run.scheduled_time for run in runs if not run.manual}
    scheduled_job = draft.obj.metadata.name
    for job in observed.values():
        if job.scheduled_time is None:
            continue
        attempt = job.attempt or 1
        expected = manifests.job_name(scheduled_job=scheduled_job, scheduled_time=job.scheduled_time, attempt=attempt)
        if job.name == expected:
            times.add(job.scheduled_time)
    covered = tuple(
        (b.from_, b.next_time, b.to)
        for b in draft.backfills
        if b.token != current and not b.message.startswith(REFUSED)
    )
    return _Ran(times=frozenset(times), job_names=frozenset(observed), covered=covered, scheduled_job=scheduled_job)
