"""The shape cache (``framework/shape_cache.py``): the same decisions as filtering and scoring
every node in every cycle, with fewer plugin runs; and the pods it must leave alone."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, NodeVerdicts, SignFragment, SignPlugin
from kubesched.framework.status import Status
from kubesched.scheduler import nodetable
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.testing import Cluster

# one search covers 100 of 300+ nodes: the cache applies (nodesearch/shapes.py: SHAPE_MIN_SEARCHES_PER_LAP)
TEN_PERCENT = {"percentageOfNodesToScore": 10}


def node(
    i: int,
    *,
    cpu: int = 4,
    pods: int = 110,
    zone: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    all_labels = {"kubernetes.io/hostname": f"n{i:03d}", **(labels or {})}
    if zone is not None:
        all_labels["topology.kubernetes.io/zone"] = zone
    alloc = {"cpu": str(cpu), "memory": "32Gi", "pods": str(pods)}
    spec: dict[str, Any] = {"taints": taints or []}
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i:03d}", "labels": all_labels},
        "spec": spec,
        "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, cpu: str = "100m", labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"containers": [container], **spec},
    }


def required_anti(app: str, topology_key: str, selects: str) -> dict[str, Any]:
    """Labels app=``app`` and a required anti-affinity term against app=``selects`` per ``topology_key``."""
    term = {"topologyKey": topology_key, "labelSelector": {"matchLabels": {"app": selects}}}
    return {
        "labels": {"app": app},
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }


def bound(obj: dict[str, Any], node_name: str) -> dict[str, Any]:
    return {**obj, "spec": {**obj["spec"], "nodeName": node_name}}


# pod shapes the property test draws from: plain, tolerating the NoSchedule taint, a nodeSelector,
# a preferred node affinity, a host port (few per node), labels a Service selects (default
# spreading applies: not cacheable), explicit spread constraints, pod anti-affinity
SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("500m", {}),
    ("1", {"tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}),
    ("250m", {"nodeSelector": {"disk": "ssd"}}),
    (
        "750m",
        {
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 7, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
                    ]
                }
            }
        },
    ),
    ("100m", {"containers": None, "ports": 8080}),
    ("300m", {"labels": {"app": "web"}}),
    (
        "200m",
        {
            "labels": {"app": "spread"},
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ],
        },
    ),
    ("150m", required_anti("lonely", "kubernetes.io/hostname", "lonely")),
    ("150m", {"labels": {"app": "lonely"}}),  # no terms, but the pods above keep it off their nodes
    ("150m", required_anti("zonal", "topology.kubernetes.io/zone", "z")),
    ("150m", {"labels": {"app": "z"}}),  # kept out of whole zones by the pods above: not cacheable
]


def shaped_pod(name: str, shape: int) -> dict[str, Any]:
    cpu, extra = SHAPES[shape]
    extra = dict(extra)
    labels = extra.pop("labels", None)
    port = extra.pop("ports", None)
    extra.pop("containers", None)
    obj = pod(name, cpu, labels, **extra)
    if port is not None:
        obj["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return obj


WEB_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def cluster_nodes(seed: int, n: int, zones: int) -> list[dict[str, Any]]:
    """``n`` nodes drawn from ``seed``: 1, 2 or 4 CPUs, 3 or 110 pods; some labelled disk=ssd,
    some tainted NoSchedule or PreferNoSchedule, some cordoned; in ``zones`` zones (0: none)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = rng.randrange(20)
        out.append(
            node(
                i,
                cpu=rng.choice([1, 2, 4]),
                pods=rng.choice([3, 110]),
                zone=f"z{i % zones}" if zones else None,
                labels={"disk": "ssd"} if kind in (1, 2, 3) else None,
                taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
                if kind == 4
                else [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]
                if kind == 6
                else None,
                unschedulable=kind == 5,
            )
        )
    return out


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pods"), st.integers(0, len(SHAPES) - 1), st.integers(1, 60)),
        st.tuples(st.just("delete"), st.integers(0, 10_000), st.just(0)),
        st.tuples(st.just("label"), st.integers(0, 299), st.just(0)),
    ),
    min_size=1,
    max_size=8,
)


