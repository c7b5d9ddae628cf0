"""NodeResourcesFit / BalancedAllocation tables, after upstream's fit_test.go and scoring tests."""

import numpy as np
import pytest

from helpers import make_node, make_pod, pod, table
from kubesched.api.node import node_info_from
from kubesched.api.pod import pod_info_from
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Code
from kubesched.scheduler.plugins.noderesources.balanced_allocation import NodeResourcesBalancedAllocation
from kubesched.scheduler.plugins.noderesources.fit import NodeResourcesFit

# TestEnoughRequests: node cpu 10m, memory 20, pods 32, example.com/aaa 5; one existing pod.
NODE = make_node("n", cpu="10m", memory="20", pods="32", extra={"example.com/aaa": "5"})


def verdict(existing: dict, incoming: dict) -> tuple[int, tuple[str, ...]]:
    t = table([NODE], [make_pod("old", node="n", **existing)])
    p = pod_info_from(make_pod("new", **incoming))
    v = NodeResourcesFit().filter_nodes(CycleState(), p, t)
    if v is None:
        return 0, ()
    return int(v.code[0]), v.describe(v.reason_at(0))


ENOUGH_REQUESTS_CASES = [
    (
        dict(cpu="10m", memory="20"),
        dict(cpu="1m", memory="1"),
        Code.UNSCHEDULABLE,
        ("Insufficient cpu", "Insufficient memory"),
    ),
    (
        dict(cpu="8m", memory="19"),
        dict(cpu="1m", memory="1", inits=[{"name": "i", "resources": {"requests": {"cpu": "3m", "memory": "1"}}}]),
        Code.UNSCHEDULABLE,
        ("Insufficient cpu",),
    ),
    (
        dict(cpu="9m", memory="19"),
        dict(cpu="1m", memory="1", inits=[{"name": "i", "resources": {"requests": {"cpu": "1m", "memory": "1"}}}]),
        0,
        (),
    ),
    (dict(cpu="5m", memory="19"), dict(cpu="5m", memory="1"), 0, ()),
    (
        {},
        dict(extra={"example.com/aaa": "10"}),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ("Insufficient example.com/aaa",),
    ),
    (
        dict(extra={"example.com/aaa": "5"}),
        dict(extra={"example.com/aaa": "1"}),
        Code.UNSCHEDULABLE,
        ("Insufficient example.com/aaa",),
    ),
]


@pytest.mark.parametrize(("existing", "incoming", "code", "reasons"), ENOUGH_REQUESTS_CASES)
def test_enough_requests(existing: dict, incoming: dict, code: int, reasons: tuple) -> None:
    assert verdict(existing, incoming) == (code, reasons)


def test_too_many_pods_comes_first_and_is_resolvable() -> None:
    t = table([make_node("n", pods="1")], [make_pod("old", node="n")])
    v = NodeResourcesFit().filter_nodes(CycleState(), pod("new", cpu="100m"), t)
    assert v is not None and int(v.code[0]) == Code.UNSCHEDULABLE
    assert v.describe(v.reason_at(0)) == ("Too many pods",)


@pytest.mark.parametrize("kinds", [2, 9], ids=["few resources", "more than seven"])
def test_each_short_resource_is_named_in_the_requests_order(kinds: int) -> None:
    """The Filter's reason bits, one per requested resource (bit 0: too many pods), built in
    bytes for up to seven resources and in 64-bit words beyond: each node names just the
    resources it lacks, in upstream's order (cpu, memory, then the extended ones by name)."""
    names = [f"example.com/r{i}" for i in range(kinds)]
    nodes = [
        make_node("all", cpu="1", memory="1Gi", pods="1", extra=dict.fromkeys(names, "1")),
        make_node("last", cpu="1", memory="1Gi", extra={n: "1" for n in names[:-1]} | {names[-1]: "0"}),
        make_node("odd", cpu="100m", memory="1Gi", extra={n: "1" if i % 2 == 0 else "0" for i, n in enumerate(names)}),
    ]
    t = table(nodes, [make_pod("old", node="all")])
    v = NodeResourcesFit().filter_nodes(CycleState(), pod("new", cpu="500m", extra=dict.fromkeys(names, "1")), t)
    assert v is not None
    assert v.describe(v.reason_at(0)) == ("Too many pods",)
    assert v.describe(v.reason_at(1)) == (f"Insufficient {names[-1]}",)
    assert v.describe(v.reason_at(2)) == ("Insufficient cpu", *(f"Insufficient {n}" for n in names[1::2]))
    assert v.code.tolist() == [
        Code.UNSCHEDULABLE,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
    ]


