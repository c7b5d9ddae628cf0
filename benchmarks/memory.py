"""The scheduler's own memory, apart from the embedded store's copies of the objects (issue 16's
targets: at most 2 KiB per placed pod and 4 KiB per node, flat in the number of attempts).

The store is filled first; then tracemalloc counts what the scheduler allocates and keeps while it
builds its cache from the watch (nodes, then bound pods) and while it schedules more pods. Prints one
JSON line: bytes per node, per pod placed at start, per pod the scheduler placed, and after many failed
attempts (unschedulable pods retried), so growth with attempts shows.

    python benchmarks/memory.py --nodes 5000 --pods 20000
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc
from typing import Any

from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.scheduler.config import default_config
from kubesched.scheduler.scheduler import Scheduler

STORE_DIR = "/kubesched/cluster/"


def node(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
        "status": {"allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"}},
    }


def pod(name: str, node_name: str | None = None, cpu: str = "100m") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}]
    }
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def traced(fn: Any, sched: Scheduler) -> tuple[int, int]:
    """Bytes allocated by ``fn`` and still alive after it (a collection first), split into the
    scheduler's and the store's: an allocation made with a store frame on its stack is the store's."""
    sched.metrics.fold()
    gc.collect()
    before = tracemalloc.take_snapshot()
    fn()
    sched.metrics.fold()  # histograms buffer up to FOLD_EVERY observations: bounded, not growth
    gc.collect()
    after = tracemalloc.take_snapshot()
    own = store = 0
    for stat in after.compare_to(before, "traceback"):
        if any(STORE_DIR in frame.filename for frame in stat.traceback):
            store += stat.size_diff
        else:
            own += stat.size_diff
    return own, store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=20000)
    parser.add_argument("--failing", type=int, default=500, help="unschedulable pods retried to count attempts")
    parser.add_argument("--rounds", type=int, default=4, help="retry rounds of the unschedulable pods")
    args = parser.parse_args()
    # no watch history: the store's copies of past versions would be counted where they were made
    # the embedded cluster as the throughput benchmarks build it (bound pods left bound)
    cluster = EmbeddedCluster(config=default_config(), loops=False, start=False, bound_pods_run=False, history=1)
    store = cluster.store
    for i in range(args.nodes):
        store.create("Node", node(i))
    tracemalloc.start(64)
    sched = cluster.sched
    per_node, _ = traced(cluster.start, sched)

    # the manifests are made outside the measures: the store keeps them
    bound = [pod(f"bound-{i}", f"node-{i % args.nodes}") for i in range(args.pods)]

    def place_bound() -> None:
        for manifest in bound:
            store.create("Pod", manifest)
        sched.process_events()

    per_bound, _ = traced(place_bound, sched)
    scheduled = args.pods // 4
    fresh = [pod(f"new-{i}") for i in range(scheduled)]
    bound.clear()

    def schedule() -> None:
        for manifest in fresh:
            store.create("Pod", manifest)
        drain()

    def drain() -> None:
        sched.drain()

    per_scheduled, _ = traced(schedule, sched)

    def retry_round() -> None:
        drain()
        # the API server's event TTL (kube-apiserver --event-ttl): events are the store's, not the scheduler's
        for event in store.list("Event")[0]:
            store.delete("Event", event["metadata"]["namespace"], event["metadata"]["name"])
        store.clock.advance_to(store.clock.now() + 400)  # past the longest backoff and the 5 min leftover flush
        sched.flush(unschedulable=True)

    huge = [pod(f"huge-{i}", cpu="64") for i in range(args.failing)]
    fresh.clear()

    def fail_first() -> None:
        for manifest in huge:
            store.create("Pod", manifest)
        retry_round()

    traced(fail_first, sched)
    attempts_before = sched.stats.attempts

    def fail_again() -> None:
        for _ in range(args.rounds):
            retry_round()

    growth, _ = traced(fail_again, sched)
    attempts = sched.stats.attempts - attempts_before
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": args.pods,
                "bytes_per_node": round(per_node / args.nodes),
                "bytes_per_bound_pod": round(per_bound / args.pods),
                "bytes_per_scheduled_pod": round(per_scheduled / scheduled),
                "failed_attempts": attempts,
                "bytes_per_failed_attempt": round(growth / max(1, attempts)),
            }
        )
    )


if __name__ == "__main__":
    main()