def run(
    nodes: list[dict[str, Any]], steps: list[tuple[str, int, int]], cache: bool
) -> tuple[dict[str, str | None], list[str], Cluster]:
    c = Cluster(*copy.deepcopy(nodes), copy.deepcopy(WEB_SERVICE), config=TEN_PERCENT)
    c.sched.algorithm.search.use_shape_cache = cache
    made: list[str] = []
    for what, a, b in steps:
        if what == "pods":
            for _ in range(b):
                name = f"p{len(made):04d}"
                made.append(name)
                c.create(shaped_pod(name, a))
        elif what == "delete" and made:
            name = made[a % len(made)]
            if c.store.try_get("Pod", "default", name) is not None:
                c.store.delete("Pod", "default", name, 0)
        elif what == "label":
            obj = copy.deepcopy(c.store.get("Node", "", f"n{a % len(nodes):03d}"))
            obj["metadata"]["labels"]["disk"] = "ssd"
            c.store.update("Node", obj)
        c.settle()
    placed = {}
    for name in made:
        obj = c.store.try_get("Pod", "default", name)
        placed[name] = None if obj is None else (obj.get("spec") or {}).get("nodeName")
    return placed, c.events("FailedScheduling"), c


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(300, 340),
    zones=st.sampled_from([0, 0, 2, 3]),
    steps=STEPS,
)
def test_same_decisions_with_and_without_the_cache(
    seed: int, n: int, zones: int, steps: list[tuple[str, int, int]]
) -> None:
    """Random clusters (zones, taints, full and cordoned nodes) and pods of several shapes, with
    deletions and node updates between them: the cache changes no placement and no message."""
    nodes = cluster_nodes(seed, n, zones)
    with_cache, failed_with, c = run(nodes, steps, True)
    without, failed_without, _ = run(nodes, steps, False)
    assert with_cache == without
    assert failed_with == failed_without
    first = next((a for what, a, _ in steps if what == "pods"), None)
    if first is not None and first <= 4:  # a cacheable shape comes first (no anti-affinity pod yet)
        assert c.sched.profiles["default-scheduler"].shape_cache.searches > 0


def test_a_node_filled_since_is_seen_after_a_lap() -> None:
    """300 nodes taking one 1-CPU pod each: the searches go round, and a later lap finds every
    node it covers already full (refreshed from the change log), so pods keep spreading to the
    free nodes and the 301st pod fails with every node's reason."""
    c = Cluster(*[node(i, cpu=1) for i in range(300)], config=TEN_PERCENT)
    fwk = c.sched.profiles["default-scheduler"]
    for i in range(301):
        c.create(pod(f"p{i:03d}", "1"))
    c.settle()
    hosts = [c.node_of(f"p{i:03d}") for i in range(300)]
    assert sorted(hosts) == [f"n{i:03d}" for i in range(300)]  # type: ignore[type-var]
    assert c.node_of("p300") is None
    assert c.events("FailedScheduling") == [
        "0/300 nodes are available: 300 Insufficient cpu. preemption: "
        "0/300 nodes are available: 300 No preemption victims found for incoming pod."
    ]
    assert fwk.shape_cache.built == 1
    assert fwk.shape_cache.refreshed >= 2
    assert fwk.shape_cache.searches == 300


def test_a_cut_change_log_drops_the_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The change log is cut when it grows past a limit. An entry computed before the cut can no
    longer tell which rows changed, even once the log has grown past its place again: it is
    dropped and computed afresh."""
    monkeypatch.setattr(nodetable, "CHANGE_LOG_LIMIT", -280)  # cut beyond 20 changes on 300 nodes
    c = Cluster(*[node(i) for i in range(300)], config=TEN_PERCENT)
    fwk = c.sched.profiles["default-scheduler"]
    c.create(pod("first"))
    c.settle()
    ((shape, entry),) = fwk.shape_cache._entries.items()
    table = c.sched.cache.table
    for row in range(40):  # past the cut, then past the entry's place in the log again
        table._log_change(row)
    assert len(table.changed) > entry.log_pos
    assert fwk.shape_cache.get(shape, table) is None
    c.create(pod("second"))
    c.settle()
    assert fwk.shape_cache.built == 2


def test_a_node_update_drops_the_entries() -> None:
    c = Cluster(*[node(i) for i in range(300)], config=TEN_PERCENT)
    fwk = c.sched.profiles["default-scheduler"]
    c.create(pod("a"))
    c.settle()
    assert len(fwk.shape_cache) == 1
    obj = c.store.get("Node", "", "n000")
    obj["spec"]["taints"] = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    c.store.update("Node", obj)
    c.create(pod("b"))
    c.settle()
    assert fwk.shape_cache.built == 2


@pytest.mark.parametrize(
    ("name", "obj", "extra", "cached"),
    [
        ("plain pod", pod("x"), [], True),
        ("a Service selects it: default spreading", pod("x", labels={"app": "web"}), [WEB_SERVICE], False),
        ("labels no Service selects", pod("x", labels={"app": "other"}), [WEB_SERVICE], True),
        ("explicit spread constraint", shaped_pod("x", 6), [], False),
        ("required pod anti-affinity", shaped_pod("x", 7), [], False),
        (
            "an existing pod's preferred affinity term",
            pod("x"),
            [
                bound(
                    pod(
                        "old",
                        affinity={
                            "podAffinity": {
                                "preferredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "weight": 1,
                                        "podAffinityTerm": {
                                            "topologyKey": "kubernetes.io/hostname",
                                            "labelSelector": {"matchLabels": {"app": "x"}},
                                        },
                                    }
                                ]
                            }
                        },
                    ),
                    "n001",
                )
            ],
            False,
        ),
        ("a resource claim", pod("x", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu"}]), [], False),
        (
            "an existing pod's anti-affinity per hostname selects it",
            shaped_pod("x", 8),
            [bound(shaped_pod("old", 7), "n001")],
            True,
        ),
        (
            "an existing pod's anti-affinity per zone selects it",
            shaped_pod("x", 10),
            [bound(shaped_pod("old", 9), "n001")],
            False,
        ),
    ],
)
def test_which_pods_have_a_shape(name: str, obj: dict[str, Any], extra: list[dict[str, Any]], cached: bool) -> None:
    """After PreFilter, a pod has a shape only when no plugin reads more than each node's row."""
    c = Cluster(*[node(i, zone="z1") for i in range(3)], *extra)
    c.settle()
    fwk = c.sched.profiles["default-scheduler"]
    info = c.sched._parse_pod(obj)
    state = CycleState()
    fwk.run_pre_filter(state, info, c.sched.cache.table)
    assert (fwk.signer.shape_of(state, info) is not None) is cached, name