def test_a_node_whose_allocatable_is_below_the_request_is_unresolvable_as_nodes_change() -> None:
    """fitsRequest: a request above a node's allocatable cannot be helped by preemption. The
    filter keeps each resource's least allocatable while the nodes stand, so one plugin meeting
    the same table before and after a node shrinks (and grows back) must see each change."""
    plugin = NodeResourcesFit()
    t = table([make_node("small", cpu="3", memory="1Gi"), make_node("big", cpu="4", memory="8Gi")])
    t.add_pod(t.index["big"], pod_info_from(make_pod("old", node="big", cpu="3500m")))
    incoming = pod("new", cpu="2", memory="1Mi")

    def codes() -> list[int]:
        v = plugin.filter_nodes(CycleState(), incoming, t)
        assert v is not None
        return v.code.tolist()

    assert codes() == [0, Code.UNSCHEDULABLE]
    t.update_node(node_info_from(make_node("big", cpu="1500m", memory="8Gi")))
    assert codes() == [0, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    t.update_node(node_info_from(make_node("big", cpu="4", memory="8Gi")))
    assert codes() == [0, Code.UNSCHEDULABLE]
    other = table([make_node("tiny", cpu="1", memory="1Gi")])  # another table: its own least
    v = plugin.filter_nodes(CycleState(), incoming, other)
    assert v is not None and v.code.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE]


def test_ignored_resource_groups_are_not_checked() -> None:
    plugin = NodeResourcesFit({"ignoredResourceGroups": ["example.com"]})
    t = table([make_node("n")])
    assert plugin.filter_nodes(CycleState(), pod("p", extra={"example.com/aaa": "1"}), t) is None


def scores(plugin, nodes, p) -> list[int]:
    t = table(nodes)
    rows = np.arange(t.n)
    return plugin.score_nodes(CycleState(), p, t, rows).tolist()


def test_least_and_most_allocated_scores() -> None:
    nodes = [make_node("n1", cpu="4", memory="10000"), make_node("n2", cpu="6", memory="10000")]
    p = pod("p", cpu="3", memory="5000")
    assert scores(NodeResourcesFit(), nodes, p) == [37, 50]
    assert scores(NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated"}}), nodes, p) == [62, 50]


def test_requested_to_capacity_ratio_follows_the_shape() -> None:
    args = {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
        }
    }
    nodes = [make_node("n1", cpu="4", memory="10000")]
    # cpu 3/4 → util 75 → 100 - 75 = 25; memory 5000/10000 → 50; mean 37.5 → round → 38
    assert scores(NodeResourcesFit(args), nodes, pod("p", cpu="3", memory="5000")) == [38]


def _rtcr(resources: list[dict], shape: list[dict]) -> NodeResourcesFit:
    return NodeResourcesFit(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": resources,
                "requestedToCapacityRatio": {"shape": shape},
            }
        }
    )


RTCR_CASES = [
    # cpu 3/4 → 75, memory 5000/10000 → 50 under a rising shape (score = utilization)
    ([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}], [63]),  # 62.5 rounds half up
    ([{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}], [69]),  # 275 / 4 = 68.75
    ([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 3}], [56]),  # 225 / 4 = 56.25
    # an extended resource the pod does not request is left out of the weighted mean
    (
        [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}],
        [63],
    ),
]


