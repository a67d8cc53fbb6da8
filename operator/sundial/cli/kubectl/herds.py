"""The herd forecast's arithmetic (for ``kubectl sundial forecast``): when each ScheduledJob's coming runs fire,
how many fall in each bucket, the largest same-second herds, and how ``jitter`` or ``H`` would spread them.

Nothing here has a second implementation of the schedule: nominal times come from :mod:`.nextruns` (the
operator's ``When``, ``spec.exclude`` and calendars), a run fires at its nominal time plus
:func:`sundial.schedule.jitter_offset` as the planner's ``fire_at`` (:mod:`sundial.planner.times.due`) applies
it, and ``H`` is the operator's own cron parser seeded with the object's UID (:meth:`ScheduledJobSpec.when`).
Imports the model and the schedule layer: the command imports this module when it runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sundial import schedule
from sundial.cli.kubectl import nextruns
from sundial.cli.kubectl.calendars import ResolvedCalendars
from sundial.model import ScheduledJob
from sundial.schedule.cron import MACROS

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
BUCKETS = {"second": SECOND, "minute": MINUTE, "hour": HOUR}
MAX_RUNS = 200_000
"""Most runs one forecast enumerates (objects times their runs); more is refused with a message naming ``--hours``."""
JITTERS = (timedelta(seconds=30), timedelta(minutes=5))
"""The jitters a herd is tried with."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class TooManyRunsError(ValueError):
    """The forecast would enumerate more than :data:`MAX_RUNS` runs."""


@dataclass(frozen=True)
class Fire:
    """One coming run: the object (``namespace/name``), its nominal time and when it fires (nominal + jitter)."""

    key: str
    nominal: datetime
    at: datetime
    obj: ScheduledJob = field(compare=False, repr=False)


@dataclass(frozen=True)
class Skipped:
    """An object that fires nothing in the forecast, and why."""

    key: str
    reason: str


@dataclass(frozen=True)
class Spread:
    """What one change would make of a herd: the most runs in one second and in one minute."""

    change: str
    max_per_second: int
    max_per_minute: int
    unchanged: int = 0
    """Members the change does not apply to (their schedule has no fixed minute/second to hash, or is a list)."""


@dataclass(frozen=True)
class Herd:
    """Runs that fire in the same second."""

    second: datetime
    fires: tuple[Fire, ...]
    spreads: tuple[Spread, ...] = ()


def key_of(obj: ScheduledJob) -> str:
    return f"{obj.metadata.namespace or ''}/{obj.metadata.name}"


def fire_at(obj: ScheduledJob, nominal: datetime, jitter: timedelta | None = None) -> datetime:
    """When the run ``nominal`` of ``obj`` fires: nominal plus its deterministic jitter, as the planner applies
    it (``spec.jitter`` unless ``jitter`` is given)."""
    spread = jitter if jitter is not None else obj.spec.jitter if obj.spec else timedelta(0)
    return nominal + schedule.jitter_offset(uid=obj.metadata.uid, nominal=nominal, jitter=spread)


def fires(
    objects: Iterable[ScheduledJob],
    *,
    start: datetime,
    end: datetime,
    calendars: Callable[[ScheduledJob], ResolvedCalendars],
    max_runs: int = MAX_RUNS,
) -> tuple[list[Fire], list[Skipped]]:
    """Every run of ``objects`` that fires in ``[start, end)``, and the objects that fire nothing and why
    (invalid, suspended, a calendar problem). Raises :class:`TooManyRunsError` past ``max_runs``."""
    found: list[Fire] = []
    skipped: list[Skipped] = []
    for obj in objects:
        key = key_of(obj)
        if obj.spec is None:
            skipped.append(Skipped(key, f"invalid: {obj.spec_error}"))
            continue
        if obj.spec.suspend:
            skipped.append(Skipped(key, "suspended"))
            continue
        resolved = calendars(obj)
        if resolved.problem is not None:
            skipped.append(Skipped(key, resolved.problem))
            continue
        # A run whose nominal time is up to spec.jitter before start may still fire inside the window.
        after = start - obj.spec.jitter - schedule.TICK
        for nominal in nextruns.running_times(obj, after=after, exclusion=resolved.exclusion):
            if nominal >= end:
                break
            at = fire_at(obj, nominal)
            if start <= at < end:
                found.append(Fire(key, nominal, at, obj))
                if len(found) > max_runs:
                    raise TooManyRunsError(f"more than {max_runs} runs (last counted: {key})")
    found.sort(key=lambda fire: (fire.at, fire.key))
    return found, skipped


