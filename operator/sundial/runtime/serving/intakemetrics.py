"""The intake's metrics: the informers and the quarantine (:mod:`sundial.runtime.watch`, design §7.6)."""

from __future__ import annotations

import dataclasses

from prometheus_client import CollectorRegistry, Counter, Gauge


@dataclasses.dataclass(frozen=True, kw_only=True)
class IntakeMetrics:
    """The informers and the quarantine (:mod:`sundial.runtime.watch`, DESIGN §12.1)."""

    quarantined_total: Counter
    """``sundial_intake_quarantined_total`` by ``kind`` and ``reason``: objects (versions) that could not be read."""

    quarantined: Gauge
    """``sundial_intake_quarantined_objects`` by ``kind``: objects in quarantine now."""

    relists: Counter
    """``sundial_informer_relists_total`` by ``kind`` and ``reason``: listings after the first (410, a line that
    could not be decoded or was too long, an unexpected error)."""

    failures: Counter
    """``sundial_informer_failures_total`` by ``kind`` and ``reason``: failed LIST or WATCH requests and
    unexpected errors of an informer (each followed by a pause and a retry)."""

    @classmethod
    def create(cls, r: CollectorRegistry) -> IntakeMetrics:
        return cls(
            quarantined_total=Counter(
                "sundial_intake_quarantined",
                "Object versions the intake could not read and quarantined (kept as a stub; a ScheduledJob reports "
                "Ready=False, reason Quarantined), by kind and reason.",
                ["kind", "reason"],
                registry=r,
            ),
            quarantined=Gauge(
                "sundial_intake_quarantined_objects",
                "Objects in quarantine now, by kind.",
                ["kind"],
                registry=r,
            ),
            relists=Counter(
                "sundial_informer_relists",
                "Listings of an informer after its first (the watch could not go on), by kind and reason.",
                ["kind", "reason"],
                registry=r,
            ),
            failures=Counter(
                "sundial_informer_failures",
                "Failed LIST or WATCH requests and unexpected errors of an informer, by kind and reason.",
                ["kind", "reason"],
                registry=r,
            ),
        )

    def relisted(self, plural: str, reason: str) -> None:
        self.relists.labels(kind=plural, reason=reason).inc()

    def failed(self, plural: str, reason: str) -> None:
        self.failures.labels(kind=plural, reason=reason).inc()

    def count_quarantined(self, kind: str, reason: str) -> None:
        self.quarantined_total.labels(kind=kind, reason=reason).inc()

    def set_quarantined(self, kind: str, count: int) -> None:
        self.quarantined.labels(kind=kind).set(count)
