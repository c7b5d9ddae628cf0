"""scheduler_perf-style throughput runs for kubesched, in process on the embedded cluster
(``embedded_cluster``: as ``simulate`` builds it, bound pods left bound as in scheduler_perf).

    python benchmarks/scheduler_perf.py SchedulingBasic --nodes 5000 --pods 10000

Shapes follow upstream ``test/integration/scheduler_perf`` (``misc/performance-config.yaml``,
``templates/node-default.yaml``, ``templates/pod-default.yaml``): nodes of 4 CPU / 32Gi / 110
pods; pods requesting 100m / 500Mi. ``--init-pods`` are scheduled first and not measured
(default: 1000 for 5000 nodes, as upstream's 5000Nodes_10000Pods). The last line printed is
JSON: workload, nodes, pods, seconds, pods_per_second, peak_rss_mib.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import bare_port
from kubesched.api.errors import ApiError
from kubesched.api.node_features import registry_replaced
from kubesched.app import gc_settings
from kubesched.clock import VirtualClock
from kubesched.cluster.store import Store
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.scheduler.config import SchedulerConfig, default_config, parse_config
from kubesched.scheduler.scheduler import Scheduler

ZONE = "topology.kubernetes.io/zone"


def node(i: int, zones: int = 0, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """``templates/node-default.yaml``; with ``zones``, labelNodePrepareStrategy's zone labels
    (``moon-1`` … ``moon-<zones>`` or ``names``, round robin)."""
    labels = {"kubernetes.io/hostname": f"node-{i}"}
    if zones:
        labels[ZONE] = names[i % len(names)] if names else f"moon-{i % zones + 1}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": labels},
        "status": {
            "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    prefix: str, i: int, cpu: str = "100m", priority_class: str | None = None, grace: int | None = None
) -> dict[str, Any]:
    """``templates/pod-default.yaml`` (100m); ``pod-low-priority.yaml`` is 900m with a zero
    grace period, ``pod-high-priority.yaml`` 3000m at priority 10."""
    spec: dict[str, Any] = {}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
        "spec": {
            **spec,
            "containers": [
                {
                    "name": "pause",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {
                        "requests": {"cpu": cpu, "memory": "500Mi"},
                        "limits": {"cpu": cpu, "memory": "500Mi"},
                    },
                }
            ],
        },
    }


class WallClockChurn:
    """scheduler_perf's ``churn`` opcode in ``create`` mode: one more pod from a template every
    ``interval`` seconds of wall time while the measured pods are being scheduled. Meanwhile the
    virtual clock follows wall time, so backoffs and grace periods run out as on a live scheduler.
    Synced before each scheduling step, as the loops beside the scheduler are."""

    def __init__(
        self,
        store: Store,
        sched: Scheduler,
        clock: VirtualClock,
        make: Callable[[int], dict[str, Any]],
        interval: float,
    ) -> None:
        self.store, self.sched, self.clock, self.make, self.interval = store, sched, clock, make, interval
        self.created = 0
        self.wall0 = self.virtual0 = self.next_at = 0.0

    def start(self) -> None:
        self.wall0, self.virtual0 = time.perf_counter(), self.clock.now()
        self.next_at = self.wall0 + self.interval

    def sync(self) -> None:
        now = time.perf_counter()
        self.clock.advance_to(max(self.clock.now(), self.virtual0 + now - self.wall0))
        self.sched.flush(unschedulable=False)
        if now >= self.next_at:
            made = self.make(self.created)
            if "ops" in made:  # the churn opcode in recreate mode: deletes and creates of any kind
                for op, kind, obj in made["ops"]:
                    with contextlib.suppress(ApiError):
                        if op == "delete":
                            self.store.delete(kind, obj.get("namespace", ""), obj["name"], 0)
                        else:
                            self.store.create(kind, obj)
                self.created += 1
            elif "delete" in made:  # the deletePods opcode: one deletion per tick
                with contextlib.suppress(ApiError):
                    self.store.delete("Pod", "default", made["delete"], 0)
            elif made:
                self.store.create("Pod", made)
                self.created += 1
            self.next_at += self.interval


def embedded_cluster(config: SchedulerConfig | None = None, *, loops: bool = False) -> EmbeddedCluster:
    """What every workload runs on: the embedded cluster as ``simulate`` builds it (the API
    server's defaulting and validation, then admission; ``loops``: the claim, volume and
    disruption loops beside the scheduler), except that a bound pod stays bound, as in upstream's
    scheduler_perf, whose cluster runs no kubelet. Its scheduler lists and watches once the
    workload's cluster objects exist."""
    return EmbeddedCluster(config=config or default_config(), loops=loops, start=False, bound_pods_run=False)


