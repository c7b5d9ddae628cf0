"""scheduler_perf's DRA workloads (``test/integration/scheduler_perf/dra/performance-config.yaml``
and its feature directories), in process on the embedded cluster with the resourceclaim controller.

    python benchmarks/scheduler_perf_dra.py SchedulingWithResourceClaimTemplate
    python benchmarks/scheduler_perf_dra.py SteadyStateClusterResourceClaimTemplate --claims half
    python benchmarks/scheduler_perf_dra.py ConsumableCapacity --claims half
    python benchmarks/scheduler_perf_dra.py ExtendedResource --variant Explicit_50classes_5000pods_500nodes

Shapes follow upstream's templates (``dra/templates``): nodes ``scheduler-perf-dra-<i>`` each with
its ResourceSlices of driver ``test-driver.cdi.k8s.io``, the DeviceClass ``test-class`` selecting
that driver, a ResourceClaimTemplate, and pods with one claim from it.

* SchedulingWithResourceClaimTemplate/5000pods_500nodes: 500 nodes × 10 devices, 2,500 pods
  scheduled unmeasured, 2,500 measured (upstream v1.37.2's floor 56 pods/s).
* SteadyStateClusterResourceClaimTemplate/{empty,half,full}_500nodes (upstream v1.37.2 runs them as
  SchedulingWithResourceClaimTemplate/{empty,half,full}_500nodes): 0, 2,500 or 4,990 claims
  allocated up front; then batches of 10 pods are created, scheduled and deleted for
  ``--duration`` seconds of wall time (floors 64, 60, 60 pods/s).
* ConsumableCapacity/{empty,half,full}_500nodes (``consumablecapacity/``, DRAConsumableCapacity):
  four shareable devices of 10G bandwidth per node; each claim asks for two distinct devices
  (``distinctAttribute``) of 2500M each, so eight pods fit a node; 0, 2,000 or 3,990 pods
  scheduled first, then the steady state.
* Partitionable/{empty,half,full}_500nodes (``partitionabledevices/``, DRAPartitionableDevices):
  a counter set of four counters and two devices drawing two each; claims for both devices, so
  one per node; 0, 250 or 490 claims allocated up front, then the steady state.
* PartitionableBacktracking/{empty,half,full}_500nodes: eight devices drawing one CPU counter each
  and 20Gi or 10Gi of a 70Gi memory counter; claims for seven devices, which fit only when the
  20Gi device is left out: the allocator must backtrack.
* FirstAvailable/fast (``prioritizedlist/``): requests whose first subrequest's class has no
  devices; 10 pods (upstream runs no larger size).
* DeviceTaintToleration/fast (``devicetaints/``): every device tainted by a DeviceTaintRule,
  claims tolerating it; 10 pods (upstream runs no larger size).
* ExtendedResource/{Explicit,Implicit}_{25,50}classes_5000pods_500nodes (``extendedresource/``,
  DRAExtendedResource): pods asking for an extended resource that a DeviceClass backs
  (``extendedResourceName`` or the implicit ``deviceclass.resource.kubernetes.io/<class>``); 2,500
  pods unmeasured, 2,500 measured (floors 120, 130, 130 pods/s).

Claims "allocated up front" are allocated as upstream's ``allocResourceClaims`` op does: one at a
time by the allocator, on nodes taken in a (seeded) random order, written straight to the store.

The last line printed is JSON: workload, nodes, pods, seconds, pods_per_second, peak_rss_mib.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.app import gc_settings
from kubesched.scheduler.plugins.dynamicresources import allocator
from kubesched.scheduler.plugins.dynamicresources import devices as device_table
from scheduler_perf import embedded_cluster

DRIVER = "test-driver.cdi.k8s.io"
RESOURCE = "resource.k8s.io/v1"
# upstream v1.37.2's thresholds (tests/test_benchmark_floors.py keeps them upstream's), by
# (workload, variant) as this script names them
FLOORS = {
    ("SchedulingWithResourceClaimTemplate", "full"): 56,
    ("SteadyStateClusterResourceClaimTemplate", "empty"): 64,
    ("SteadyStateClusterResourceClaimTemplate", "half"): 60,
    ("SteadyStateClusterResourceClaimTemplate", "full"): 60,
    ("ExtendedResource", "Explicit_25classes_5000pods_500nodes"): 120,
    ("ExtendedResource", "Explicit_50classes_5000pods_500nodes"): 130,
    ("ExtendedResource", "Implicit_25classes_5000pods_500nodes"): 130,
}


def node(i: int) -> dict[str, Any]:
    """``templates/node-with-dra-test-driver.yaml``."""
    name = f"scheduler-perf-dra-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "node-with-dra": "true"}},
        "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}},
    }


def _slice(name: str, i: int, spec: dict[str, Any], count: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": f"scheduler-perf-dra-{i}",
            "pool": {"name": f"resourceslice-{i}", "generation": 1, "resourceSliceCount": count},
            **spec,
        },
    }


def plain_slices(devices: int) -> Callable[[int], list[dict[str, Any]]]:
    """``templates/resourceslice.yaml``: ``devices`` devices with nothing but a name."""

    def make(i: int) -> list[dict[str, Any]]:
        s = _slice(
            f"scheduler-perf-dra-{i}-{DRIVER}", i, {"devices": [{"name": f"device-{d}"} for d in range(devices)]}
        )
        s["spec"]["pool"]["name"] = f"scheduler-perf-dra-{i}"
        return [s]

    return make


def basic_slices(devices: int = 10, pci_roots: int = 2) -> Callable[[int], list[dict[str, Any]]]:
    """``templates/resourceslice-basic-devices.yaml``: GPU-like devices with a dozen attributes
    and two capacities."""

    def device(d: int) -> dict[str, Any]:
        root = d % pci_roots
        strings = {
            "driver": "xe",
            "resource.k8s.io/pciRoot": str(root),
            "family": "Arc Pro B-Series",
            "health": "Healthy",
            "model": "B60",
            "pciAddress": f"0000:0{d}:00.0",
            "pciId": "0xe211",
            "pciRoot": f"0{root}",
            "resource.kubernetes.io/pciBusID": f"0000:0{d}:00.0",
            "resource.kubernetes.io/pciRoot": f"pci0000:0{root}",
            "type": "gpu",
        }
        attributes: dict[str, Any] = {k: {"string": v} for k, v in strings.items()}
        attributes["driverVersion"] = {"version": "1.2.3"}
        attributes["sriov"] = {"bool": True}
        return {
            "name": f"basic-device-{d}",
            "attributes": attributes,
            "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}},
        }

    return lambda i: [_slice(f"resourceslice-{i}", i, {"devices": [device(d) for d in range(devices)]})]


def consumable_slices(i: int) -> list[dict[str, Any]]:
    """``templates/resourceslice-consumablecapacity.yaml``: four shareable devices of 10G
    bandwidth (the third 10Gi, as upstream's file has it)."""
    devices = [
        {
            "name": f"shareable-device-{d}",
            "allowMultipleAllocations": True,
            "attributes": {"dra.example.com/index": {"int": d}},
            "capacity": {
                "bandwidth": {
                    "requestPolicy": {"default": "1M", "validRange": {"min": "1M", "step": "8"}},
                    "value": "10Gi" if d == 2 else "10G",
                }
            },
        }
        for d in range(4)
    ]
    return [_slice(f"resourceslice-{i}", i, {"devices": devices})]


def _counters(values: dict[str, str]) -> dict[str, Any]:
    return {k: {"value": v} for k, v in values.items()}


def partitionable_slices(i: int) -> list[dict[str, Any]]:
    """``templates/resourceslice-partitionable-{countersets,devices}.yaml``."""
    sets = [{"name": "counter-set", "counters": _counters({f"counter{k}": "1" for k in range(1, 5)})}]
    devices = [
        {
            "name": f"device-{d}",
            "consumesCounters": [
                {
                    "counterSet": "counter-set",
                    "counters": _counters({f"counter{2 * d - 1}": "1", f"counter{2 * d}": "1"}),
                }
            ],
        }
        for d in (1, 2)
    ]
    return [
        _slice(f"resourceslice-countersets-{i}", i, {"sharedCounters": sets}, 2),
        _slice(f"resourceslice-devices-{i}", i, {"devices": devices}, 2),
    ]


def backtracking_slices(i: int) -> list[dict[str, Any]]:
    """``templates/resourceslice-partitionable-backtracking-{countersets,devices}.yaml``."""
    sets = [
        {"name": "counter-set-for-cpu", "counters": _counters({f"cpu{k}": "1" for k in range(1, 9)})},
        {"name": "counter-set-for-mem", "counters": _counters({"mem": "70Gi"})},
    ]
    devices = [
        {
            "name": f"device-{d}",
            "consumesCounters": [
                {"counterSet": "counter-set-for-cpu", "counters": _counters({f"cpu{d}": "1"})},
                {"counterSet": "counter-set-for-mem", "counters": _counters({"mem": "20Gi" if d == 1 else "10Gi"})},
            ],
        }
        for d in range(1, 9)
    ]
    return [
        _slice(f"resourceslice-countersets-{i}", i, {"sharedCounters": sets}, 2),
        _slice(f"resourceslice-devices-{i}", i, {"devices": devices}, 2),
    ]


def device_class(name: str = "test-class", expression: str = f'device.driver == "{DRIVER}"', **spec: Any) -> dict:
    """``templates/deviceclass*.yaml``."""
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}], **spec},
    }


