"""The service's metrics in Prometheus text format (``GET /metrics``), with ``prometheus_client``.

Each service has its own registry (two services in one process, e.g. in tests, never share counters). Counters count
since the process started, as Prometheus expects; the gauges (open events, model version, privacy spent) are read
from the service when scraped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ServiceMetrics:
    """The counters, gauges and latency histogram of one service."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(
        self,
        open_events: Callable[[], int],
        model_version: Callable[[], int],
        privacy_spent: Callable[[], Mapping[str, float]],
        commits: Callable[[], tuple[int, int]] = lambda: (0, 0),
    ) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        prefix = "privbandits_serve_"
        self.decisions = Counter(prefix + "decisions", "New decisions made (repeats not counted)", registry=registry)
        self.repeats = Counter(prefix + "decision_repeats", "Decides answered from the store", registry=registry)
        self.rewards = Counter(prefix + "rewards", "Rewards absorbed", registry=registry)
        self.duplicates = Counter(prefix + "reward_duplicates", "Rewards sent again (idempotent)", registry=registry)
        self.puts = Counter(prefix + "puts", "Feature rows put by the application (new)", registry=registry)
        self.put_duplicates = Counter(prefix + "put_duplicates", "The same rows put again", registry=registry)
        self.expired = Counter(prefix + "events_expired", "Events closed by reward_timeout_s", registry=registry)
        self.refused = Counter(prefix + "refused", "Requests refused, by status", ["status"], registry=registry)
        self.latency = Histogram(
            prefix + "request_seconds", "Request latency by endpoint", ["endpoint"],
            buckets=LATENCY_BUCKETS, registry=registry,
        )  # fmt: skip
        Gauge(prefix + "open_events", "Decided events awaiting a reward", registry=registry).set_function(
            lambda: float(open_events())
        )
        Gauge(prefix + "model_version", "The learner's model version", registry=registry).set_function(
            lambda: float(model_version())
        )
        Gauge(prefix + "commit_groups", "Store transactions committed (each for a group of requests)",
              registry=registry).set_function(lambda: float(commits()[0]))  # fmt: skip
        Gauge(prefix + "grouped_calls", "Requests run inside those transactions", registry=registry).set_function(
            lambda: float(commits()[1])
        )
        spent = Gauge(prefix + "privacy_spent", "Privacy spent so far, by parameter", ["parameter"], registry=registry)
        self._spent, self._privacy_spent = spent, privacy_spent

    def render(self) -> bytes:
        """The exposition text (privacy spent refreshed first)."""
        for parameter, value in self._privacy_spent().items():
            self._spent.labels(parameter=parameter).set(value)
        return generate_latest(self.registry)