def run_workload(
    nodes: int,
    init: Iterable[dict[str, Any]],
    measured: list[dict[str, Any]],
    objects: Iterable[tuple[str, dict]] = (),
    churn: tuple[Callable[[int], dict[str, Any]], float] | None = None,
    zones: int = 0,
    zone_names: tuple[str, ...] | None = None,
    config: SchedulerConfig | None = None,
    measured_prefix: str | None = None,
    measure: Callable[[Callable[[], None]], None] = lambda work: work(),
) -> dict[str, Any]:
    """Create the nodes (and ``objects``), schedule ``init`` unmeasured, then time ``measured``
    (with ``churn``: pods from a template created every so many seconds meanwhile), each run to
    quiescence by the embedded cluster's virtual-time driver. ``measure`` runs the measured
    scheduling (``instructions.py`` counts its instructions there)."""
    cluster = embedded_cluster(config)
    store = cluster.store
    for kind, obj in objects:
        store.create(kind, obj)
    for i in range(nodes):
        store.create("Node", node(i, zones, zone_names))
    clock = cluster.clock
    assert isinstance(clock, VirtualClock)
    sched = cluster.sched
    cluster.start()
    for p in init:
        store.create("Pod", p)
    cluster.run_to_quiescence()
    churner = WallClockChurn(store, sched, clock, *churn) if churn is not None else None
    for p in measured:
        store.create("Pod", p)
    sched.process_events()
    before = sched.stats.scheduled
    started = time.perf_counter()
    if churner is not None:
        churner.start()
    measure(lambda: cluster.run_to_quiescence(also=[churner] if churner is not None else ()))
    seconds = time.perf_counter() - started
    scheduled = sched.stats.scheduled - before
    extra = churner.created if churner is not None else 0
    counted = [p for p in measured if measured_prefix is None or p["metadata"]["name"].startswith(measured_prefix)]
    bound = sum(1 for p in counted if _bound(store, p))
    if bound != len(counted):
        print(f"warning: bound {bound} of {len(counted)} measured pods", file=sys.stderr)
    result = {"seconds": round(seconds, 3), "pods_per_second": round(bound / seconds, 1)}
    if churner is not None:
        result["churned"] = extra
        result["churned_bound"] = scheduled - bound
    return result


def _bound(store: Store, p: dict[str, Any]) -> bool:
    obj = store.try_get("Pod", p["metadata"]["namespace"], p["metadata"]["name"])
    return obj is not None and bool(obj.get("spec", {}).get("nodeName"))


def scheduling_basic(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingBasic``, then, in the same process, the bare per-node Python port of the same
    work (``bare_port.py``), so that the ratio issue 16 asks about is measured, not recalled."""
    init = (pod("init", i) for i in range(init_pods))
    result = run_workload(nodes, init, [pod("measured", i) for i in range(pods)])
    bare = bare_port.run(nodes, pods, init_pods)
    result["bare_port_pods_per_second"] = bare["pods_per_second"]
    result["ratio_to_bare_port"] = round(result["pods_per_second"] / bare["pods_per_second"], 2)
    return result


def scheduling_basic_extender(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """SchedulingBasic with one nodeCacheCapable filter + prioritize extender on loopback (the
    example extender, in its own process): what the two HTTP calls per pod cost."""
    import socket
    import subprocess
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    example = Path(__file__).resolve().parent.parent / "examples" / "extender" / "extender.py"
    proc = subprocess.Popen(
        [sys.executable, str(example), "--port", str(port), "--nodes", "/dev/null"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # listening
        extender = {
            "urlPrefix": f"http://127.0.0.1:{port}/scheduler",
            "filterVerb": "filter",
            "prioritizeVerb": "prioritize",
            "weight": 1,
            "nodeCacheCapable": True,
        }
        config = parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "extenders": [extender],
            }
        )
        init = (pod("init", i) for i in range(init_pods))
        return run_workload(nodes, init, [pod("measured", i) for i in range(pods)], config=config)
    finally:
        proc.terminate()
        proc.wait(5)


HIGH_CLASS = ("PriorityClass", {"metadata": {"name": "high"}, "value": 10})


def low_pods(count: int) -> Iterable[dict[str, Any]]:
    return (pod("low", i, cpu="900m", grace=0) for i in range(count))


def high_pod(i: int) -> dict[str, Any]:
    return pod("high", i, cpu="3000m", priority_class="high")


def preemption_basic(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``PreemptionBasic``: nodes filled with low-priority 900m pods (four per node), then
    high-priority 3000m pods that each have to evict three of them; the preemptors are measured."""
    return run_workload(nodes, low_pods(init_pods), [high_pod(i) for i in range(pods)], [HIGH_CLASS])


def preemption_async(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``PreemptionAsync`` (``default_preemption/performance-config.yaml``): the same filled nodes,
    a high-priority preemptor created every 200 ms of wall time, and plain 100m pods measured."""
    measured = [pod("measured", i) for i in range(pods)]
    return run_workload(nodes, low_pods(init_pods), measured, [HIGH_CLASS], churn=(high_pod, 0.2))


def spreading_pod(i: int, when: str) -> dict[str, Any]:
    """``pod-with-topology-spreading.yaml`` / ``pod-with-preferred-topology-spreading.yaml``:
    100m, label color=blue, zone maxSkew 5."""
    p = pod("spreading", i)
    p["metadata"]["labels"] = {"color": "blue"}
    selector = {"matchLabels": {"color": "blue"}}
    p["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when, "labelSelector": selector}
    ]
    return p


def topology_spreading(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``TopologySpreading`` (``topology_spreading/performance-config.yaml``): 3 zones,
    plain init pods, then pods spreading over zones with DoNotSchedule."""
    init = (pod("init", i) for i in range(init_pods))
    return run_workload(nodes, init, [spreading_pod(i, "DoNotSchedule") for i in range(pods)], zones=3)


def preferred_topology_spreading(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``PreferredTopologySpreading``: the same with ScheduleAnyway."""
    init = (pod("init", i) for i in range(init_pods))
    return run_workload(nodes, init, [spreading_pod(i, "ScheduleAnyway") for i in range(pods)], zones=3)


def default_topology_spreading(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``DefaultTopologySpreading``: 3 zones, a Service in service-ns selecting
    app=scheduler-perf (``templates/service.yaml``), plain init pods, then pods of
    ``templates/pod-with-label.yaml`` (that label, no requests) in service-ns, which the System
    default constraints spread over hostnames and zones."""
    service = {
        "metadata": {"name": "service-0", "namespace": "service-ns"},
        "spec": {"selector": {"app": "scheduler-perf"}, "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8000}]},
    }
    objects = [("Namespace", {"metadata": {"name": "service-ns"}}), ("Service", service)]
    measured = []
    for i in range(pods):
        p = pod("labelled", i)
        p["metadata"].update(namespace="service-ns", labels={"app": "scheduler-perf"})
        del p["spec"]["containers"][0]["resources"]
        measured.append(p)
    init = (pod("init", i) for i in range(init_pods))
    return run_workload(nodes, init, measured, objects, zones=3)


HOST = "kubernetes.io/hostname"
NAMESPACES = [("Namespace", {"metadata": {"name": f"sched-{i}"}}) for i in range(2)]


# kind -> (its template's label color=..., topology key, section, preferred)
AFFINITY_TEMPLATES = {
    "anti": ("green", HOST, "podAntiAffinity", False),  # templates/pod-with-pod-anti-affinity.yaml
    "affinity": ("blue", ZONE, "podAffinity", False),  # templates/pod-with-pod-affinity.yaml
    "preferred": ("red", HOST, "podAffinity", True),  # templates/pod-with-preferred-pod-affinity.yaml
    "preferred-anti": ("yellow", HOST, "podAntiAffinity", True),  # …-preferred-pod-anti-affinity.yaml
}


def affinity_pod(
    prefix: str, i: int, ns: str, kind: str, templates: dict[str, tuple[str, str, str, bool]] | None = None
) -> dict[str, Any]:
    """The affinity templates: 100m pods labelled color=<c> with one term selecting color=<c> in
    both namespaces, or with ``NS_SELECTOR_TEMPLATES`` in namespaces labelled team=devops
    (preferred ones of weight 1)."""
    color, key, section, preferred = (templates or AFFINITY_TEMPLATES)[kind]
    p = pod(prefix, i)
    p["metadata"]["namespace"] = ns
    p["metadata"]["labels"] = {"color": color}
    term: dict[str, Any] = {"labelSelector": {"matchLabels": {"color": color}}, "topologyKey": key}
    if templates is None:
        term["namespaces"] = ["sched-1", "sched-0"]
    else:
        term["namespaceSelector"] = {"matchLabels": {"team": "devops"}}
    if preferred:
        rule = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]}
    else:
        rule = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    p["spec"]["affinity"] = {section: rule}
    return p


def affinity_workload(kind: str, zones: int = 0) -> Callable[[int, int, int], dict[str, Any]]:
    """``affinity/performance-config.yaml``: init pods in sched-0, measured pods in sched-1, all
    from the same template."""

    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        init = (affinity_pod("init", i, "sched-0", kind) for i in range(init_pods))
        measured = [affinity_pod("measured", i, "sched-1", kind) for i in range(pods)]
        return run_workload(nodes, init, measured, NAMESPACES, zones=zones, zone_names=("zone1",) if zones else None)

    return run


def node_affinity_pod(prefix: str, i: int) -> dict[str, Any]:
    """``templates/pod-with-node-affinity.yaml``: 100m, required zone In [zone1, zone2]."""
    p = pod(prefix, i)
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}
                ]
            }
        }
    }
    return p