def claim_spec(**exactly: Any) -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": "test-class", **exactly}}]}}


CONSUMABLE_SPEC = {
    "devices": {
        "requests": [
            {
                "name": "req-0",
                "exactly": {
                    "deviceClassName": "test-class",
                    "count": 2,
                    "capacity": {"requests": {"bandwidth": "2500M"}},
                },
            }
        ],
        "constraints": [{"requests": ["req-0"], "distinctAttribute": "dra.example.com/index"}],
    }
}
FIRST_AVAILABLE_SPEC = {
    "devices": {
        "requests": [
            {
                "name": "req-0",
                "firstAvailable": [
                    {"name": "sub-0", "deviceClassName": "no-devices-class"},
                    {"name": "sub-1", "deviceClassName": "test-class"},
                ],
            }
        ]
    }
}


def template(ns: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": ns},
        "spec": {"spec": spec or claim_spec()},
    }


def claim(ns: str, i: int, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": f"test-claim-{i}", "namespace": ns},
        "spec": spec or claim_spec(),
    }


def pod(ns: str, i: int) -> dict[str, Any]:
    """``templates/pod-with-claim-template.yaml``."""
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


def extended_pod(ns: str, i: int, resource_prefix: str, classes: int) -> dict[str, Any]:
    """``templates/pod-with-extended-resource.yaml``: one of ``<prefix>-<i mod classes>``."""
    name = f"{resource_prefix}-{i % classes}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"test-dra-{i}", "namespace": ns},
        "spec": {
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {name: "1"}, "limits": {name: "1"}},
                }
            ]
        },
    }


