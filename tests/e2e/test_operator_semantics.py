"""DESIGN §3-§6 semantics end to end (issue 4 item 5): one operator for the module, one namespace per test.

The operator (``start_module_operator``) watches exactly the module's per-test namespaces. Schedules are
seconds-level; every wait polls with a deadline. "Nothing happens for a while" checks poll the clock
until a few nominal times have passed and then assert on what the API server holds.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Any, TypeVar
from zoneinfo import ZoneInfo

import pytest

from sundial import schedule
from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

T = TypeVar("T")
LABEL = names.SCHEDULED_JOB_LABEL
SCHEDULED = names.SCHEDULED_TIME_ANNOTATION


@pytest.fixture(scope="module")
def operator(start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces) -> Operator:
    # A short Event series interval, so that aggregated counts show within a test's deadline.
    return start_module_operator("--event-series-interval", "1", namespaces=module_namespaces.all)


@pytest.fixture
def ns(operator: Operator, module_namespace: str) -> str:
    return module_namespace


# Helpers ---------------------------------------------------------------------------------------------


def _sj_manifest(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _jobs(cluster: Cluster, ns: str, owner: str, *, live: bool = False) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    if live:
        items = [job for job in items if not job["metadata"].get("deletionTimestamp")]
    return sorted(items, key=lambda job: (_nominal(job), _attempt(job)))


def _sj(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", ns) or {}
    return body


def _status(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = _sj(cluster, ns, name).get("status") or {}
    return status


def _counter(cluster: Cluster, ns: str, name: str, counter: str) -> int:
    return int((_status(cluster, ns, name).get("counters") or {}).get(counter, 0))


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return {}


def _when(condition: bool, value: T) -> T | None:
    """VALUE when CONDITION holds, else None (a typed predicate result for ``Cluster.wait_for``)."""
    return value if condition else None


def _parse(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _nominal(job: dict[str, Any]) -> dt.datetime:
    return _parse(job["metadata"]["annotations"][SCHEDULED])


def _attempt(job: dict[str, Any]) -> int:
    return int(job["metadata"]["annotations"][names.ATTEMPT_ANNOTATION])


def _trigger(job: dict[str, Any]) -> str:
    return str(job["metadata"]["annotations"][names.TRIGGER_ANNOTATION])


def _created(job: dict[str, Any]) -> dt.datetime:
    return _parse(job["metadata"]["creationTimestamp"])


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _at(seconds: float) -> dt.datetime:
    """A whole second about SECONDS from now (UTC)."""
    return (_now() + dt.timedelta(seconds=seconds)).replace(microsecond=0)


def _rfc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _events(cluster: Cluster, ns: str, name: str | None = None) -> list[dict[str, Any]]:
    selector = "involvedObject.kind=ScheduledJob" + (f",involvedObject.name={name}" if name else "")
    listing = cluster.get_json("events", "-n", ns, "--field-selector", selector) or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def _reasons(cluster: Cluster, ns: str, name: str | None = None) -> set[str]:
    return {str(event["reason"]) for event in _events(cluster, ns, name)}


def _wait_reasons(cluster: Cluster, ns: str, name: str, *reasons: str) -> None:
    """Events are sent in the background (and aggregated): poll for them with a deadline."""
    cluster.wait_for(
        lambda: set(reasons) <= _reasons(cluster, ns, name),
        timeout=20,
        message=f"Events {', '.join(reasons)} on {name}",
    )


def _wait_until(cluster: Cluster, moment: dt.datetime) -> None:
    """Poll the clock (not a fixed sleep) until MOMENT has passed."""
    seconds = (moment - _now()).total_seconds()
    cluster.wait_for(lambda: _now() >= moment, timeout=max(seconds, 0) + 5, message=f"clock past {moment}")


def _patch_spec(cluster: Cluster, ns: str, name: str, patch: str) -> None:
    cluster.kubectl("patch", "scheduledjob", name, "-n", ns, "--type", "merge", "-p", patch)


# One-offs and time ------------------------------------------------------------------------------------


def test_asap_one_off_completes(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj_manifest("asap", cluster.job_manifest("x")), ns)
    sj = cluster.wait_for(
        lambda: _when(
            bool(obj := _sj(cluster, ns, "asap")) and _condition(obj, "Complete").get("status") == "True", obj
        ),
        timeout=40,
        message="Complete=True on an ASAP one-off",
    )
    assert _condition(sj, "Complete")["reason"] == "Succeeded"
    [job] = _jobs(cluster, ns, "asap")
    created = _parse(sj["metadata"]["creationTimestamp"])
    assert _nominal(job) == created, "an ASAP run's nominal time is the object's creation time"
    assert _trigger(job) == "schedule"
    assert sj["status"]["counters"]["succeeded"] == 1
    _wait_reasons(cluster, ns, "asap", "SuccessfulCreate", "SawCompletedJob")


def test_time_zone_six_field_schedule_fires_and_annotates_utc(cluster: Cluster, ns: str) -> None:
    # The hour field only matches in Kathmandu (UTC+05:45): in UTC this schedule would not fire for hours.
    zone = ZoneInfo("Asia/Kathmandu")
    local_hour = (_now() + dt.timedelta(seconds=5)).astimezone(zone).hour
    hours = f"{local_hour},{(local_hour + 1) % 24}"
    cluster.apply(
        _sj_manifest("zoned", cluster.job_manifest("x"), schedule=f"*/3 * {hours} * * *", timeZone="Asia/Kathmandu"),
        ns,
    )
    jobs = cluster.wait_for(
        lambda: _when(bool(found := _jobs(cluster, ns, "zoned")) and len(found) >= 2, found),
        timeout=30,
        message="two runs of a 6-field schedule in Asia/Kathmandu",
    )
    for job in jobs:
        text = job["metadata"]["annotations"][SCHEDULED]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text), text
        nominal = _nominal(job)
        assert nominal.second % 3 == 0
        assert nominal.astimezone(zone).hour in {local_hour, (local_hour + 1) % 24}
        assert nominal.astimezone(dt.UTC).hour not in {local_hour, (local_hour + 1) % 24}
    status = _status(cluster, ns, "zoned")
    assert status["nextScheduleTime"].endswith("Z")
    cluster.kubectl("delete", "scheduledjob", "zoned", "-n", ns, "--wait=false")


def test_jitter_keeps_the_nominal_time_and_never_fires_early(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj_manifest("jittery", cluster.job_manifest("x"), schedule="*/4 * * * * *", jitter="3s"), ns)
    jobs = cluster.wait_for(
        lambda: _when(bool(found := _jobs(cluster, ns, "jittery")) and len(found) >= 3, found),
        timeout=40,
        message="three jittered runs",
    )
    uid = _sj(cluster, ns, "jittery")["metadata"]["uid"]
    offsets = []
    for job in jobs:
        nominal = _nominal(job)
        assert nominal.second % 4 == 0 and nominal.microsecond == 0, "the annotation carries the nominal time"
        offset = schedule.jitter_offset(uid=uid, nominal=nominal, jitter=dt.timedelta(seconds=3))
        offsets.append(offset)
        # creationTimestamp has whole seconds (truncated): compare truncated instants.
        earliest = (nominal + offset).replace(microsecond=0)
        assert _created(job) >= earliest, (job["metadata"]["name"], offset)
    assert len(set(offsets)) > 1 or offsets[0] > dt.timedelta(0), "jitter is deterministic but not all zero"
    cluster.kubectl("delete", "scheduledjob", "jittery", "-n", ns, "--wait=false")


def test_start_time_in_the_near_future_holds_runs_back(cluster: Cluster, ns: str) -> None:
    start = _at(7)
    cluster.apply(_sj_manifest("later", cluster.job_manifest("x"), schedule="*/2 * * * * *", startTime=_rfc(start)), ns)
    status = cluster.wait_for(
        lambda: _when(bool((found := _status(cluster, ns, "later")).get("nextScheduleTime")), found),
        timeout=20,
        message="nextScheduleTime",
    )
    assert _parse(status["nextScheduleTime"]) >= start
    jobs = cluster.wait_for(
        lambda: _when(bool(found := _jobs(cluster, ns, "later")) and len(found) >= 2, found),
        timeout=30,
        message="runs after startTime",
    )
    for job in jobs:
        assert _nominal(job) >= start
        assert _created(job) >= start
    cluster.kubectl("delete", "scheduledjob", "later", "-n", ns, "--wait=false")


def test_end_time_stops_runs(cluster: Cluster, ns: str) -> None:
    end = _at(5)
    cluster.apply(_sj_manifest("ending", cluster.job_manifest("x"), schedule="*/2 * * * * *", endTime=_rfc(end)), ns)
    cluster.wait_for(lambda: _jobs(cluster, ns, "ending"), timeout=20, message="a run before endTime")
    _wait_until(cluster, end + dt.timedelta(seconds=5))
    jobs = _jobs(cluster, ns, "ending")
    assert jobs and all(_nominal(job) <= end for job in jobs), [job["metadata"]["name"] for job in jobs]
    status = cluster.wait_for(
        lambda: _when(bool(found := _status(cluster, ns, "ending")) and not found.get("nextScheduleTime"), found),
        timeout=10,
        message="no nextScheduleTime after endTime",
    )
    assert status.get("nextScheduleTime") is None


def test_suspend_stops_runs_and_resume_does_not_replay_them(cluster: Cluster, ns: str) -> None:
    cluster.apply(_sj_manifest("pausable", cluster.job_manifest("x"), schedule="*/2 * * * * *"), ns)
    cluster.wait_for(lambda: _jobs(cluster, ns, "pausable"), timeout=20, message="a first run")
    _patch_spec(cluster, ns, "pausable", '{"spec":{"suspend":true}}')
    sj = cluster.wait_for(
        lambda: _when(
            bool(obj := _sj(cluster, ns, "pausable")) and _condition(obj, "Suspended").get("status") == "True", obj
        ),
        timeout=20,
        message="Suspended=True",
    )
    suspended = _condition(sj, "Suspended")
    assert suspended["reason"] == "Suspended"
    since = _parse(suspended["lastTransitionTime"])
    missed_before = int((sj["status"].get("counters") or {}).get("missed", 0))
    count = len(_jobs(cluster, ns, "pausable"))
    _wait_until(cluster, _now() + dt.timedelta(seconds=7))  # three or more nominal times pass
    jobs = _jobs(cluster, ns, "pausable")
    assert len(jobs) == count, "no new Job while suspended"
    assert all(_created(job) <= since for job in jobs)

    resumed = _now()
    _patch_spec(cluster, ns, "pausable", '{"spec":{"suspend":false}}')
    after = cluster.wait_for(
        lambda: _when(bool(found := _jobs(cluster, ns, "pausable")) and len(found) > count, found),
        timeout=20,
        message="runs after resume",
    )
    replayed = [job["metadata"]["name"] for job in after if since <= _nominal(job) <= resumed]
    assert replayed == [], "runs that came due while suspended are not run after resume"
    assert all(_trigger(job) == "schedule" for job in after)
    sj = _sj(cluster, ns, "pausable")
    assert _condition(sj, "Suspended")["status"] == "False"
    assert int(sj["status"]["counters"].get("missed", 0)) == missed_before, "a user's pause is not 'missed'"
    cluster.kubectl("delete", "scheduledjob", "pausable", "-n", ns, "--wait=false")


# Concurrency, lost Jobs, manual actions ------------------------------------------------------------------


def test_replace_deletes_the_running_job(cluster: Cluster, ns: str) -> None:
    slow = cluster.job_manifest("x", duration_seconds=60)
    cluster.apply(_sj_manifest("replacer", slow, schedule="*/4 * * * * *", concurrencyPolicy="Replace"), ns)

    def replaced_run() -> dict[str, Any] | None:
        found = _status(cluster, ns, "replacer")
        return _when(any(run.get("result") == "Replaced" for run in found.get("recentRuns") or []), found)

    status = cluster.wait_for(replaced_run, timeout=30, message="a run recorded as Replaced")
    replaced = next(run for run in status["recentRuns"] if run["result"] == "Replaced")
    assert replaced["attempts"] >= 1
    cluster.wait_for(
        lambda: replaced["job"] not in {job["metadata"]["name"] for job in _jobs(cluster, ns, "replacer", live=True)},
        timeout=20,
        message=f"the replaced Job {replaced['job']} is deleted",
    )
    assert len(status.get("active") or []) == 1
    _wait_reasons(cluster, ns, "replacer", "RunReplaced")
    cluster.kubectl("delete", "scheduledjob", "replacer", "-n", ns, "--wait=false")


def test_deleting_a_running_job_is_job_lost_and_retried(cluster: Cluster, ns: str) -> None:
    slow = cluster.job_manifest("x", duration_seconds=60)
    spec = {"retry": {"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}}}
    cluster.apply(_sj_manifest("lost", slow, runAt=_rfc(_at(1)), **spec), ns)
    [job] = cluster.wait_for(lambda: _jobs(cluster, ns, "lost"), timeout=20, message="attempt 1")
    cluster.wait_for(
        lambda: [run for run in _status(cluster, ns, "lost").get("active") or [] if run.get("job")],
        timeout=20,
        message="the attempt recorded as active",
    )
    cluster.kubectl("delete", "job", job["metadata"]["name"], "-n", ns, "--wait=false")
    retry = cluster.wait_for(
        lambda: next((j for j in _jobs(cluster, ns, "lost") if _attempt(j) == 2), None),
        timeout=30,
        message="attempt 2 after JobLost",
    )
    assert _trigger(retry) == "retry"
    assert _nominal(retry) == _nominal(job)
    key = names.IDEMPOTENCY_KEY_ANNOTATION
    assert retry["metadata"]["annotations"][key] == job["metadata"]["annotations"][key]
    _wait_reasons(cluster, ns, "lost", "JobLost", "Retrying")
    assert _counter(cluster, ns, "lost", "failed") >= 1


def test_redrive_token_gives_a_dead_letter_a_new_attempt(cluster: Cluster, ns: str) -> None:
    spec = {"retry": {"maxAttempts": 1}, "failedJobsHistoryLimit": 5}
    cluster.apply(_sj_manifest("redriven", cluster.job_manifest("x", fail=True), runAt=_rfc(_at(1)), **spec), ns)
    cluster.wait_for(lambda: _status(cluster, ns, "redriven").get("deadLetters"), timeout=30, message="a dead letter")
    [first] = _jobs(cluster, ns, "redriven")
    _wait_reasons(cluster, ns, "redriven", "DeadLettered")
    cluster.kubectl("annotate", "scheduledjob", "redriven", "-n", ns, "sundial.dev/redrive=token-1")
    again = cluster.wait_for(
        lambda: next((j for j in _jobs(cluster, ns, "redriven") if _trigger(j) == "redrive"), None),
        timeout=20,
        message="a redrive attempt",
    )
    assert _attempt(again) == 2
    assert _nominal(again) == _nominal(first)
    key = names.IDEMPOTENCY_KEY_ANNOTATION
    assert again["metadata"]["annotations"][key] == first["metadata"]["annotations"][key]
    cluster.wait_for(
        lambda: _status(cluster, ns, "redriven").get("lastHandledRedrive") == "token-1",
        timeout=20,
        message="status.lastHandledRedrive echoes the token",
    )
    _wait_reasons(cluster, ns, "redriven", "Redriven")


def test_suspend_after_consecutive_dead_letters_opens_the_circuit(cluster: Cluster, ns: str) -> None:
    spec = {"retry": {"maxAttempts": 1}, "deadLetter": {"suspendAfter": 2}, "failedJobsHistoryLimit": 10}
    cluster.apply(_sj_manifest("breaker", cluster.job_manifest("x", fail=True), schedule="*/2 * * * * *", **spec), ns)
    sj = cluster.wait_for(
        lambda: _when(
            bool(obj := _sj(cluster, ns, "breaker")) and _condition(obj, "Suspended").get("status") == "True", obj
        ),
        timeout=40,
        message="Suspended=True after two dead letters",
    )
    assert _condition(sj, "Suspended")["reason"] == "ConsecutiveDeadLetters"
    assert len(sj["status"]["deadLetters"]) >= 2
    assert sj["spec"].get("suspend") in (None, False), "the operator never edits spec"
    count = len(_jobs(cluster, ns, "breaker"))
    _wait_until(cluster, _now() + dt.timedelta(seconds=6))
    assert len(_jobs(cluster, ns, "breaker")) == count, "no new Job while the circuit is open"
    _wait_reasons(cluster, ns, "breaker", "DeadLettered", "CircuitOpen")


# History, TTL, printer columns, Events -------------------------------------------------------------------


def test_successful_jobs_history_limit(cluster: Cluster, ns: str) -> None:
    cluster.apply(
        _sj_manifest("pruned", cluster.job_manifest("x"), schedule="*/2 * * * * *", successfulJobsHistoryLimit=1),
        ns,
    )
    cluster.wait_for(
        lambda: _counter(cluster, ns, "pruned", "succeeded") >= 3, timeout=30, message="three successful runs"
    )
    _patch_spec(cluster, ns, "pruned", '{"spec":{"suspend":true}}')
    cluster.wait_for(
        lambda: _condition(_sj(cluster, ns, "pruned"), "Suspended").get("status") == "True",
        timeout=20,
        message="suspended",
    )

    def kept_alone() -> dict[str, Any] | None:
        """The one successful Job left, if it is the newest Job (one listing per poll)."""
        jobs = _jobs(cluster, ns, "pruned", live=True)
        finished = [
            job
            for job in jobs
            if any(
                c.get("type") == "Complete" and c.get("status") == "True"
                for c in job.get("status", {}).get("conditions") or []
            )
        ]
        newest = max(jobs, key=_nominal, default=None)
        return finished[0] if len(finished) == 1 and finished[0] is newest else None

    # The newest one is kept, once it has finished too (the run due as the suspend landed may still be running,
    # an older one then being the only finished one for a moment): a pruning that kept an older run never gets here.
    kept = cluster.wait_for(kept_alone, timeout=30, message="only the newest successful Job kept")
    assert _nominal(kept) == _parse(_status(cluster, ns, "pruned")["lastScheduleTime"]), "the last run's Job is kept"


def test_ttl_seconds_after_finished_deletes_a_one_off(cluster: Cluster, ns: str) -> None:
    cluster.apply(
        _sj_manifest("ephemeral", cluster.job_manifest("x"), runAt=_rfc(_at(1)), ttlSecondsAfterFinished=2), ns
    )
    cluster.wait_for(
        lambda: (
            _condition(_sj(cluster, ns, "ephemeral"), "Complete").get("status") == "True"
            or not _sj(cluster, ns, "ephemeral")
        ),
        timeout=30,
        message="the one-off completes",
    )
    cluster.wait_for(
        lambda: cluster.get_json("scheduledjob", "ephemeral", "-n", ns) is None,
        timeout=30,
        message="the ScheduledJob is deleted after ttlSecondsAfterFinished",
    )


def _table(cluster: Cluster, ns: str, *extra: str) -> dict[str, str]:
    lines = cluster.kubectl("get", "sj", "-n", ns, *extra).stdout.splitlines()
    header, row = lines[0], lines[1]
    starts = [match.start() for match in re.finditer(r"(?<=  )\S|^\S", header)]
    cells = {}
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        cells[header[start:end].strip()] = row[start:end].strip()
    return cells


def test_printer_columns_are_populated(cluster: Cluster, ns: str) -> None:
    busy = cluster.job_manifest("x", duration_seconds=5)
    cluster.apply(_sj_manifest("columns", busy, schedule="*/2 * * * * *", timeZone="Europe/Berlin"), ns)
    wanted = ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "LAST SUCCESS", "READY", "AGE"]

    def populated(*extra: str) -> dict[str, str] | None:
        cells = _table(cluster, ns, *extra)
        empty = [name for name in wanted if cells.get(name, "<none>") in ("", "<none>")]
        return None if empty else cells

    cells = cluster.wait_for(populated, timeout=40, message="every printer column populated")
    assert cells["SCHEDULE"] == "*/2 * * * * *"
    assert cells["TIMEZONE"] == "Europe/Berlin"
    assert cells["SUSPEND"] == "false"
    assert cells["READY"] == "True"
    wide = cluster.wait_for(lambda: populated("-o", "wide"), timeout=20, message="-o wide populated")
    assert wide.get("NEXT") not in (None, "", "<none>"), wide
    assert "MESSAGE" in wide
    cluster.kubectl("delete", "scheduledjob", "columns", "-n", ns, "--wait=false")


def test_retry_and_dead_letter_events_have_camel_case_reasons(cluster: Cluster, ns: str) -> None:
    spec = {"retry": {"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}}}
    cluster.apply(_sj_manifest("noisy", cluster.job_manifest("x", fail=True), runAt=_rfc(_at(1)), **spec), ns)
    cluster.apply(
        _sj_manifest(
            "skipper",
            cluster.job_manifest("x", duration_seconds=6),
            schedule="*/2 * * * * *",
            concurrencyPolicy="Forbid",
        ),
        ns,
    )
    cluster.wait_for(
        lambda: (
            {"SuccessfulCreate", "Retrying", "DeadLettered"} <= _reasons(cluster, ns, "noisy")
            and "RunSkipped" in _reasons(cluster, ns, "skipper")
        ),
        timeout=40,
        message="SuccessfulCreate, Retrying, DeadLettered and RunSkipped Events",
    )
    events = _events(cluster, ns)
    assert all(re.fullmatch(r"(?:[A-Z][a-z0-9]+)+", event["reason"]) for event in events), {
        event["reason"] for event in events
    }
    assert all(event.get("source", {}).get("component") or event.get("reportingComponent") for event in events)
    warnings = {event["reason"] for event in events if event["type"] == "Warning"}
    assert {"DeadLettered", "RunSkipped"} <= warnings
    # Repeats are one Event series whose count grows (DESIGN: Events aggregated like client-go's recorders).
    skipped = cluster.wait_for(
        lambda: _when(
            bool(found := [e for e in _events(cluster, ns, "skipper") if e["reason"] == "RunSkipped"])
            and int(found[0].get("count") or 1) >= 2,
            found,
        ),
        timeout=30,
        message="the RunSkipped Event's count at 2 or more",
    )
    assert len(skipped) == 1, [(e["metadata"]["name"], e.get("count")) for e in skipped]
    cluster.kubectl("delete", "scheduledjob", "skipper", "-n", ns, "--wait=false")


def test_operator_survived_the_module(operator: Operator) -> None:
    assert operator.alive() and operator.ready(), operator.log_tail()
    assert "Traceback" not in operator.log.read_text(errors="replace"), operator.log_tail()
