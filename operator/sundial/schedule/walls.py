"""Enumerating the local wall-clock times a cron expression matches (naive, in the schedule's zone).

Days jump month by month and day by day; inside a day only the matching hours, minutes and seconds are
visited, so a sparse schedule is cheap and a per-second one costs one step per yielded time.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta

from sundial.schedule.cron import CronExpression

HORIZON = timedelta(days=3653)
"""Enumeration stops after this long (about 10 years) without a matching day."""
LAST_DAY = date(9998, 12, 31)
"""No wall time is produced after this day (keeps UTC arithmetic clear of ``datetime.max``)."""


def walls_from(cron: CronExpression, start: datetime) -> Iterator[datetime]:
    """Matching naive wall-clock times ``>= start`` (whole seconds), ascending."""
    day = start.date()
    end = _horizon_end(day)
    from_time: time | None = start.time()
    while day <= end:
        if day.month not in cron.months:
            day = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
            from_time = None
            continue
        if cron.matches_day(day):
            yield from _times_of_day(cron, day, from_time)
            end = _horizon_end(day)
        from_time = None
        day += timedelta(days=1)


def _horizon_end(day: date) -> date:
    return LAST_DAY if day > LAST_DAY - HORIZON else day + HORIZON


def _times_of_day(cron: CronExpression, day: date, from_time: time | None) -> Iterator[datetime]:
    year, month, dom = day.year, day.month, day.day
    if from_time is None:
        for hour in cron.hours:
            for minute in cron.minutes:
                for second in cron.seconds:
                    yield datetime(year, month, dom, hour, minute, second)  # noqa: DTZ001 - wall time
        return
    hours = cron.hours[bisect_left(cron.hours, from_time.hour) :]
    for hour in hours:
        later_hour = hour > from_time.hour
        minutes = cron.minutes if later_hour else cron.minutes[bisect_left(cron.minutes, from_time.minute) :]
        for minute in minutes:
            later = later_hour or minute > from_time.minute
            seconds = cron.seconds if later else cron.seconds[bisect_left(cron.seconds, from_time.second) :]
            for second in seconds:
                yield datetime(year, month, dom, hour, minute, second)  # noqa: DTZ001 - wall time