class Cluster:
    """A workload's cluster: the embedded cluster as the other workloads' (``scheduler_perf.
    embedded_cluster``), with the loops beside the scheduler (the resource claim controller makes
    the claims of templates), the nodes' ResourceSlices and the DeviceClasses."""

    def __init__(self, nodes: int, slices: Callable[[int], list[dict[str, Any]]], classes: list[dict]) -> None:
        self.embedded = embedded_cluster(loops=True)
        self.store = self.embedded.store
        for ns in ("init", "test"):
            self.store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for i in range(nodes):
            self.store.create("Node", node(i))
            for s in slices(i):
                self.store.create("ResourceSlice", s)
        for c in classes:
            self.store.create("DeviceClass", c)
        self.sched = self.embedded.sched
        self.embedded.start()

    def drain(self) -> None:
        """Schedule until quiescent, letting virtual time pass for backoffs."""
        self.embedded.run_to_quiescence()

    def bound(self, ns: str) -> int:
        return sum(1 for p in self.store.list("Pod", ns)[0] if (p.get("spec") or {}).get("nodeName"))

    def alloc_resource_claims(self, ns: str, seed: int = 1) -> None:
        """Upstream's ``allocResourceClaims`` op (``scheduler_perf/dra.go``): each unallocated
        claim of ``ns`` in turn is allocated by the allocator on the first node, in a shuffled
        order, where it fits, given every allocation made so far; unallocatable claims fail."""
        rng = random.Random(seed)
        rules = self.store.list("DeviceTaintRule")[0]
        table = device_table.DeviceTable(device_table.apply_taint_rules(self.store.list("ResourceSlice")[0], rules))
        classes = {(c.get("metadata") or {}).get("name"): c for c in self.store.list("DeviceClass")[0]}
        nodes = [(n["metadata"]["name"], n["metadata"].get("labels") or {}) for n in self.store.list("Node")[0]]
        claims = self.store.list("ResourceClaim", ns)[0]
        taken = np.zeros(len(table), bool)
        for key in allocator.allocated_keys(self.store.list("ResourceClaim")[0]):
            if key in table.index:
                taken[table.index[key]] = True
        for c in claims:
            if (c.get("status") or {}).get("allocation"):
                continue
            plan = allocator.plan_claim(c, classes)
            rng.shuffle(nodes)
            for name, labels in nodes:
                chosen = allocator.allocate_node([plan], table, taken, name, labels)
                if chosen is None:
                    continue
                result = allocator.allocation_result(plan, chosen[0], table, name)
                for _req, i in chosen[0]:
                    taken[i] = True
                self.store.mutate(
                    "ResourceClaim",
                    ns,
                    c["metadata"]["name"],
                    lambda o, result=result: {**o, "status": {**(o.get("status") or {}), "allocation": result}},
                )
                break
            else:
                raise SystemExit(f"allocResourceClaims: claim {ns}/{c['metadata']['name']} fits no node")
        self.sched.process_events()