def floor(instant: datetime, width: timedelta) -> datetime:
    """The start of the bucket of ``width`` (counted from the Unix epoch, in UTC) that holds ``instant``."""
    return instant - (instant - EPOCH) % width


def buckets(times: Iterable[datetime], *, start: datetime, end: datetime, width: timedelta) -> list[int]:
    """How many of ``times`` fall in each bucket of ``width`` from ``floor(start)`` to ``end`` (every bucket,
    empty ones too)."""
    first = floor(start, width)
    count = max(-(-(end - first) // width), 1)
    counts = [0] * count
    for instant in times:
        index = (instant - first) // width
        if 0 <= index < count:
            counts[index] += 1
    return counts


def most_per(times: Iterable[datetime], width: timedelta) -> int:
    """The most of ``times`` in one bucket of ``width``."""
    counted = Counter(floor(instant, width) for instant in times)
    return max(counted.values(), default=0)


def herds(found: Sequence[Fire], *, top: int, smallest: int = 2) -> list[Herd]:
    """The ``top`` largest groups of at least ``smallest`` runs firing in the same second, largest first
    (earliest first among equals)."""
    seconds: dict[datetime, list[Fire]] = {}
    for fire in found:
        seconds.setdefault(floor(fire.at, SECOND), []).append(fire)
    chosen = sorted((s for s in seconds.items() if len(s[1]) >= smallest), key=lambda s: (-len(s[1]), s[0]))
    return [Herd(second, tuple(members)) for second, members in chosen[:top]]


def with_jitter(herd: Herd, jitter: timedelta) -> Spread:
    """The herd if every member had ``spec.jitter: jitter`` (the operator's hash of its UID and nominal time)."""
    moved = [fire_at(fire.obj, fire.nominal, jitter) for fire in herd.fires]
    text = schedule.format_duration(jitter)
    return Spread(f"jitter {text}", most_per(moved, SECOND), most_per(moved, MINUTE))


def hashed(text: str) -> str | None:
    """``text`` with its fixed seconds and minute replaced by ``H`` (a 5-field expression: the minute; with
    seconds: the seconds and, when fixed, the minute); None when there is nothing fixed to hash."""
    fields = MACROS.get(text.strip().lower(), text).split()
    count = {5: 1, 6: 2}.get(len(fields), 0)
    changed = False
    for index in range(count):
        if not fields[index].isdigit():
            break
        fields[index] = "H"
        changed = True
    return " ".join(fields) if changed else None


def _hashed_time(fire: Fire) -> datetime | None:
    spec = fire.obj.spec
    text = hashed(spec.schedule) if spec is not None and spec.schedule is not None else None
    if spec is None or text is None:
        return None
    fields = text.split()
    seconds_only = len(fields) == 6 and fields[1] != "H"  # only the seconds moved: the same minute
    local = fire.nominal.astimezone(schedule.load_zone(spec.time_zone))
    since = local.replace(minute=local.minute if seconds_only else 0, second=0, microsecond=0).astimezone(UTC)
    changed = spec.model_copy(update={"schedule": text})
    when = changed.when(uid=fire.obj.metadata.uid, created=fire.obj.metadata.creation_timestamp or fire.nominal)
    nominal = when.next_after(since - schedule.TICK)
    return fire_at(fire.obj, nominal) if nominal is not None else None


def with_h(herd: Herd) -> Spread:
    """The herd if every member's ``schedule`` hashed its fixed minute (or seconds) with ``H``: each member's
    run of the same hour (minute) under the operator's ``H`` seeded with its UID; members whose schedule has
    nothing fixed to hash (or that use ``schedules``/``runAt``) stay where they are."""
    moved: list[datetime] = []
    unchanged = 0
    for fire in herd.fires:
        instant = _hashed_time(fire)
        if instant is None:
            unchanged += 1
        moved.append(instant or fire.at)
    return Spread("H", most_per(moved, SECOND), most_per(moved, MINUTE), unchanged)


def spread(herd: Herd, jitters: Sequence[timedelta] = JITTERS) -> Herd:
    """The herd with what each jitter of ``jitters`` and ``H`` would make of it."""
    tried = [with_jitter(herd, jitter) for jitter in jitters]
    return Herd(herd.second, herd.fires, (*tried, with_h(herd)))
