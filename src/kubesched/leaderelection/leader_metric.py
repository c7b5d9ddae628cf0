"""Prometheus metrics kubesched exports (prometheus_client, its own registry).

So far client-go's leader election gauge (``tools/leaderelection/metrics.go``):
``leader_election_master_status{name}`` is 1 while this replica holds the lease named ``name``
and 0 otherwise.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

REGISTRY = CollectorRegistry(auto_describe=True)
# what component-base's legacy registry handler answers: the Prometheus text format 0.0.4
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
    "'name' is the string used to identify the lease. Please make sure to group by name.",
    ["name"],
    registry=REGISTRY,
)