def measure_pods(c: Cluster, make: Callable[[int], dict[str, Any]], count: int) -> dict[str, Any]:
    """``createPods`` with ``collectMetrics``: ``count`` pods created, then scheduled until quiet."""
    for i in range(count):
        c.store.create("Pod", make(i))
    started = time.perf_counter()
    c.drain()
    seconds = time.perf_counter() - started
    bound = c.bound("test")
    if bound != count:
        print(f"warning: bound {bound} of {count} measured pods", file=sys.stderr)
    return {"pods": count, "seconds": round(seconds, 3), "pods_per_second": round(bound / seconds, 1)}


def steady_state(c: Cluster, duration: float) -> dict[str, Any]:
    """``createPods`` with ``steadyState``: batches of 10 pods created, scheduled and deleted for
    ``duration`` seconds of wall time."""
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


@dataclass(frozen=True)
class Shape:
    """One feature directory's workload template: what each node publishes, the classes, and the
    claim the test namespace's template (and up-front claims) ask for."""

    slices: Callable[[int], list[dict[str, Any]]]
    classes: tuple[dict[str, Any], ...]
    spec: dict[str, Any]
    per_node: int  # claims one node holds: sizes "half" and "full" from it
    up_front: str  # "claims" (allocResourceClaims) or "pods" (initPods scheduled unmeasured)


TEST_CLASS = device_class()
SHAPES = {
    "ConsumableCapacity": Shape(
        consumable_slices,
        (device_class(expression=f'device.driver == "{DRIVER}" &&\ndevice.allowMultipleAllocations == true'),),
        CONSUMABLE_SPEC,
        8,
        "pods",
    ),
    "Partitionable": Shape(partitionable_slices, (TEST_CLASS,), claim_spec(count=2), 1, "claims"),
    "PartitionableBacktracking": Shape(backtracking_slices, (TEST_CLASS,), claim_spec(count=7), 1, "claims"),
    "FirstAvailable": Shape(
        basic_slices(),
        (TEST_CLASS, device_class("no-devices-class", 'device.driver == "no-such-driver.cdi.k8s.io"')),
        FIRST_AVAILABLE_SPEC,
        10,
        "claims",
    ),
    "DeviceTaintToleration": Shape(
        basic_slices(),
        (TEST_CLASS,),
        claim_spec(tolerations=[{"key": "example.com/taint", "operator": "Exists"}]),
        10,
        "pods",
    ),
}
TAINT_ALL_DEVICES = {
    "apiVersion": RESOURCE,
    "kind": "DeviceTaintRule",
    "metadata": {"name": "taint-all-devices"},
    "spec": {"deviceSelector": {}, "taint": {"key": "example.com/taint", "value": "tainted", "effect": "NoSchedule"}},
}


