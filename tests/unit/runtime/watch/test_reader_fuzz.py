"""The readers fuzzed over the object schema (DESIGN §12.1): whatever the API server may serve of a Job or a
ScheduledJob, reading it never raises out of the intake, what the store keeps is always plannable, and one
object never changes what is kept of another.

The Job strategy follows ``batch/v1`` (typed: the API server validates every field's type, so values vary, not
shapes): any string in the annotations Sundial reads, timestamps anywhere in (and beyond) what a datetime holds,
conditions with any strings. The ScheduledJob strategy follows the CRD, whose ``jobTemplate.metadata`` keeps
unknown fields: any JSON there, nested up to the depths that broke the store, and wrong types wherever the
schema is loose."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.runtime.watch.feeds import Feed

from sundial.model import ScheduledJob, names
from sundial.runtime.watch import jobs

YEARS = st.integers(min_value=0, max_value=10_500).map(lambda y: f"{y:04d}")
TIMESTAMPS = st.one_of(
    st.builds(
        lambda year, rest, offset: f"{year}-{rest}{offset}",
        YEARS,
        st.sampled_from(["01-01T00:00:00", "12-31T23:59:59", "02-30T12:00:00", "13-01T00:00:00", "06-15T25:61:61"]),
        st.sampled_from(["Z", "+01:00", "-01:00", "+14:00", "-23:59", "+99:99", ""]),
    ),
    st.text(max_size=40),
)
TEXT = st.text(max_size=30)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
    TIMESTAMPS,
)
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3))


def deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"x": value}
    return value


@st.composite
def job_bodies(draw: st.DrawFn) -> dict[str, Any]:
    annotations = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    names.SCHEDULED_TIME_ANNOTATION,
                    names.ATTEMPT_ANNOTATION,
                    names.IDEMPOTENCY_KEY_ANNOTATION,
                    names.FENCING_TOKEN_ANNOTATION,
                    names.TRIGGER_ANNOTATION,
                ]
            ),
            st.one_of(TIMESTAMPS, TEXT, st.integers().map(str)),
        )
    )
    condition = st.fixed_dictionaries(
        {"type": st.sampled_from(["Complete", "Failed", "Suspended", "x"]), "status": st.sampled_from(["True", "x"])},
        optional={"reason": TEXT, "message": TEXT, "lastTransitionTime": TIMESTAMPS},
    )
    status = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "conditions": st.lists(condition, max_size=3),
                "completionTime": TIMESTAMPS,
                "startTime": TIMESTAMPS,
            },
        )
    )
    owners = draw(st.lists(st.fixed_dictionaries({"uid": TEXT}, optional={"controller": st.booleans()}), max_size=2))
    return {
        "metadata": {
            "name": draw(TEXT) or "j",
            "namespace": "team-a",
            "uid": draw(TEXT),
            "resourceVersion": draw(st.integers(min_value=1).map(str)),
            "creationTimestamp": draw(TIMESTAMPS),
            "labels": {names.SCHEDULED_JOB_LABEL: draw(st.sampled_from(["nightly", "other", "a" * 63]))}
            | draw(st.dictionaries(TEXT, TEXT, max_size=2)),
            "annotations": annotations,
            "ownerReferences": owners,
        },
        "status": status,
    }


@st.composite
def scheduled_job_bodies(draw: st.DrawFn) -> dict[str, Any]:
    template_metadata = draw(st.one_of(JSON, st.integers(min_value=200, max_value=400).map(deep)))
    spec = draw(
        st.fixed_dictionaries(
            {"schedule": st.one_of(st.just("* * * * *"), TEXT)},
            optional={
                "timeZone": TEXT,
                "runAt": TIMESTAMPS,
                "startTime": TIMESTAMPS,
                "endTime": TIMESTAMPS,
                "priority": st.integers(min_value=-(2**70), max_value=2**70),
                "calendarRefs": st.lists(st.one_of(TEXT, LEAVES), max_size=3),
                "exclude": JSON,
            },
        )
    )
    spec["jobTemplate"] = {"metadata": template_metadata, "spec": {"template": {"spec": {"containers": []}}}}
    return {
        "metadata": {
            "name": "nightly",
            "namespace": "team-a",
            "uid": draw(TEXT),
            "resourceVersion": draw(st.integers(min_value=2).map(str)),
            "generation": draw(st.integers(min_value=0, max_value=2**62)),
            "creationTimestamp": draw(TIMESTAMPS),
            "annotations": draw(st.dictionaries(st.sampled_from(list(names.TOKEN_ANNOTATIONS)), TEXT)),
        },
        "spec": spec,
        "status": draw(st.one_of(st.just({}), st.dictionaries(TEXT, JSON, max_size=3))),
    }


HEALTHY = {
    "metadata": {"name": "healthy", "namespace": "team-a", "uid": "h", "resourceVersion": "1"},
    "spec": {"schedule": "* * * * *"},
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_bodies())
def test_observing_any_job_the_api_server_may_serve_never_raises(body: dict[str, Any]) -> None:
    seen = jobs.observe(body)
    assert seen.name == body["metadata"]["name"]
    jobs.observe(body, deleted=True)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scheduled_job_bodies(), job_bodies())
def test_the_intake_keeps_what_it_can_plan_and_never_touches_another_object(
    scheduled: dict[str, Any], job: dict[str, Any]
) -> None:
    feed = Feed()
    feed.scheduled_job(None, HEALTHY)
    healthy = feed.store.scheduled_job(("team-a", "healthy"))
    feed.scheduled_job(None, scheduled)  # never raises out: read, or quarantined
    feed.job(None, job)
    feed.calendar(None, {"metadata": scheduled["metadata"], "spec": scheduled["spec"].get("exclude")})
    kept = feed.store.scheduled_job(("team-a", "nightly"))
    assert kept is not None, "kept whole or as a stub"
    ScheduledJob.from_dict(kept)  # whatever is kept can be planned from
    assert feed.store.scheduled_job(("team-a", "healthy")) == healthy
    feed.store.observed_jobs(("team-a", "nightly"))