class _Unsigned(FilterPlugin):
    name = "Unsigned"

    def filter_nodes(self, state: CycleState, pod: Any, nodes: Any) -> NodeVerdicts | None:
        return None


class _SignsOnly(FilterPlugin, SignPlugin):
    """Signs pods (batching may use it) but does not promise to read only the node's row."""

    name = "SignsOnly"

    def filter_nodes(self, state: CycleState, pod: Any, nodes: Any) -> NodeVerdicts | None:
        return None

    def sign_pod(self, pod: Any) -> tuple[list[SignFragment], Status | None]:
        return [], None


@pytest.mark.parametrize("plugin", [_Unsigned, _SignsOnly])
def test_a_plugin_without_a_row_promise_keeps_the_profile_off_the_cache(plugin: type) -> None:
    registry = in_tree_registry()
    registry[plugin.name] = plugin
    plugins = {"filter": {"enabled": [{"name": plugin.name}]}}
    config = {"profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}
    c = Cluster(*[node(i) for i in range(300)], config={**config, **TEN_PERCENT}, registry=registry)
    fwk = c.sched.profiles["default-scheduler"]
    assert fwk.signer.shape_static is None
    c.create(pod("a"))
    c.settle()
    assert c.node_of("a") is not None
    assert fwk.shape_cache.searches == 0


def test_a_changed_row_keeps_the_verdicts_that_read_only_the_node() -> None:
    """A refresh re-runs only the filters that read the pods on a node: the big tainted node
    that a tolerating pod took stays rejected for plain pods, though it now fits and would score
    best."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [node(i, cpu=64 if i == 1 else 4, taints=taint if i == 1 else None) for i in range(300)]
    c = Cluster(*nodes, config=TEN_PERCENT)
    fwk = c.sched.profiles["default-scheduler"]
    c.create(pod("first"))
    c.settle()
    tolerating = pod(
        "tolerating",
        tolerations=[{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        nodeSelector={"kubernetes.io/hostname": "n001"},
    )
    c.create(tolerating)
    c.settle()
    assert c.node_of("tolerating") == "n001"
    for i in range(12):  # four laps round the 300 nodes, 100 at a time
        c.create(pod(f"plain-{i}"))
    c.settle()
    assert fwk.shape_cache.refreshed >= 1
    assert all(c.node_of(f"plain-{i}") not in (None, "n001") for i in range(12))


def test_a_score_the_same_on_every_node_is_normalized_again_once_a_freed_node_differs() -> None:
    """TaintToleration scores every passing node alike while the only PreferNoSchedule-tainted
    node is full; once its pod goes, that node passes with a different raw score, and the cache
    must normalize TaintToleration again (else the big tainted node would score best)."""
    soft = [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}]
    nodes = [
        node(i, cpu=64 if i == 5 else 4, pods=1 if i == 5 else 110, taints=soft if i == 5 else None) for i in range(300)
    ]
    c = Cluster(*nodes, bound(pod("occupant"), "n005"), config=TEN_PERCENT)
    fwk = c.sched.profiles["default-scheduler"]
    c.create(pod("first"))
    c.settle()
    assert fwk.shape_cache.built == 1
    c.store.delete("Pod", "default", "occupant", 0)
    c.settle()
    for i in range(12):  # four laps round the 300 nodes, 100 at a time
        c.create(pod(f"plain-{i}"))
    c.settle()
    assert fwk.shape_cache.refreshed >= 1
    assert all(c.node_of(f"plain-{i}") not in (None, "n005") for i in range(12))
