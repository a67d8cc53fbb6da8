"""Jobs created by the previous version (run stamps also on the pod template) read as this version's lean ones.

The previous version wrote the five run annotations three times: on the Job, on its pod template and (four of
them) in the env. This version writes the pod-template copy only with ``spec.podTemplateStamps``. An upgrade
with runs in flight meets old-shaped Jobs: the intake, the adoption check on ``AlreadyExists``, the planner and
the plugin must read them exactly as they read the lean ones.
"""

from __future__ import annotations

import copy
from typing import Any

from sundial.cli.kubectl import requests
from sundial.kube import ownership
from sundial.model import RunResult, ScheduledJobStatus, Trigger, names
from sundial.planner import manifests
from sundial.planner.planning import plan
from sundial.runtime.watch import jobs

from .builders import NAME, NAMESPACE, UID, active_run, context, make_obj, raw_spec, seconds_after, top_of_the_hour

STAMPS = {
    names.SCHEDULED_TIME_ANNOTATION: "2026-05-11T10:00:00Z",
    names.ATTEMPT_ANNOTATION: "1",
    names.IDEMPOTENCY_KEY_ANNOTATION: manifests.idempotency_key(uid=UID, scheduled_time=top_of_the_hour()),
    names.FENCING_TOKEN_ANNOTATION: "0-7",
    names.TRIGGER_ANNOTATION: "schedule",
}


def previous_version_job(*, complete: bool = False) -> dict[str, Any]:
    """The Job the previous version created for the run at the top of the hour, as the API server returns it
    (written out literally: it must not depend on this version's builder)."""
    job_name = f"{NAME}-{int(top_of_the_hour().timestamp())}-1"
    env = [
        {"name": names.SCHEDULED_TIME_ENV, "value": STAMPS[names.SCHEDULED_TIME_ANNOTATION]},
        {"name": names.ATTEMPT_ENV, "value": "1"},
        {"name": names.IDEMPOTENCY_KEY_ENV, "value": STAMPS[names.IDEMPOTENCY_KEY_ANNOTATION]},
        {"name": names.FENCING_TOKEN_ENV, "value": "0-7"},
        {"name": "X", "value": "1"},
    ]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name,
            "namespace": NAMESPACE,
            "uid": "job-uid-1",
            "resourceVersion": "41",
            "creationTimestamp": "2026-05-11T10:00:01Z",
            "labels": {"app": "report", names.SCHEDULED_JOB_LABEL: NAME, names.SHARD_LABEL: "0"},
            "annotations": {"team": "a", **STAMPS},
            "ownerReferences": [
                {"apiVersion": "sundial.dev/v1alpha1", "kind": "ScheduledJob", "name": NAME, "uid": UID,
                 "controller": True, "blockOwnerDeletion": True},
            ],
        },
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "report", names.SCHEDULED_JOB_LABEL: NAME}, "annotations": dict(STAMPS)},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox", "env": env}]},
            },
        },
        "status": {
            "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "2026-05-11T10:00:30Z"}]
            if complete
            else [],
            "completionTime": "2026-05-11T10:00:30Z" if complete else None,
        },
    }  # fmt: skip


def lean_job() -> dict[str, Any]:
    """This version's Job for the same run, completed with the previous version's server-side fields."""
    manifest = manifests.build_job(
        obj=make_obj(raw_spec()), scheduled_time=top_of_the_hour(), attempt=1, trigger=Trigger.SCHEDULE,
        fencing_token="0-7",
    )  # fmt: skip
    old = previous_version_job()
    body = copy.deepcopy(manifest)
    body["metadata"].update({key: old["metadata"][key] for key in ("uid", "resourceVersion", "creationTimestamp")})
    body["status"] = old["status"]
    return body


def test_the_previous_shape_differs_from_the_lean_one_only_by_the_pod_template_copy() -> None:
    old, lean = previous_version_job(), lean_job()
    assert old["spec"]["template"]["metadata"].pop("annotations") == STAMPS
    assert "annotations" not in lean["spec"]["template"]["metadata"]
    assert old == lean


def test_the_intake_observes_an_old_shaped_job_as_it_observes_a_lean_one() -> None:
    old = jobs.observe(previous_version_job())
    assert old == jobs.observe(lean_job())
    assert old.scheduled_time == top_of_the_hour()
    assert old.attempt == 1
    assert old.owner_uid == UID


def test_a_create_that_meets_an_old_shaped_job_of_the_same_attempt_adopts_it() -> None:
    manifest = manifests.build_job(
        obj=make_obj(raw_spec()), scheduled_time=top_of_the_hour(), attempt=1, trigger=Trigger.SCHEDULE,
        fencing_token="1-8-lease-uid",
    )  # fmt: skip
    assert ownership.controller_uid(previous_version_job()) == UID
    assert ownership.same_attempt(previous_version_job(), manifest)


def test_the_planner_records_the_success_of_a_run_whose_job_the_previous_version_created() -> None:
    run = active_run(top_of_the_hour(), claimed=top_of_the_hour())
    obj = make_obj(raw_spec(), status=ScheduledJobStatus(active=(run,)))
    observed = jobs.observe(previous_version_job(complete=True))
    result = plan(obj, [observed], context(seconds_after(40)))
    assert result.status.active == ()
    assert [(r.job, r.result) for r in result.status.recent_runs] == [(run.job, RunResult.SUCCEEDED)]


class _Kubectl:
    """Answers ``kubectl get jobs -l <selector> -o json`` with the given Jobs."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.asked: list[tuple[str, ...]] = []

    def get_json(self, *args: str) -> dict[str, Any]:
        self.asked.append(args)
        return {"items": self.items}


def test_the_plugin_finds_old_shaped_jobs_of_a_scheduledjob_and_their_trigger() -> None:
    old = previous_version_job()
    manual = copy.deepcopy(old)
    manual["metadata"]["name"] = f"{NAME}-m{int(top_of_the_hour().timestamp())}-1"
    manual["metadata"]["annotations"][names.TRIGGER_ANNOTATION] = "manual"
    kubectl = _Kubectl([old, manual])
    assert requests.jobs_of(kubectl, NAME) == [old, manual]  # type: ignore[arg-type]
    assert requests._manual_job_names(kubectl, NAME) == {manual["metadata"]["name"]}  # type: ignore[arg-type]