def scheduling_node_affinity(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingNodeAffinity`` (``affinity/``): every node in zone1; init and measured pods alike."""
    init = (node_affinity_pod("init", i) for i in range(init_pods))
    measured = [node_affinity_pod("measured", i) for i in range(pods)]
    return run_workload(nodes, init, measured, zones=1, zone_names=("zone1",))


def pod_matching_anti_affinity(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingPodMatchingAntiAffinity`` (``affinity/``): anti-affinity pods in sched-0, then
    plain pods labelled color=green in sched-1 (``pod-with-pod-anti-affinity-label.yaml``), which the
    existing pods' terms keep off their nodes."""
    init = (affinity_pod("init", i, "sched-0", "anti") for i in range(init_pods))
    measured = []
    for i in range(pods):
        p = pod("measured", i)
        p["metadata"]["namespace"] = "sched-1"
        p["metadata"]["labels"] = {"color": "green"}
        measured.append(p)
    return run_workload(nodes, init, measured, NAMESPACES)


def mixed_scheduling_base_pod(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``MixedSchedulingBasePod`` (``affinity/``): every node in zone1; ``init_pods`` each of the
    default, pod-affinity, anti-affinity, preferred and preferred-anti templates in sched-0, then
    plain pods measured in default."""

    def init() -> Iterable[dict[str, Any]]:
        for i in range(init_pods):
            p = pod("init-default", i)
            p["metadata"]["namespace"] = "sched-0"
            yield p
        for kind in ("affinity", "anti", "preferred", "preferred-anti"):
            yield from (affinity_pod(f"init-{kind}", i, "sched-0", kind) for i in range(init_pods))

    measured = [pod("measured", i) for i in range(pods)]
    return run_workload(nodes, init(), measured, NAMESPACES, zones=1, zone_names=("zone1",))


# the NS-selector templates (templates/pod-*-ns-selector.yaml): kind -> (color, topology key,
# section, preferred); their terms select color=<c> in namespaces labelled team=devops
NS_SELECTOR_TEMPLATES = {
    "required-anti": ("green", HOST, "podAntiAffinity", False),
    "preferred-anti": ("green", HOST, "podAntiAffinity", True),
    "required-affinity": ("blue", ZONE, "podAffinity", False),
    "preferred-affinity": ("red", HOST, "podAffinity", True),
}


def ns_selector_pod(prefix: str, i: int, ns: str, kind: str) -> dict[str, Any]:
    return affinity_pod(prefix, i, ns, kind, NS_SELECTOR_TEMPLATES)


def ns_selector_workload(kind: str, per_namespace: int, zones: int = 0) -> Callable[[int, int, int], dict[str, Any]]:
    """The ``...WithNSSelector`` workloads (``affinity/``): 100 namespaces ``init-ns-<i>`` and
    ``measure-ns-0``, all labelled team=devops (``namespace-with-labels.yaml``); ``per_namespace``
    init pods in each init namespace, then the measured pods in measure-ns-0, all from one template.
    ``--init-pods`` is the number of init namespaces times ``per_namespace``."""

    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        namespaces = max(1, init_pods // per_namespace)
        objects = [
            ("Namespace", {"metadata": {"name": name, "labels": {"team": "devops"}}})
            for name in [f"init-ns-{i}" for i in range(namespaces)] + ["measure-ns-0"]
        ]
        init = (
            ns_selector_pod(f"init-{n}", i, f"init-ns-{n}", kind)
            for n in range(namespaces)
            for i in range(per_namespace)
        )
        measured = [ns_selector_pod("measured", i, "measure-ns-0", kind) for i in range(pods)]
        return run_workload(nodes, init, measured, objects, zones=zones, zone_names=("zone1",) if zones else None)

    return run


def gated_pods_with_pod_affinity(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingGatedPodsWithPodAffinityImpactForThroughput`` (``affinity/``): on one named node,
    ``init_pods`` gated pods with required pod affinity to app=scheduler-perf wait while the measured
    pods labelled app=scheduler-perf (``pod-with-label.yaml``) are scheduled; every binding is an
    AssignedPodAdd event the queue sees, which should barely slow it (floor 110)."""
    affinity = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "scheduler-perf"}}, "topologyKey": HOST}
            ]
        }
    }
    gated = []
    for i in range(init_pods):
        p = light_pod("gated", i, affinity=affinity, schedulingGates=[{"name": "scheduling-gate-1"}])
        p["metadata"]["labels"] = {"app": "scheduler-perf"}
        gated.append(p)
    measured = []
    for i in range(pods):
        p = light_pod("measured", i)
        p["metadata"]["labels"] = {"app": "scheduler-perf"}
        measured.append(p)
    return run_workload(0, gated, measured, [("Node", NAMED_NODE)])


