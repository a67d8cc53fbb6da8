"""The watch wing - the intake: what the operator knows of the cluster, fed by its own informers.

One informer per kind (ScheduledJobs, their Jobs, ScheduleCalendars: :mod:`.kinds`), all the same design
(:mod:`.listwatch`: paged LIST, WATCH with bookmarks, resume, relist on 410, a relist replaces; :mod:`.paging`,
:mod:`.backoff`); what each object does (:mod:`.intake`: keep it and wake its key), and what happens to one that
cannot be read (:mod:`.quarantine`); the in-memory view (:mod:`.store`, :mod:`.keeping`, :mod:`.jobs`,
:mod:`.calendars`) and "ready once every informer has listed" (:mod:`.readiness`). It may
import the layers below the runtime (kube, planner, model, schedule) and :mod:`sundial.runtime.settings`; it
never imports another wing.
"""
