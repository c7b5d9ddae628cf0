"""scheduler_perf's DRA workloads (``test/integration/scheduler_perf/dra/performance-config.yaml``),
in process on the embedded cluster with the resourceclaim controller.

    python benchmarks/scheduler_perf_dra.py SchedulingWithResourceClaimTemplate
    python benchmarks/scheduler_perf_dra.py SteadyStateClusterResourceClaimTemplate --claims half

Shapes follow upstream's templates: nodes ``scheduler-perf-dra-<i>`` each with a ResourceSlice of
``maxClaimsPerNode`` devices of driver ``test-driver.cdi.k8s.io`` (``createResourceDriver``),
the DeviceClass ``test-class`` selecting that driver, a ResourceClaimTemplate asking for one
device of that class, and pods with one claim from it.

* SchedulingWithResourceClaimTemplate/5000pods_500nodes: 500 nodes × 10 devices, 2,500 pods
  scheduled unmeasured, 2,500 measured (upstream v1.37.2's floor 56 pods/s).
* SteadyStateClusterResourceClaimTemplate/{empty,half,full}_500nodes (upstream v1.37.2 runs them as
  SchedulingWithResourceClaimTemplate/{empty,half,full}_500nodes): 0, 2,500 or 4,990 claims
  allocated up front; then batches of 10 pods are created, scheduled and deleted for
  ``--duration`` seconds of wall time (floors 64, 60, 60 pods/s).

The last line printed is JSON: workload, nodes, pods, seconds, pods_per_second, peak_rss_mib.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

from kubesched.app import gc_settings
from kubesched.client import InProcessClient
from kubesched.client.objects import StoreObjects
from kubesched.clock import VirtualClock
from kubesched.cluster import admission
from kubesched.cluster.store import Store
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.scheduler.config import default_config
from kubesched.scheduler.scheduler import Scheduler

DRIVER = "test-driver.cdi.k8s.io"
# dra/performance-config.yaml's thresholds (tests/test_benchmark_floors.py keeps them upstream's)
FLOORS = {
    ("SchedulingWithResourceClaimTemplate", "full"): 56,
    ("SteadyStateClusterResourceClaimTemplate", "empty"): 64,
    ("SteadyStateClusterResourceClaimTemplate", "half"): 60,
    ("SteadyStateClusterResourceClaimTemplate", "full"): 60,
}


def node(i: int) -> dict[str, Any]:
    name = f"scheduler-perf-dra-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def resource_slice(i: int, devices: int) -> dict[str, Any]:
    name = f"scheduler-perf-dra-{i}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"device-{d}"} for d in range(devices)],
        },
    }


DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "test-class"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def template(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}}},
    }


def claim(ns: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": f"test-claim-{i}", "namespace": ns},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class"}}]}},
    }


def pod(ns: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"test-dra-{i}", "namespace": ns},
        "spec": {
            "resourceClaims": [{"name": "resource", "resourceClaimTemplateName": "test-claim-template"}],
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"claims": [{"name": "resource"}]},
                }
            ],
        },
    }


class Cluster:
    def __init__(self, nodes: int, devices: int) -> None:
        self.store = Store(VirtualClock())
        admission.install(self.store)
        for ns in ("init", "test"):
            self.store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for i in range(nodes):
            self.store.create("Node", node(i))
            self.store.create("ResourceSlice", resource_slice(i, devices))
        self.store.create("DeviceClass", DEVICE_CLASS)
        self.claims = ResourceClaimController(StoreObjects(self.store))
        clock = self.store.clock
        assert isinstance(clock, VirtualClock)
        self.clock = clock
        self.sched = Scheduler(InProcessClient(self.store), default_config(), clock)
        self.sched.start()

    def drain(self) -> None:
        """Schedule until quiescent, letting virtual time pass for backoffs."""
        while True:
            while True:
                self.claims.sync()
                self.sched.process_events()
                if not self.sched.schedule_one():
                    self.claims.sync()
                    self.sched.process_events()
                    if not self.sched.queue.has_active():
                        break
            nxt = [t for t in (self.clock.next_timer(), self.sched.queue.next_backoff_expiry()) if t is not None]
            if not nxt:
                return
            self.clock.advance_to(max(min(nxt), self.clock.now()))
            self.sched.process_events()
            self.sched.queue.flush_backoff_completed()

    def bound(self, ns: str) -> int:
        return sum(1 for p in self.store.list("Pod", ns)[0] if (p.get("spec") or {}).get("nodeName"))


def scheduling_with_template(nodes: int, devices: int, init: int, measured: int) -> dict[str, Any]:
    c = Cluster(nodes, devices)
    c.store.create("ResourceClaimTemplate", template("init"))
    for i in range(init):
        c.store.create("Pod", pod("init", i))
    c.drain()
    c.store.create("ResourceClaimTemplate", template("test"))
    for i in range(measured):
        c.store.create("Pod", pod("test", i))
    started = time.perf_counter()
    c.drain()
    seconds = time.perf_counter() - started
    bound = c.bound("test")
    if bound != measured:
        print(f"warning: bound {bound} of {measured} measured pods", file=sys.stderr)
    return {"pods": measured, "seconds": round(seconds, 3), "pods_per_second": round(bound / seconds, 1)}


def steady_state(nodes: int, devices: int, claims: int, duration: float) -> dict[str, Any]:
    """``allocResourceClaims`` for ``claims`` claims (allocated as the scheduler would, one device
    each, node after node), then batches of 10 pods created, scheduled and deleted."""
    c = Cluster(nodes, devices)
    for i in range(claims):
        c.store.create("ResourceClaim", claim("init", i))
        n, d = divmod(i, devices)
        result = {"request": "req-0", "driver": DRIVER, "pool": f"scheduler-perf-dra-{n}", "device": f"device-{d}"}
        name = f"scheduler-perf-dra-{n}"
        selector = {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]
        }

        def allocate(o: dict[str, Any], result: dict = result, selector: dict = selector) -> dict[str, Any]:
            return {**o, "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": selector}}}

        c.store.mutate("ResourceClaim", "init", f"test-claim-{i}", allocate)
    c.store.create("ResourceClaimTemplate", template("test"))
    c.drain()
    scheduled = 0
    k = 0
    started = time.perf_counter()
    while time.perf_counter() - started < duration:
        batch = [pod("test", k + j) for j in range(10)]
        k += 10
        for p in batch:
            c.store.create("Pod", p)
        c.drain()
        for p in batch:
            obj = c.store.get("Pod", "test", p["metadata"]["name"])
            if (obj.get("spec") or {}).get("nodeName"):
                scheduled += 1
            c.store.delete("Pod", "test", p["metadata"]["name"], 0)
        c.drain()
    seconds = time.perf_counter() - started
    return {"pods": scheduled, "seconds": round(seconds, 3), "pods_per_second": round(scheduled / seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "workload", choices=["SchedulingWithResourceClaimTemplate", "SteadyStateClusterResourceClaimTemplate"]
    )
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--devices", type=int, default=10, help="maxClaimsPerNode: devices per node")
    ap.add_argument("--init-pods", type=int, default=2500)
    ap.add_argument("--pods", type=int, default=2500)
    ap.add_argument("--claims", choices=["empty", "half", "full"], default="empty")
    ap.add_argument("--duration", type=float, default=10.0)
    args = ap.parse_args()
    gc_settings.tune()  # as the kubesched command does before running anything
    if args.workload == "SchedulingWithResourceClaimTemplate":
        result = scheduling_with_template(args.nodes, args.devices, args.init_pods, args.pods)
        variant = "full"
    else:
        total = args.nodes * args.devices
        allocated = {"empty": 0, "half": total // 2, "full": total - 10}[args.claims]
        result = steady_state(args.nodes, args.devices, allocated, args.duration)
        variant = args.claims
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "workload": f"{args.workload}/{variant}_{args.nodes}nodes",
        "nodes": args.nodes,
        **result,
        "upstream_floor": FLOORS.get((args.workload, variant)),
        "peak_rss_mib": round(peak, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