@pytest.mark.parametrize(("resources", "expected"), RTCR_CASES)
def test_requested_to_capacity_ratio_weights_resources(resources: list[dict], expected: list[int]) -> None:
    rising = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    nodes = [make_node("n1", cpu="4", memory="10000", extra={"nvidia.com/gpu": "4"})]
    assert scores(_rtcr(resources, rising), nodes, pod("p", cpu="3", memory="5000")) == expected


def test_requested_to_capacity_ratio_counts_a_requested_extended_resource() -> None:
    rising = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    fit = _rtcr([{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 3}], rising)
    nodes = [make_node("n1", cpu="4", extra={"nvidia.com/gpu": "4"}), make_node("n2", cpu="4")]
    # n1: cpu 25, gpu 2/4 → 50: (25 + 150) / 4 = 43.75 → 44. n2 has no gpu: cpu only → 25.
    assert scores(fit, nodes, pod("p", cpu="1", extra={"nvidia.com/gpu": "2"})) == [44, 25]


def test_balanced_allocation_scores_the_change_in_balance() -> None:
    nodes = [make_node("n1", cpu="4", memory="10000"), make_node("n2", cpu="6", memory="10000")]
    assert scores(NodeResourcesBalancedAllocation(), nodes, pod("p", cpu="3", memory="5000")) == [68, 75]


def test_balanced_allocation_prefers_the_node_the_pod_rebalances() -> None:
    t = table(
        [make_node("n1", cpu="4", memory="4"), make_node("n2", cpu="4", memory="4")],
        [make_pod("a", cpu="1", memory="1", node="n1"), make_pod("b", memory="2", node="n2")],
    )
    got = NodeResourcesBalancedAllocation().score_nodes(CycleState(), pod("p", cpu="2", memory="1"), t, np.arange(2))
    assert got.tolist() == [68, 81]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    st = NodeResourcesBalancedAllocation().pre_score(CycleState(), pod("p"), table([make_node("n")]), np.arange(1))
    assert st is not None and st.code == Code.SKIP


# isSchedulableAfterNodeChange (fit.go): (pod's requests, the node before (None: added), after, Queue?)
NODE_CHANGE_HINTS = [
    pytest.param({"cpu": "1"}, None, {"cpu": "2"}, True, id="added, fits"),
    pytest.param({"cpu": "3"}, None, {"cpu": "2"}, False, id="added, too small"),
    pytest.param({"cpu": "1"}, {"cpu": "2"}, {"cpu": "2"}, False, id="updated, nothing grew (a cordon, a taint)"),
    pytest.param({"cpu": "1"}, {"cpu": "2"}, {"cpu": "4"}, True, id="updated, its cpu grew"),
    pytest.param(
        {"cpu": "1"},
        {"cpu": "2", "memory": "1Gi"},
        {"cpu": "2", "memory": "8Gi"},
        False,
        id="grew what it does not ask",
    ),
    pytest.param({"cpu": "1"}, {"cpu": "2", "pods": "3"}, {"cpu": "2", "pods": "4"}, True, id="more pods allowed"),
    pytest.param({"cpu": "3"}, {"cpu": "2"}, {"cpu": "2500m"}, False, id="grew, still too small"),
]


@pytest.mark.parametrize(("requests", "before", "after", "queue"), NODE_CHANGE_HINTS)
def test_a_node_change_requeues_only_when_it_may_make_the_pod_fit(requests, before, after, queue):
    hint = next(
        r.hint for r in NodeResourcesFit().events_to_register() if r.event.resource == "Node" and r.hint is not None
    )

    def spec(alloc: dict | None):
        if alloc is None:
            return None
        cpu = alloc.get("cpu", "4")
        return node_info_from(
            make_node("n", cpu=cpu, memory=alloc.get("memory", "32Gi"), pods=alloc.get("pods", "110"))
        )

    assert hint(pod("p", **requests), spec(before), spec(after)) is queue