def node_inclusion_pod(i: int) -> dict[str, Any]:
    """``templates/pod-with-node-inclusion-policy.yaml``: 100m, foo=bar, spread one per hostname
    (DoNotSchedule) honouring node affinity and taints (the template's capitalized keys decode to
    nodeAffinityPolicy / nodeTaintsPolicy: Go's JSON field matching ignores case)."""
    p = pod("measured", i)
    p["metadata"]["labels"] = {"foo": "bar"}
    p["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": HOST,
            "whenUnsatisfiable": "DoNotSchedule",
            "nodeAffinityPolicy": "Honor",
            "nodeTaintsPolicy": "Honor",
            "labelSelector": {"matchLabels": {"foo": "bar"}},
        }
    ]
    return p


def node_inclusion_policy(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingWithNodeInclusionPolicy`` (``topology_spreading/``): of ``nodes``, a fifth are
    tainted foo:NoSchedule (``node-with-taint.yaml``: 1,000 of 5,000), and the measured pods spread
    one per untainted node (floor 270)."""
    tainted = nodes // 5
    objects = []
    for i in range(tainted):
        n = node(nodes - tainted + i)
        n["metadata"]["name"] = f"taint-node-{i}"
        n["metadata"]["labels"] = {HOST: f"taint-node-{i}"}
        n["spec"] = {"taints": [{"key": "foo", "effect": "NoSchedule"}]}
        objects.append(("Node", n))
    return run_workload(nodes - tainted, (), [node_inclusion_pod(i) for i in range(pods)], objects)


def mixed_churn(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingWithMixedChurn`` (``misc/``): while plain pods are measured, every second of
    wall time one node (``churn/node-default.yaml``), one unschedulable 9-CPU high-priority pod and
    one Service (``churn/service-default.yaml``) are deleted and created again (``recreate`` mode,
    number 1): each brings node, pod and service events the queue checks its pods against (floor 710)."""

    def recreate(i: int) -> dict[str, Any]:
        ops: list[tuple[str, str, dict[str, Any]]] = []
        if i:
            ops += [
                ("delete", "Node", {"name": f"churn-node-{i - 1}"}),
                ("delete", "Pod", {"namespace": "default", "name": f"churn-pod-{i - 1}"}),
                ("delete", "Service", {"namespace": "default", "name": f"churn-svc-{i - 1}"}),
            ]
        n = node(nodes + i)
        n["metadata"]["name"] = f"churn-node-{i}"
        n["metadata"]["labels"] = {HOST: f"churn-node-{i}"}
        p = unschedulable_pod(i)
        p["metadata"]["name"] = f"churn-pod-{i}"
        svc = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"churn-svc-{i}", "namespace": "default"},
            "spec": {"ports": [{"port": 80, "targetPort": 8080}], "selector": {"app": "churn"}},
        }
        ops += [("create", "Node", n), ("create", "Pod", p), ("create", "Service", svc)]
        return {"ops": ops}

    measured = [pod("measured", i) for i in range(pods)]
    return run_workload(nodes, (), measured, [HIGH_CLASS], churn=(recreate, 1.0), measured_prefix="measured")


def daemonset_pod(i: int) -> dict[str, Any]:
    """``templates/daemonset-pod.yaml``: no requests, required node affinity by metadata.name."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["scheduler-perf-node"]}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"daemonset-{i}", "namespace": "default"},
        "spec": {
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            },
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2"}],
        },
    }


NAMED_NODE = {  # templates/node-with-name.yaml
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "scheduler-perf-node", "labels": {"kubernetes.io/hostname": "scheduler-perf-node"}},
    "status": {
        "capacity": {"pods": "90000", "cpu": "4", "memory": "32Gi"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def scheduling_daemonset(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingDaemonset`` (``misc/``): one node named scheduler-perf-node that every pod's
    nodeAffinity names, among ``nodes`` others that NodeAffinity's PreFilterResult leaves out
    (upstream: 15,000 nodes, 30,000 pods, floor 1,100)."""
    return run_workload(nodes, [], [daemonset_pod(i) for i in range(pods)], [("Node", NAMED_NODE)])


