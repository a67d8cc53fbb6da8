"""``sundial.schedule``: the pure time layer (DESIGN §3).

Cron parsing (with Jenkins ``H`` and the Quartz day tokens), time zones, DST policies, nominal run times
and the one protocol over every kind of them (:class:`When`: cron, lists of cron and one-off alike),
excluded times (:class:`Exclusion`), catch-up planning,
jitter, retry backoff and RFC 3339/duration formats. Imports nothing else from ``sundial`` and never
reads the clock: ``now`` and ``after`` are always arguments, and every instant is an aware UTC datetime.
The one default clock of the layers above, :func:`utcnow`, lives here too (nothing in this layer calls it).
"""

from sundial.schedule.backoff import backoff_delay
from sundial.schedule.catchup import CatchUpOutcome, plan_catch_up
from sundial.schedule.clock import utcnow
from sundial.schedule.cron import CronExpression, parse_cron
from sundial.schedule.durations import format_duration, parse_duration
from sundial.schedule.errors import ScheduleError
from sundial.schedule.exclusions import Exclusion, excluded_cron, excluded_dates, excluded_span
from sundial.schedule.jitter import jitter_offset
from sundial.schedule.policies import CatchUpPolicy, RepeatedTime, SkippedTime
from sundial.schedule.rfc3339 import format_rfc3339, parse_rfc3339
from sundial.schedule.timetable import Timetable, build_timetable
from sundial.schedule.whens import TICK, Once, Recurring, Timeline, Union, When, once, recurring
from sundial.schedule.zones import load_zone, require_utc

__all__ = [
    "TICK",
    "CatchUpOutcome",
    "CatchUpPolicy",
    "CronExpression",
    "Exclusion",
    "Once",
    "Recurring",
    "RepeatedTime",
    "ScheduleError",
    "SkippedTime",
    "Timeline",
    "Timetable",
    "Union",
    "When",
    "backoff_delay",
    "build_timetable",
    "excluded_cron",
    "excluded_dates",
    "excluded_span",
    "format_duration",
    "format_rfc3339",
    "jitter_offset",
    "load_zone",
    "once",
    "parse_cron",
    "parse_duration",
    "parse_rfc3339",
    "plan_catch_up",
    "recurring",
    "require_utc",
    "utcnow",
]
