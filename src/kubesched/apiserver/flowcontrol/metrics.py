"""API Priority and Fairness's metrics with upstream's names, labels and help
(``apiserver/pkg/util/flowcontrol/metrics/metrics.go``, BETA): requests dispatched and rejected (by
reason: queue-full, time-out, concurrency-limit, cancelled), requests waiting and executing now, and
each level's nominal seats (here out of the server's 49, upstream's out of 600), read from the
dispatcher when scraped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from kubesched.apiserver.filters.fairness import Fairness
from kubesched.apiserver.flowcontrol.classify import FlowControl

PREFIX = "apiserver_flowcontrol_"
BETA = "[BETA] "  # component-base prefixes the help with the stability level
LEVEL_SCHEMA = ["priority_level", "flow_schema"]


class APFCollector:
    """The metrics of one API server's dispatcher and configuration."""

    def __init__(self, fairness: Fairness, flow_control: FlowControl) -> None:
        self.fairness = fairness
        self.flow_control = flow_control

    def collect(self) -> Iterator[Metric]:
        fair = self.fairness
        rejected = CounterMetricFamily(
            PREFIX + "rejected_requests",
            BETA + "Number of requests rejected by API Priority and Fairness subsystem",
            labels=[*LEVEL_SCHEMA, "reason"],
        )
        for why, n in sorted(fair.refused.items()):
            rejected.add_metric(list(why), n)
        yield rejected
        dispatched = CounterMetricFamily(
            PREFIX + "dispatched_requests",
            BETA + "Number of requests executed by API Priority and Fairness subsystem",
            labels=LEVEL_SCHEMA,
        )
        for pair, n in sorted(fair.dispatched.items()):
            dispatched.add_metric(list(pair), n)
        yield dispatched
        waiting: Counter[tuple[str, str]] = Counter()
        for pool in fair.pools.values():
            for flow, queue in pool.queues.items():
                waiting[(pool.name, flow.partition("/")[0])] += sum(1 for w in queue if not w.done())
        inqueue = GaugeMetricFamily(
            PREFIX + "current_inqueue_requests",
            BETA + "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            labels=LEVEL_SCHEMA,
        )
        for pair, n in sorted(waiting.items()):
            inqueue.add_metric(list(pair), n)
        yield inqueue
        executing = GaugeMetricFamily(
            PREFIX + "current_executing_requests",
            BETA + "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API "
            "Priority and Fairness subsystem",
            labels=LEVEL_SCHEMA,
        )
        for pair, n in sorted(fair.executing.items()):
            executing.add_metric(list(pair), n)
        yield executing
        seats = GaugeMetricFamily(
            PREFIX + "nominal_limit_seats",
            BETA + "Nominal number of execution seats configured for each priority level",
            labels=["priority_level"],
        )
        for name, level in sorted(self.flow_control.levels.items()):
            seats.add_metric([name], level.seats)
        yield seats


def registry(fairness: Fairness, flow_control: FlowControl) -> CollectorRegistry:
    """A registry of APF's metrics, for the server's /metrics."""
    out = CollectorRegistry(auto_describe=False)
    out.register(APFCollector(fairness, flow_control))
    return out