def light_pod(prefix: str, i: int, **spec: Any) -> dict[str, Any]:
    """``templates/light-pod.yaml``: no requests, zero grace period."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2"}],
            **spec,
        },
    }


def unschedulable_pod(i: int) -> dict[str, Any]:
    """``templates/pod-high-priority-large-cpu.yaml``: 9 CPUs at priority 10, fits no 4-CPU node."""
    p = pod("large", i, cpu="9")
    p["spec"]["priorityClassName"] = "high"
    p["spec"]["containers"][0]["resources"].pop("limits")
    return p


def unschedulable(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``Unschedulable`` (``misc/``): plain 100m pods measured while a pod that fits nowhere is
    created every 200 ms (upstream: 5,000 nodes, 100 or 20,000 init pods, 10,000 measured; floors 590 / 600)."""
    init = (pod("init", i) for i in range(init_pods))
    measured = [pod("measured", i) for i in range(pods)]
    return run_workload(nodes, init, measured, [HIGH_CLASS], churn=(unschedulable_pod, 0.2))


def extended_resource_node(i: int) -> dict[str, Any]:
    """``misc/templates/node-with-extended-resource.yaml``: one ``foo.com/bar-<i>`` per node."""
    n = node(i)
    n["metadata"]["labels"]["node-with-extended-resource"] = "true"
    for key in ("capacity", "allocatable"):
        n["status"][key][f"foo.com/bar-{i}"] = "1"
    return n


def extended_resource_pod(i: int) -> dict[str, Any]:
    p = light_pod("test-extended-resource", i)
    p["spec"].pop("terminationGracePeriodSeconds")
    p["spec"]["containers"][0]["resources"] = {
        "requests": {f"foo.com/bar-{i}": "1"},
        "limits": {f"foo.com/bar-{i}": "1"},
    }
    return p


