"""kopf is wired as an informer only (ScheduleCalendars; the ScheduledJobs and Jobs have their own informers):
no changing handlers, no posting, no peering."""

from __future__ import annotations

from typing import Any

import kopf
from kopf._cogs.structs import references

from sundial.runtime.watch import informers

JOBS = references.Resource("batch", "v1", "jobs", kind="Job", singular="job", namespaced=True, verbs=["list", "watch"])
SCHEDULED_JOBS = references.Resource(
    "sundial.dev", "v1alpha1", "scheduledjobs", kind="ScheduledJob", singular="scheduledjob",
    namespaced=True, verbs=["list", "watch"],
)  # fmt: skip
CALENDARS = references.Resource(
    "sundial.dev", "v1alpha1", "schedulecalendars", kind="ScheduleCalendar", singular="schedulecalendar",
    namespaced=True, verbs=["list", "watch"],
)  # fmt: skip


def test_kopf_watches_neither_jobs_nor_scheduled_jobs() -> None:
    registry = informers.registry(configuration=None, on_calendar=print)
    assert not registry._watching.has_handlers(resource=JOBS)
    assert not registry._watching.has_handlers(resource=SCHEDULED_JOBS)


def test_kopf_does_not_scan_crds_or_namespaces_which_the_shipped_rbac_does_not_grant() -> None:
    settings = informers.operator_settings()
    assert settings.scanning.disabled is True


def test_no_event_posting_and_no_peering() -> None:
    settings = informers.operator_settings()
    assert settings.posting.enabled is False
    assert settings.peering.standalone is True


def test_a_failing_list_page_is_retried_for_minutes_before_kopf_gives_up_the_watch() -> None:
    """A lagging watch cache answers 504 to continue pages for tens of seconds on a loaded API server; kopf's
    default 54 s of retries then ends the watcher (and the operator)."""
    settings = informers.operator_settings()
    backoffs = list(settings.networking.error_backoffs)
    assert sum(backoffs) >= 150
    assert max(backoffs) <= 30


def test_only_watching_handlers_so_kopf_never_patches_annotations_or_finalizers() -> None:
    seen: list[tuple[str | None, Any]] = []
    registry = informers.registry(
        configuration=None,
        on_calendar=lambda kind, body: seen.append((kind, body)),
    )
    for resource in (CALENDARS,):
        assert registry._watching.has_handlers(resource=resource)
        assert not registry._changing.has_handlers(resource=resource)
        assert not registry._spawning.has_handlers(resource=resource)
    assert len(registry._watching.get_all_handlers()) == 1


async def test_handlers_hand_the_raw_event_to_the_store_and_return_none() -> None:
    seen: list[tuple[str | None, Any]] = []
    registry = informers.registry(
        configuration=None,
        on_calendar=lambda kind, body: seen.append(("calendar", kind)),
    )
    for handler in registry._watching.get_all_handlers():
        assert await handler.fn(event={"type": "ADDED", "object": {}}) is None
    assert seen == [("calendar", "ADDED")]


def test_the_diff_base_essence_is_empty_so_kopf_deep_copies_nothing_per_event() -> None:
    settings = informers.operator_settings()
    storage = settings.persistence.diffbase_storage
    assert isinstance(storage, informers.EventOnlyDiffBase)
    body = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "annotations": {}}, "spec": {"big": [1] * 100}}
    assert storage.build(body=kopf.Body(body)) == {}
    assert storage.fetch(body=kopf.Body(body)) is None  # nothing was ever stored: fetch is kopf's own


def test_kopf_watch_streams_decode_with_orjson() -> None:
    from kopf._cogs.clients import api  # noqa: PLC0415

    from sundial.kube import codec  # noqa: PLC0415

    original = api.json
    try:
        informers.use_fast_json()
        assert api.json.loads is codec.loads
        assert api.json.loads('{"type": "ADDED", "object": {"a": [1, 2.5, null]}}') == {
            "type": "ADDED",
            "object": {"a": [1, 2.5, None]},
        }
    finally:
        api.json = original
