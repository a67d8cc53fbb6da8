"""The registry ``/metrics`` serves: Prometheus' conventions for the series it exposes.

prometheus_client adds a ``<name>_created`` sample (the creation time, a Unix timestamp, under a name that reads
like a count) to every counter, histogram and summary; its own switch (``disable_created_metrics``) is global
to the process. :class:`SeriesRegistry` drops those samples from its own collection unless asked
(``sundial run --metrics-created-series``).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

#: The metric types whose ``<name>_created`` sample prometheus_client adds.
_WITH_CREATED = frozenset({"counter", "histogram", "summary"})


class SeriesRegistry(CollectorRegistry):
    """A registry whose counters, histograms and summaries expose no ``<name>_created`` sample unless
    ``created_series``; prometheus_client's own switch (``disable_created_metrics``) is global to the process."""

    def __init__(self, *, created_series: bool = False) -> None:
        super().__init__()
        self.created_series = created_series

    def collect(self) -> Iterator[Metric]:
        for metric in super().collect():
            if not self.created_series and metric.type in _WITH_CREATED:
                created = f"{metric.name}_created"
                metric.samples = [sample for sample in metric.samples if sample.name != created]
            yield metric