def scheduling_with_extended_resource(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingWithExtendedResource`` (``misc/``): node i alone has ``foo.com/bar-i``, which
    pod i asks for: every pod fits exactly one node (upstream: 5,000 / 5,000, floor 180)."""
    objects = [("Node", extended_resource_node(i)) for i in range(nodes)]
    return run_workload(0, [], [extended_resource_pod(i) for i in range(pods)], objects)


def node_declared_features(count: int) -> Callable[[int, int, int], dict[str, Any]]:
    """``NodeDeclaredFeaturesEnabled`` (``nodedeclaredfeatures/``): the feature registry swapped for
    ``count`` mock features ``Feature1``… that every pod with pod-level resources needs, nodes of
    128 CPU / 16Gi declaring them all, pods of 100m / 200Mi at pod level (upstream: 5,000 nodes,
    5,000 init pods, 50,000 measured; floor 890 for 20, 40 and 100 features)."""
    names = sorted(f"Feature{i}" for i in range(1, count + 1))

    def feature_node(i: int) -> dict[str, Any]:
        size = {"cpu": "128", "memory": "16Gi", "pods": "110"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}", "labels": {"kubernetes.io/hostname": f"node-{i}"}},
            "status": {"capacity": size, "allocatable": size, "declaredFeatures": names},
        }

    def pod_level(prefix: str, i: int) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
            "spec": {
                "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
                "containers": [{"name": "container-a", "image": "registry.k8s.io/pause:3.10.1"}],
            },
        }

    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        with registry_replaced(names, lambda spec: spec.get("resources") is not None):
            return run_workload(
                0,
                (pod_level("init", i) for i in range(init_pods)),
                [pod_level("measured", i) for i in range(pods)],
                objects=[("Node", feature_node(i)) for i in range(nodes)],
            )

    return run


def scheduling_while_gated(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingWhileGated`` (``misc/``): on one named node, 10,000 gated pods wait while
    20,000 scheduled pods are deleted at 50/s and 20,000 light pods are measured (floor 910).
    ``--init-pods`` sets the deleting pods (the gated pods are half of them)."""
    gated = [light_pod("gated", i, schedulingGates=[{"name": "test.k8s.io/hold"}]) for i in range(init_pods // 2)]
    deleting = [light_pod("deleting", i) for i in range(init_pods)]
    measured = [light_pod("measured", i) for i in range(pods)]
    counter = {"next": 0}

    def delete_one(_i: int) -> dict[str, Any]:  # deletePods at 50/s, one per churn tick
        k = counter["next"]
        counter["next"] += 1
        return {"delete": f"deleting-{k}"} if k < len(deleting) else {}

    return run_workload(
        0,
        [*gated, *deleting],
        measured,
        [("Node", NAMED_NODE)],
        churn=(delete_one, 0.02),
    )


def deleted_pods_with_finalizers(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``SchedulingDeletedPodsWithFinalizers`` (``misc/``): pods with a finalizer are created and
    deleted (100/s) while light pods are measured; the deleted ones keep their deletionTimestamp
    and are skipped by the cycle (upstream: 5,000 nodes, 5,000 + 5,000, floor 830)."""
    doomed = [light_pod("finalized", i) for i in range(init_pods)]
    for p in doomed:
        p["metadata"]["finalizers"] = ["test.k8s.io/finalizer"]
    measured = [light_pod("measured", i) for i in range(pods)]
    counter = {"next": 0}

    def delete_one(_i: int) -> dict[str, Any]:
        k = counter["next"]
        counter["next"] += 1
        return {"delete": f"finalized-{k}"} if k < len(doomed) else {}

    return run_workload(nodes, [], [*doomed, *measured], churn=(delete_one, 0.01), measured_prefix="measured")


# batching/performance-config.yaml: Opportunistic Batching's two workloads, on
# scheduler-config-no-topology.yaml (no default spreading: otherwise no pod is signable)
NO_TOPOLOGY = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {"name": "PodTopologySpread", "args": {"defaultingType": "List", "defaultConstraints": []}}
            ],
        }
    ],
}
BATCHING = {"signature_batch_size": 20000, "feature_gates": ""}  # set from the command line


def batching_pod(template: str, i: int) -> dict[str, Any]:
    """``pod-hostport-80.yaml`` (100m, hostPort 80) or ``pod-saturation.yaml`` (3 CPU on 4-CPU
    nodes); every ``signatureBatchSize`` pods share a label, the next group another (labels are
    part of the signature, through InterPodAffinity)."""
    container: dict[str, Any] = {"name": "pause", "image": "registry.k8s.io/pause:3.10.1"}
    if template == "hostport":
        container["ports"] = [{"containerPort": 80, "hostPort": 80}]
        container["resources"] = {"requests": {"cpu": "100m", "memory": "100Mi"}}
    else:
        container["resources"] = {"requests": {"cpu": "3", "memory": "1Gi"}}
    group = i // int(BATCHING["signature_batch_size"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{template}-{i}", "namespace": "default", "labels": {"signature-batch": str(group)}},
        "spec": {"containers": [container]},
    }


def batching_workload(template: str) -> Callable[[int, int, int], dict[str, Any]]:
    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        from kubesched.features import FeatureGates
        from kubesched.scheduler.config import parse_config

        config = parse_config(NO_TOPOLOGY)
        config.feature_gates = FeatureGates.parse(str(BATCHING["feature_gates"]))
        result = run_workload(nodes, [], [batching_pod(template, i) for i in range(pods)], config=config)
        result["opportunistic_batching"] = config.feature_gates.enabled("OpportunisticBatching")
        result["signature_batch_size"] = BATCHING["signature_batch_size"]
        return result

    return run


# -- volumes/performance-config.yaml ------------------------------------------------------------
EBS_DRIVER = "ebs.csi.aws.com"


def volume_pod(prefix: str, i: int, source: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """A pod of ``templates/pod-default.yaml`` with its own claim (``templates/pvc.yaml``: 1Gi,
    ReadOnlyMany) bound to its own volume (``pv-aws.yaml``: an in-tree EBS disk, or ``pv-csi.yaml``:
    the EBS CSI driver's), created before it, as scheduler_perf's persistentVolumeTemplatePath does."""
    name = f"{prefix}-{i}"
    volume_source = (
        {"awsElasticBlockStore": {"volumeID": f"aws://us-east-1a/vol-{name}"}}
        if source == "aws"
        else {"csi": {"driver": EBS_DRIVER, "volumeHandle": f"vol-{name}"}}
    )
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{name}"},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": f"pvc-{name}"},
            **volume_source,
        },
        "status": {"phase": "Bound"},
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": f"pvc-{name}",
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "",
            "volumeName": f"pv-{name}",
        },
        "status": {"phase": "Bound", "accessModes": ["ReadOnlyMany"], "capacity": {"storage": "1Gi"}},
    }
    p = pod(prefix, i)
    p["spec"]["volumes"] = [{"name": "vol", "persistentVolumeClaim": {"claimName": f"pvc-{name}"}}]
    return [("PersistentVolume", pv), ("PersistentVolumeClaim", pvc)], p


def csi_node(i: int, migrated: bool) -> dict[str, Any]:
    """nodeAllocatableStrategy's CSINode: the EBS driver attaches 39 volumes; with migratedPlugins,
    the in-tree EBS plugin counts under it."""
    meta: dict[str, Any] = {"name": f"node-{i}"}
    if migrated:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
    driver = {"name": EBS_DRIVER, "nodeID": f"node-{i}", "allocatable": {"count": 39}}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta, "spec": {"drivers": [driver]}}


def volumes_workload(source: str, csi_nodes: bool, migrated: bool = False) -> Callable[[int, int, int], dict[str, Any]]:
    """``SchedulingInTreePVs`` (in-tree EBS volumes, no CSINode), ``SchedulingMigratedInTreePVs``
    (the same volumes, nodes whose CSINode migrated the plugin: attach limits count them) and
    ``SchedulingCSIPVs`` (CSI volumes, CSINodes): every pod with its own pre-bound claim."""

    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        objects: list[tuple[str, dict[str, Any]]] = []
        if csi_nodes:
            objects += [("CSINode", csi_node(i, migrated)) for i in range(nodes)]
        init, measured = [], []
        for prefix, count, out in (("init", init_pods, init), ("measured", pods, measured)):
            for i in range(count):
                volumes, p = volume_pod(prefix, i, source)
                objects += volumes
                out.append(p)
        return run_workload(nodes, init, measured, objects)

    return run


# -- workload_preemption/performance-config.yaml (GenericWorkload) --------------------------------
GANG_PRIORITY = ("PriorityClass", {"metadata": {"name": "gang"}, "value": 8888888})


def gang_preemption_basic(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``GangPreemptionBasic``: ``init_pods`` low-priority 40m pods spread evenly (a hostPort per
    slot), then gangs of ``--pods-per-group`` pods of 3970m at priority 8888888 (a class here:
    admission refuses a bare priority), each pod evicting a node's low pods; every gang pod measured."""
    from kubesched.features import FeatureGates

    size = POD_GROUP_SIZE["size"]
    per_node = max(init_pods // max(nodes, 1), 1)
    init = []
    for i in range(init_pods):
        p = pod("pod-low-priority", i, cpu="40m", grace=0)
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8000 + i % per_node}]
        init.append(p)
    groups = -(-pods // size)
    objects: list[tuple[str, dict[str, Any]]] = [GANG_PRIORITY]
    for g in range(groups):
        spec = {"priorityClassName": "gang", "schedulingPolicy": {"gang": {"minCount": size}}}
        group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup"}
        objects.append(("PodGroup", {**group, "metadata": {"name": f"gang-{g}", "namespace": "default"}, "spec": spec}))
    measured = []
    for i in range(pods):
        p = pod("pod-gang", i, cpu="3970m", priority_class="gang", grace=0)
        p["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{i // size}"}
        measured.append(p)
    config = default_config()
    config.feature_gates = FeatureGates.parse("GenericWorkload=true")
    result = run_workload(nodes, init, measured, objects, config=config)
    result["pod_groups"] = groups
    result["pods_per_group"] = size
    return result


def _priority_class(name: str, value: int) -> tuple[str, dict[str, Any]]:
    return ("PriorityClass", {"metadata": {"name": name}, "value": value})


def _gang(name: str, size: int, priority_class: str) -> tuple[str, dict[str, Any]]:
    """``templates/podgroup.yaml``: a gang of minCount ``size`` (its priority from the class)."""
    spec = {"priorityClassName": priority_class, "schedulingPolicy": {"gang": {"minCount": size}}}
    meta = {"name": name, "namespace": "default"}
    return ("PodGroup", {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec})


def _gang_config() -> SchedulerConfig:
    from kubesched.features import FeatureGates

    config = default_config()
    config.feature_gates = FeatureGates.parse("GenericWorkload=true")
    return config


def gang_preemption_pod_groups(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``GangPreemptionPodGroups``: gangs preempting gangs. ``init_pods`` low-priority pods (1000)
    in gangs of ``--pods-per-group``, 600m each, one hostPort per gang (8000 + gang) so that a
    gang's pods take different nodes; then the measured high-priority gangs (9999999) of 3500m
    with hostPorts 9000 + gang, each pod's room made by evicting whole low gangs."""
    size = POD_GROUP_SIZE["size"]
    objects = [_priority_class("low", 1000), _priority_class("high", 9999999)]
    init, measured = [], []
    for prefix, count, cpu, cls, port, out in (
        ("low", init_pods, "600m", "low", 8000, init),
        ("high", pods, "3500m", "high", 9000, measured),
    ):
        for g in range(-(-count // size)):
            objects.append(_gang(f"{prefix}-gang-{g}", size, cls))
        for i in range(count):
            p = pod(f"{prefix}-pod-gang", i, cpu=cpu, priority_class=cls, grace=0)
            p["spec"]["schedulingGroup"] = {"podGroupName": f"{prefix}-gang-{i // size}"}
            p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": port + i // size}]
            out.append(p)
    result = run_workload(nodes, init, measured, objects, config=_gang_config())
    result["pods_per_group"] = size
    return result


AFFINITY_LABELS = {"app": "blue", "label1": "value1", "label2": "value2", "label3": "value3", "label4": "value4"}


def gang_preemption_affinity(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
    """``GangPreemptionAffinity``: a high-priority 10m anchor pod on every node and ``init_pods``
    low-priority 40m pods spread evenly (hostPorts), all labelled app=blue and four more labels; then
    gangs of 3970m pods requiring pod affinity to those labels on the same hostname (any
    namespace), each pod evicting a node's low pods but never its anchor."""
    size = POD_GROUP_SIZE["size"]
    objects = [GANG_PRIORITY, _priority_class("anchor", 9999999)]
    per_node = max(init_pods // max(nodes, 1), 1)
    init = []
    for i in range(nodes):
        p = pod("pod-anchor", i, cpu="10m", priority_class="anchor", grace=0)
        p["metadata"]["labels"] = dict(AFFINITY_LABELS)
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 7000}]
        init.append(p)
    for i in range(init_pods):
        p = pod("pod-low-priority", i, cpu="40m", grace=0)
        p["metadata"]["labels"] = dict(AFFINITY_LABELS)
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8000 + i % per_node}]
        init.append(p)
    for g in range(-(-pods // size)):
        objects.append(_gang(f"gang-{g}", size, "gang"))
    term = {"labelSelector": {"matchLabels": AFFINITY_LABELS}, "topologyKey": HOST, "namespaceSelector": {}}
    measured = []
    for i in range(pods):
        p = pod("pod-gang", i, cpu="3970m", priority_class="gang", grace=0)
        p["spec"]["schedulingGroup"] = {"podGroupName": f"gang-{i // size}"}
        p["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        measured.append(p)
    result = run_workload(nodes, init, measured, objects, config=_gang_config())
    result["pods_per_group"] = size
    return result


# -- podgroup/{gangscheduling,basicscheduling}/performance-config.yaml (GenericWorkload) ---------
POD_GROUP_SIZE = {"size": 3}  # --pods-per-group: podsPerGroup


def pod_group_workload(policy: str) -> Callable[[int, int, int], dict[str, Any]]:
    """``GangScheduling`` / ``BasicScheduling``: PodGroups of ``podsPerGroup`` pods (a gang of
    minCount podsPerGroup, or basic), created before their pods (100m, ``templates/gang-pod.yaml``),
    GenericWorkload on; every pod measured."""

    def run(nodes: int, pods: int, init_pods: int) -> dict[str, Any]:
        from kubesched.features import FeatureGates

        size = POD_GROUP_SIZE["size"]
        groups = -(-pods // size)
        schedule: dict[str, Any] = {"gang": {"minCount": size}} if policy == "gang" else {"basic": {}}
        objects = [
            (
                "PodGroup",
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": f"{policy}-{g}", "namespace": "default"},
                    "spec": {"schedulingPolicy": schedule},
                },
            )
            for g in range(groups)
        ]
        measured = []
        for i in range(pods):
            p = pod(f"test-{policy}-scheduling", i)
            p["spec"]["schedulingGroup"] = {"podGroupName": f"{policy}-{i // size}"}
            measured.append(p)
        config = default_config()
        config.feature_gates = FeatureGates.parse("GenericWorkload=true")
        result = run_workload(nodes, [], measured, objects, config=config)
        result["pod_groups"] = groups
        result["pods_per_group"] = size
        return result

    return run


WORKLOADS = {
    "SchedulingBasic": scheduling_basic,
    "GangScheduling": pod_group_workload("gang"),
    "BasicScheduling": pod_group_workload("basic"),
    "GangPreemptionBasic": gang_preemption_basic,
    "GangPreemptionPodGroups": gang_preemption_pod_groups,
    "GangPreemptionAffinity": gang_preemption_affinity,
    "SchedulingBasicWithExtender": scheduling_basic_extender,
    "SchedulingPodAntiAffinity": affinity_workload("anti"),
    "SchedulingPodAffinity": affinity_workload("affinity", zones=1),
    "SchedulingPreferredPodAffinity": affinity_workload("preferred"),
    "SchedulingPreferredPodAntiAffinity": affinity_workload("preferred-anti"),
    "TopologySpreading": topology_spreading,
    "PreferredTopologySpreading": preferred_topology_spreading,
    "DefaultTopologySpreading": default_topology_spreading,
    "PreemptionBasic": preemption_basic,
    "PreemptionAsync": preemption_async,
    "SchedulingDaemonset": scheduling_daemonset,
    "Unschedulable": unschedulable,
    "SchedulingWithExtendedResource": scheduling_with_extended_resource,
    "SchedulingWhileGated": scheduling_while_gated,
    "NodeDeclaredFeatures20": node_declared_features(20),
    "NodeDeclaredFeatures40": node_declared_features(40),
    "NodeDeclaredFeatures100": node_declared_features(100),
    "SchedulingDeletedPodsWithFinalizers": deleted_pods_with_finalizers,
    "SchedulingNodeAffinity": scheduling_node_affinity,
    "SchedulingPodMatchingAntiAffinity": pod_matching_anti_affinity,
    "MixedSchedulingBasePod": mixed_scheduling_base_pod,
    "SchedulingRequiredPodAntiAffinityWithNSSelector": ns_selector_workload("required-anti", 40),
    "SchedulingPreferredAntiAffinityWithNSSelector": ns_selector_workload("preferred-anti", 40),
    "SchedulingRequiredPodAffinityWithNSSelector": ns_selector_workload("required-affinity", 50, zones=1),
    "SchedulingPreferredAffinityWithNSSelector": ns_selector_workload("preferred-affinity", 50),
    "SchedulingGatedPodsWithPodAffinityImpactForThroughput": gated_pods_with_pod_affinity,
    "SchedulingWithNodeInclusionPolicy": node_inclusion_policy,
    "SchedulingWithMixedChurn": mixed_churn,
    "HostPortConflict": batching_workload("hostport"),
    "ResourceSaturation": batching_workload("saturation"),
    "SchedulingInTreePVs": volumes_workload("aws", csi_nodes=False),
    "SchedulingMigratedInTreePVs": volumes_workload("aws", csi_nodes=True, migrated=True),
    "SchedulingCSIPVs": volumes_workload("csi", csi_nodes=True),
}
DEFAULT_INIT = {  # init pods per node
    "PreemptionBasic": 4,
    "PreemptionAsync": 4,
    "TopologySpreading": 1,
    "SchedulingPodAffinity": 1,
    "SchedulingPreferredPodAffinity": 1,
    "SchedulingPreferredPodAntiAffinity": 1,
    "PreferredTopologySpreading": 1,
    "DefaultTopologySpreading": 1,
    "SchedulingNodeAffinity": 1,
    "HostPortConflict": 0,
    "ResourceSaturation": 0,
}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median pods/s, with every run's pods/s (and ratio to the bare port, whose
    median is the one given) when there were several."""
    if len(runs) == 1:
        return runs[0]
    ordered = sorted(runs, key=lambda r: r["pods_per_second"])
    out = dict(ordered[(len(ordered) - 1) // 2])
    out["runs_pods_per_second"] = [r["pods_per_second"] for r in runs]
    if all("ratio_to_bare_port" in r for r in runs):
        ratios = sorted(r["ratio_to_bare_port"] for r in runs)
        out["runs_ratio_to_bare_port"] = [r["ratio_to_bare_port"] for r in runs]
        out["ratio_to_bare_port"] = ratios[(len(ratios) - 1) // 2]
        out["runs_bare_port_pods_per_second"] = [r["bare_port_pods_per_second"] for r in runs]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--init-pods", type=int, default=None)
    parser.add_argument("--signature-batch-size", type=int, default=20000, help="HostPortConflict, ResourceSaturation")
    parser.add_argument("--feature-gates", default="", help="e.g. OpportunisticBatching=false")
    parser.add_argument("--pods-per-group", type=int, default=3, help="GangScheduling, BasicScheduling: podsPerGroup")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs in this process, the bare port's alternating with kubesched's where there is one; "
        "the median run is printed, with every run's pods/s and ratio (a shared VM's minutes differ)",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    gc_settings.tune()  # as the kubesched command does before running anything
    BATCHING.update(signature_batch_size=args.signature_batch_size, feature_gates=args.feature_gates)
    POD_GROUP_SIZE.update(size=args.pods_per_group)
    if args.init_pods is not None:
        init = args.init_pods
    elif args.workload in DEFAULT_INIT:
        init = DEFAULT_INIT[args.workload] * args.nodes
    else:
        init = min(1000, args.nodes // 5)
    result = median_run([WORKLOADS[args.workload](args.nodes, args.pods, init) for _ in range(args.repeat)])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "workload": args.workload,
                "nodes": args.nodes,
                "pods": args.pods,
                **result,
                "peak_rss_mib": round(peak, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
