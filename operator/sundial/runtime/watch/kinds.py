"""The collections the intake follows, one informer each (:mod:`.listwatch`): the three the planner reads, and
the fencing policy and its binding (a change only triggers a fencing probe)."""

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

_ADMISSION = ("apis", "admissionregistration.k8s.io", "v1")
FENCING_POLICY = "validatingadmissionpolicies"
FENCING_BINDING = "validatingadmissionpolicybindings"


def fencing(name: str) -> tuple[Collection, Collection]:
    """The fencing ValidatingAdmissionPolicy NAME and its binding (the chart and ``config/fencing`` give both the
    same name, ``--fencing-policy``), each selected by ``metadata.name``: cluster-scoped, followed only to probe
    enforcement again when either changes (:mod:`sundial.runtime.watch.fencingpolicies`)."""
    selector = f"metadata.name={name}"
    return (
        Collection(_ADMISSION, FENCING_POLICY, field_selector=selector),
        Collection(_ADMISSION, FENCING_BINDING, field_selector=selector),
    )
