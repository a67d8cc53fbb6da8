"""Properties that hold for every schedule, zone, policy and instant (Hypothesis)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from sundial.schedule import (
    CatchUpPolicy,
    RepeatedTime,
    SkippedTime,
    backoff_delay,
    build_timetable,
    jitter_offset,
    plan_catch_up,
)

ZONES = [
    "UTC",
    "Europe/Berlin",
    "Europe/London",
    "America/New_York",
    "America/Santiago",
    "America/Havana",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "Pacific/Apia",
]

# Instants around several years, with extra weight near the 2027 DST changes of the zones above.
instants = st.one_of(
    st.datetimes(min_value=datetime(1995, 1, 1), max_value=datetime(2045, 1, 1), timezones=st.just(UTC)),
    st.sampled_from(
        [
            datetime(2027, 3, 28, 0, 0, tzinfo=UTC),
            datetime(2027, 10, 30, 23, 30, tzinfo=UTC),
            datetime(2027, 3, 14, 6, 0, tzinfo=UTC),
            datetime(2027, 11, 7, 4, 45, tzinfo=UTC),
            datetime(2027, 4, 3, 14, 0, tzinfo=UTC),
            datetime(2027, 10, 2, 15, 0, tzinfo=UTC),
            datetime(2011, 12, 29, 9, 0, tzinfo=UTC),  # Apia skipped 2011-12-30 entirely
        ]
    ).flatmap(lambda base: st.integers(-7200, 7200).map(lambda s: base + timedelta(seconds=s))),
)


def _field(low: int, high: int, *, allow_h: bool = True) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    items = st.one_of(
        st.just("*"),
        value.map(str),
        st.tuples(value, value).map(lambda ab: f"{min(ab)}-{max(ab)}"),
        st.integers(1, min(high - low + 1, 30)).map(lambda n: f"*/{n}"),
        st.tuples(value, st.integers(1, min(high - low + 1, 10))).map(lambda ab: f"{ab[0]}/{ab[1]}"),
        *([st.just("H"), st.integers(1, min(high - low + 1, 20)).map(lambda n: f"H/{n}")] if allow_h else []),
    )
    return st.lists(items, min_size=1, max_size=3).map(",".join)


@st.composite
def cron_texts(draw: st.DrawFn) -> str:
    fields = [
        draw(_field(0, 59)),
        draw(_field(0, 23)),
        draw(st.one_of(st.just("*"), _field(1, 28))),
        draw(st.one_of(st.just("*"), _field(1, 12))),
        draw(st.one_of(st.just("*"), _field(0, 7, allow_h=False))),
    ]
    if draw(st.booleans()):
        fields.insert(0, draw(st.one_of(st.just("0"), _field(0, 59))))
    return " ".join(fields)


@settings(max_examples=300, deadline=None)
@given(
    text=cron_texts(),
    zone=st.sampled_from(ZONES),
    after=instants,
    skipped=st.sampled_from(list(SkippedTime)),
    repeated=st.sampled_from(list(RepeatedTime)),
    uid=st.text(max_size=8),
)
def test_times_strictly_increase_and_never_repeat(
    text: str, zone: str, after: datetime, skipped: SkippedTime, repeated: RepeatedTime, uid: str
) -> None:
    timetable = build_timetable(text, time_zone=zone, uid=uid, skipped=skipped, repeated=repeated)
    previous = after
    for count, instant in enumerate(timetable.iter_after(after)):
        assert instant > previous
        assert instant.tzinfo is UTC
        previous = instant
        if count == 40:
            break


@settings(max_examples=300, deadline=None)
@given(text=cron_texts(), zone=st.sampled_from(ZONES), after=instants)
def test_next_after_is_later_and_is_the_first_of_iter_after(text: str, zone: str, after: datetime) -> None:
    timetable = build_timetable(text, time_zone=zone)
    first = timetable.next_after(after)
    assert first is not None  # generated day fields always match within a few years
    assert first > after
    # No nominal time is skipped over: restarting just before `first` finds `first` again.
    assert timetable.next_after(first - timedelta(microseconds=1)) == first


@settings(max_examples=100, deadline=None)
@given(text=cron_texts(), zone=st.sampled_from(ZONES), after=instants, limit=st.integers(0, 20))
def test_between_and_latest_between_agree_with_iteration(text: str, zone: str, after: datetime, limit: int) -> None:
    timetable = build_timetable(text, time_zone=zone)
    until = after + timedelta(minutes=90)
    oldest, more = timetable.between(after, until, limit=limit)
    newest, older = timetable.latest_between(after, until, limit=limit)
    everything, _ = timetable.between(after, until, limit=100_000)
    assert oldest == everything[:limit]
    assert newest == (everything[max(0, len(everything) - limit) :] if limit else [])
    assert more is older is (len(everything) > limit)


@settings(max_examples=300)
@given(
    uid=st.text(max_size=40),
    nominal=instants,
    jitter=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=2)),
)
def test_jitter_is_deterministic_and_within_range(uid: str, nominal: datetime, jitter: timedelta) -> None:
    offset = jitter_offset(uid=uid, nominal=nominal, jitter=jitter)
    assert offset == jitter_offset(uid=uid, nominal=nominal, jitter=jitter)
    if jitter:
        assert timedelta(0) <= offset < jitter
    else:
        assert offset == timedelta(0)


@settings(max_examples=300)
@given(
    attempts=st.integers(0, 200),
    initial=st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=2)),
    factor=st.floats(min_value=1.0, max_value=10.0),
    maximum=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=1)),
    seed=st.text(max_size=20),
)
def test_backoff_never_decreases_and_never_exceeds_the_maximum(
    attempts: int, initial: timedelta, factor: float, maximum: timedelta, seed: str
) -> None:
    def delay(n: int) -> timedelta:
        return backoff_delay(failed_attempts=n, initial=initial, factor=factor, maximum=maximum, seed=seed)

    assert delay(attempts) <= delay(attempts + 1) <= maximum


@settings(max_examples=300)
@given(
    ages=st.lists(st.integers(0, 10_000), unique=True, max_size=30),
    window=st.one_of(st.none(), st.integers(0, 10_000).map(lambda s: timedelta(seconds=s))),
    policy=st.sampled_from(list(CatchUpPolicy)),
    max_runs=st.integers(0, 12),
)
def test_catch_up_partitions_the_due_runs(
    ages: list[int], window: timedelta | None, policy: CatchUpPolicy, max_runs: int
) -> None:
    now = datetime(2027, 1, 1, tzinfo=UTC)
    due = sorted(now - timedelta(seconds=age) for age in ages)
    plan = plan_catch_up(due, now=now, window=window, policy=policy, max_runs=max_runs)
    assert sorted(plan.to_run + plan.missed) == due
    assert not set(plan.to_run) & set(plan.missed)
    assert list(plan.to_run) == sorted(plan.to_run)
    assert len(plan.to_run) <= (1 if policy is CatchUpPolicy.LATEST else max_runs)
    if window is not None:
        assert all(now - t <= window for t in plan.to_run)
        assert all(t in plan.missed for t in due if now - t > window)