def feature_workload(name: str, nodes: int, claims: str, duration: float, pods: int) -> dict[str, Any]:
    """A feature directory's workload: ``claims`` (empty, half, full) sizes what is taken up front
    (half the nodes' worth, or all but 10 pods' worth); then the steady state for ``duration``
    seconds, or ``pods`` measured pods where upstream creates a fixed count (the ``fast`` ones)."""
    shape = SHAPES[name]
    c = Cluster(nodes, shape.slices, list(shape.classes))
    if name == "DeviceTaintToleration":
        c.store.create("DeviceTaintRule", TAINT_ALL_DEVICES)
    total = nodes * shape.per_node
    up_front = {"empty": 0, "half": total // 2, "full": max(total - 10, 0)}[claims]
    if shape.up_front == "claims":
        for i in range(up_front):
            c.store.create("ResourceClaim", claim("init", i, shape.spec))
        c.alloc_resource_claims("init")
    else:
        c.store.create("ResourceClaimTemplate", template("init", shape.spec))
        for i in range(up_front):
            c.store.create("Pod", pod("init", i))
        c.drain()
        if c.bound("init") != up_front:
            print(f"warning: bound {c.bound('init')} of {up_front} pods up front", file=sys.stderr)
    c.store.create("ResourceClaimTemplate", template("test", shape.spec))
    c.drain()
    if pods:
        return measure_pods(c, lambda i: pod("test", i), pods)
    return steady_state(c, duration)


def extended_resource(variant: str) -> dict[str, Any]:
    """``extendedresource/``'s ``{Explicit,Implicit}_<k>classes_<n>pods_<m>nodes``: ``k`` classes
    ``test-class-<j>``, each naming ``example.com/gpu-<j>`` (explicit) or not (the implicit
    ``deviceclass.resource.kubernetes.io/test-class-<j>``); half the pods unmeasured."""
    kind, classes_s, pods_s, nodes_s = variant.split("_")
    classes, pods, nodes = int(classes_s.removesuffix("classes")), int(pods_s[:-4]), int(nodes_s[:-5])
    explicit = kind == "Explicit"
    made = [
        device_class(f"test-class-{j}", **({"extendedResourceName": f"example.com/gpu-{j}"} if explicit else {}))
        for j in range(classes)
    ]
    prefix = "example.com/gpu" if explicit else "deviceclass.resource.kubernetes.io/test-class"
    c = Cluster(nodes, basic_slices(), made)
    for i in range(pods // 2):
        c.store.create("Pod", extended_pod("init", i, prefix, classes))
    c.drain()
    return measure_pods(c, lambda i: extended_pod("test", i, prefix, classes), pods - pods // 2)


def scheduling_with_template(nodes: int, devices: int, init: int, measured: int) -> dict[str, Any]:
    c = Cluster(nodes, plain_slices(devices), [TEST_CLASS])
    c.store.create("ResourceClaimTemplate", template("init"))
    for i in range(init):
        c.store.create("Pod", pod("init", i))
    c.drain()
    c.store.create("ResourceClaimTemplate", template("test"))
    return measure_pods(c, lambda i: pod("test", i), measured)


def steady_state_template(nodes: int, devices: int, claims: int, duration: float) -> dict[str, Any]:
    """``allocResourceClaims`` for ``claims`` claims of one device each, then the steady state."""
    c = Cluster(nodes, plain_slices(devices), [TEST_CLASS])
    for i in range(claims):
        c.store.create("ResourceClaim", claim("init", i))
    c.alloc_resource_claims("init")
    c.store.create("ResourceClaimTemplate", template("test"))
    c.drain()
    return steady_state(c, duration)


WORKLOADS = [
    "SchedulingWithResourceClaimTemplate",
    "SteadyStateClusterResourceClaimTemplate",
    *SHAPES,
    "ExtendedResource",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--devices", type=int, default=10, help="maxClaimsPerNode: devices per node")
    ap.add_argument("--init-pods", type=int, default=2500)
    ap.add_argument("--pods", type=int, default=2500)
    ap.add_argument("--claims", choices=["empty", "half", "full"], default="empty")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument(
        "--variant", default="Explicit_25classes_5000pods_500nodes", help="ExtendedResource: upstream's workload name"
    )
    args = ap.parse_args()
    gc_settings.tune()  # as the kubesched command does before running anything
    nodes = args.nodes
    if args.workload == "SchedulingWithResourceClaimTemplate":
        result = scheduling_with_template(nodes, args.devices, args.init_pods, args.pods)
        variant = "full"
        name = f"{args.workload}/{variant}_{nodes}nodes"
    elif args.workload == "SteadyStateClusterResourceClaimTemplate":
        total = nodes * args.devices
        allocated = {"empty": 0, "half": total // 2, "full": total - 10}[args.claims]
        result = steady_state_template(nodes, args.devices, allocated, args.duration)
        variant = args.claims
        name = f"{args.workload}/{variant}_{nodes}nodes"
    elif args.workload == "ExtendedResource":
        result = extended_resource(args.variant)
        variant = args.variant
        nodes = int(variant.rsplit("_", 1)[1].removesuffix("nodes"))
        name = f"{args.workload}/{variant}"
    else:
        fixed = args.workload in ("FirstAvailable", "DeviceTaintToleration")
        result = feature_workload(args.workload, nodes, args.claims, args.duration, args.pods if fixed else 0)
        variant = args.claims
        name = f"{args.workload}/{variant}_{nodes}nodes"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "workload": name,
        "nodes": nodes,
        **result,
        "upstream_floor": FLOORS.get((args.workload, variant)),
        "peak_rss_mib": round(peak, 1),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
