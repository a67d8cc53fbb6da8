"""Catch-up planning, start jitter and retry backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from sundial.schedule import (
    CatchUpOutcome,
    CatchUpPolicy,
    ScheduleError,
    backoff_delay,
    jitter_offset,
    plan_catch_up,
)

NOW = datetime(2027, 1, 1, 12, 0, tzinfo=UTC)


def hours_ago(*hours: float) -> list[datetime]:
    return [NOW - timedelta(hours=h) for h in hours]


class TestPlanCatchUp:
    @pytest.mark.parametrize(
        ("due", "window", "policy", "max_runs", "to_run", "missed"),
        [
            pytest.param([], None, CatchUpPolicy.LATEST, 10, [], [], id="nothing_due"),
            pytest.param(
                hours_ago(3, 2, 1),
                None,
                CatchUpPolicy.LATEST,
                10,
                hours_ago(1),
                hours_ago(3, 2),
                id="latest_runs_the_newest_and_misses_the_others",
            ),
            pytest.param(
                hours_ago(3, 2, 1),
                None,
                CatchUpPolicy.ALL,
                10,
                hours_ago(3, 2, 1),
                [],
                id="all_runs_everything_oldest_first",
            ),
            pytest.param(
                hours_ago(3, 2, 1),
                None,
                CatchUpPolicy.ALL,
                2,
                hours_ago(3, 2),
                hours_ago(1),
                id="all_caps_at_max_runs_and_misses_the_rest",
            ),
            pytest.param(
                hours_ago(3, 2, 0.5),
                timedelta(hours=1),
                CatchUpPolicy.ALL,
                10,
                hours_ago(0.5),
                hours_ago(3, 2),
                id="runs_older_than_the_window_are_missed",
            ),
            pytest.param(
                hours_ago(1),
                timedelta(hours=1),
                CatchUpPolicy.LATEST,
                10,
                hours_ago(1),
                [],
                id="a_run_exactly_window_old_still_runs",
            ),
            pytest.param(
                hours_ago(3, 2),
                timedelta(hours=1),
                CatchUpPolicy.LATEST,
                10,
                [],
                hours_ago(3, 2),
                id="everything_outside_the_window_runs_nothing",
            ),
            pytest.param(
                hours_ago(0),
                timedelta(0),
                CatchUpPolicy.LATEST,
                10,
                hours_ago(0),
                [],
                id="a_zero_window_still_runs_what_is_due_now",
            ),
            pytest.param(
                hours_ago(2, 1),
                None,
                CatchUpPolicy.ALL,
                0,
                [],
                hours_ago(2, 1),
                id="all_with_zero_max_runs_misses_everything",
            ),
        ],
    )
    def test_partitions_due_runs(
        self,
        due: list[datetime],
        window: timedelta | None,
        policy: CatchUpPolicy,
        max_runs: int,
        to_run: list[datetime],
        missed: list[datetime],
    ) -> None:
        plan = plan_catch_up(due, now=NOW, window=window, policy=policy, max_runs=max_runs)
        assert plan == CatchUpOutcome(to_run=tuple(to_run), missed=tuple(missed), missed_uncounted=False)

    def test_older_unlisted_runs_are_reported_as_uncounted(self) -> None:
        plan = plan_catch_up(
            hours_ago(1), now=NOW, window=None, policy=CatchUpPolicy.LATEST, max_runs=1, older_unlisted=True
        )
        assert plan.missed_uncounted

    def test_accepts_any_aware_zone_and_returns_utc(self) -> None:
        plus_one = timezone(timedelta(hours=1))
        plan = plan_catch_up(
            [datetime(2027, 1, 1, 12, 0, tzinfo=plus_one)],
            now=NOW.astimezone(plus_one),
            window=None,
            policy=CatchUpPolicy.ALL,
            max_runs=1,
        )
        assert plan.to_run == (datetime(2027, 1, 1, 11, 0, tzinfo=UTC),)
        assert plan.to_run[0].tzinfo is UTC

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            pytest.param({"due": hours_ago(1, 2)}, "due", id="not_ascending"),
            pytest.param({"due": hours_ago(1, 1)}, "due", id="duplicates"),
            pytest.param({"due": hours_ago(-1)}, "due", id="not_due_yet"),
            pytest.param({"due": [datetime(2027, 1, 1)]}, "due", id="naive_due"),
            pytest.param({"now": datetime(2027, 1, 1)}, "now", id="naive_now"),
            pytest.param({"window": timedelta(seconds=-1)}, "catchUp.window", id="negative_window"),
            pytest.param({"max_runs": -1}, "catchUp.maxRuns", id="negative_max_runs"),
        ],
    )
    def test_invalid_input_names_the_field(self, kwargs: dict[str, object], field: str) -> None:
        arguments: dict[str, object] = {
            "due": [],
            "now": NOW,
            "window": None,
            "policy": CatchUpPolicy.ALL,
            "max_runs": 1,
        }
        arguments.update(kwargs)
        with pytest.raises(ScheduleError) as caught:
            plan_catch_up(**arguments)  # type: ignore[arg-type]
        assert caught.value.field == field


class TestJitterOffset:
    def test_is_zero_without_jitter(self) -> None:
        assert jitter_offset(uid="u", nominal=NOW, jitter=timedelta(0)) == timedelta(0)

    def test_is_the_same_for_the_same_run_in_any_zone(self) -> None:
        jitter = timedelta(seconds=30)
        elsewhere = NOW.astimezone(timezone(timedelta(hours=-7)))
        assert jitter_offset(uid="u", nominal=NOW, jitter=jitter) == jitter_offset(
            uid="u", nominal=elsewhere, jitter=jitter
        )

    def test_differs_between_objects_and_runs(self) -> None:
        jitter = timedelta(minutes=10)
        offsets = {
            jitter_offset(uid=f"uid-{n}", nominal=NOW + timedelta(minutes=m), jitter=jitter)
            for n in range(10)
            for m in range(10)
        }
        assert len(offsets) > 90

    def test_stays_below_the_jitter(self) -> None:
        for n in range(200):
            offset = jitter_offset(uid=f"{n}", nominal=NOW, jitter=timedelta(microseconds=3))
            assert timedelta(0) <= offset < timedelta(microseconds=3)

    def test_rejects_a_negative_jitter(self) -> None:
        with pytest.raises(ScheduleError, match=r"^jitter: "):
            jitter_offset(uid="u", nominal=NOW, jitter=timedelta(seconds=-1))

    def test_rejects_a_naive_nominal_time(self) -> None:
        with pytest.raises(ScheduleError):
            jitter_offset(uid="u", nominal=datetime(2027, 1, 1), jitter=timedelta(seconds=1))


class TestBackoffDelay:
    def delay(self, attempts: int, *, factor: float = 2.0, seed: str = "run-key") -> timedelta:
        return backoff_delay(
            failed_attempts=attempts,
            initial=timedelta(seconds=30),
            factor=factor,
            maximum=timedelta(hours=1),
            seed=seed,
        )

    @pytest.mark.parametrize(
        ("attempts", "base"),
        [(1, 30), (2, 60), (3, 120), (4, 240), (7, 1920), (8, 3600), (100, 3600), (10_000, 3600)],
    )
    def test_grows_exponentially_with_up_to_ten_percent_jitter_below_the_cap(self, attempts: int, base: int) -> None:
        delay = self.delay(attempts)
        assert timedelta(seconds=base) <= delay <= min(timedelta(seconds=base * 1.1), timedelta(hours=1))

    def test_no_failed_attempts_means_no_delay(self) -> None:
        assert self.delay(0) == timedelta(0)

    def test_is_deterministic_per_seed_and_differs_between_seeds(self) -> None:
        assert self.delay(3, seed="a") == self.delay(3, seed="a")
        assert len({self.delay(3, seed=f"seed-{n}") for n in range(20)}) > 10

    def test_a_factor_of_one_is_constant(self) -> None:
        assert self.delay(1, factor=1) == self.delay(50, factor=1)

    def test_an_infinite_factor_is_capped(self) -> None:
        assert self.delay(5, factor=float("inf")) == timedelta(hours=1)

    @pytest.mark.parametrize(
        ("kwargs", "field"),
        [
            pytest.param({"failed_attempts": -1}, "retry.attempts", id="negative_attempts"),
            pytest.param({"initial": timedelta(seconds=-1)}, "retry.backoff.initial", id="negative_initial"),
            pytest.param({"maximum": timedelta(seconds=-1)}, "retry.backoff.max", id="negative_maximum"),
            pytest.param({"factor": 0.5}, "retry.backoff.factor", id="shrinking_factor"),
            pytest.param({"factor": float("nan")}, "retry.backoff.factor", id="nan_factor"),
        ],
    )
    def test_invalid_input_names_the_field(self, kwargs: dict[str, object], field: str) -> None:
        arguments: dict[str, object] = {
            "failed_attempts": 1,
            "initial": timedelta(seconds=1),
            "factor": 2.0,
            "maximum": timedelta(seconds=10),
            "seed": "s",
        }
        arguments.update(kwargs)
        with pytest.raises(ScheduleError) as caught:
            backoff_delay(**arguments)  # type: ignore[arg-type]
        assert caught.value.field == field
