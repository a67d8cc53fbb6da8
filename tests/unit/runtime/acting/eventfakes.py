"""Fakes shared by the Event tests: a clock that moves only when told, an Events API that records calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sundial import model
from sundial.kube import requests, results
from sundial.runtime.acting.sender import EventRecorder
from sundial.runtime.serving.metrics import Metrics

T0 = datetime(2026, 3, 1, 2, 30, tzinfo=UTC)
INTERVAL = 60.0


def meta(name: str = "nightly", uid: str | None = None) -> model.ObjectMeta:
    return model.ObjectMeta(name=name, namespace="team-a", uid=uid or f"uid-{name}", resource_version="7")


class Clock:
    def __init__(self) -> None:
        self.seconds = 1000.0
        self.wall = T0

    def monotonic(self) -> float:
        return self.seconds

    def now(self) -> datetime:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.seconds += seconds
        self.wall += timedelta(seconds=seconds)


@dataclass
class Call:
    verb: str
    reason_or_name: str
    count: int
    message: str
    first: datetime | None = None
    last: datetime | None = None


def send_guard() -> None:
    """What the real requester does right before a request goes out."""
    guard = requests.SEND_GUARD.get()
    if guard is not None:
        guard()


@dataclass
class FakeApi:
    calls: list[Call] = field(default_factory=list)
    create_errors: list[BaseException] = field(default_factory=list)
    patch_results: list[results.PatchResult | BaseException] = field(default_factory=list)
    created: int = 0
    tokens: list[str] = field(default_factory=list)
    """The fencing token of every create and PATCH, in order."""

    async def create_event(
        self,
        *,
        involved: model.ObjectMeta,
        type_: str,
        reason: str,
        message: str,
        first: datetime,
        last: datetime,
        count: int,
        instance: str,
        fencing_token: str = "",
    ) -> str:
        assert instance == "replica-1"
        send_guard()
        self.tokens.append(fencing_token)
        self.calls.append(Call("create", reason, count, message, first, last))
        if self.create_errors:
            raise self.create_errors.pop(0)
        self.created += 1
        return f"{involved.name}.{self.created}"

    async def patch_event(
        self, *, namespace: str, name: str, count: int, last_timestamp: datetime, message: str, fencing_token: str = ""
    ) -> results.PatchResult:
        send_guard()
        self.tokens.append(fencing_token)
        self.calls.append(Call("patch", name, count, message, last=last_timestamp))
        if self.patch_results:
            result = self.patch_results.pop(0)
            if isinstance(result, BaseException):
                raise result
            return result
        return results.Done()


def recorder(api: Any, clock: Clock, metrics: Metrics | None = None, **kwargs: Any) -> EventRecorder:
    return EventRecorder(
        api=api,
        metrics=metrics or Metrics(),
        identity="replica-1",
        series_interval=INTERVAL,
        clock=clock.now,
        monotonic=clock.monotonic,
        **kwargs,
    )


def counted(metrics: Metrics, result: str) -> float:
    return metrics.registry.get_sample_value("sundial_events_total", {"result": result}) or 0.0
