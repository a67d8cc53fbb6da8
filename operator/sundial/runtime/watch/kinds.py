"""The three collections the intake follows, one informer each (:mod:`.listwatch`)."""

from __future__ import annotations

from sundial import model
from sundial.kube.watches import Collection
from sundial.model import names

_SUNDIAL = ("apis", model.resource.GROUP, model.resource.VERSION)

SCHEDULED_JOBS = Collection(_SUNDIAL, model.resource.PLURAL)
"""Every ScheduledJob in scope."""
JOBS = Collection(("apis", "batch", "v1"), "jobs", label_selector=names.SCHEDULED_JOB_LABEL)
"""The Jobs labelled ``sundial.dev/scheduledjob`` (Sundial's own, and any a tenant labels so: all untrusted)."""
SCHEDULE_CALENDARS = Collection(_SUNDIAL, model.calendars.CALENDAR_PLURAL)
"""Every ScheduleCalendar in scope."""
