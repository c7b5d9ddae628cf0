"""The framework runtime and the cycle around it: node search rotation, MultiPoint expansion,
Permit waits, nominated pods in filtering."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import make_node, make_pod, make_priority_class, make_waiting_nominated
from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import FilterPlugin, NodeVerdicts, PermitPlugin, PerNodeScorePlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.nodesearch import num_feasible_nodes_to_find
from kubesched.scheduler.plugins import in_tree_registry
from kubesched.testing import Cluster


# schedule_one_test.go TestNumFeasibleNodesToFind
@pytest.mark.parametrize(
    ("percentage", "nodes", "want"),
    [
        (0, 10, 10),
        (40, 10, 10),
        (0, 1000, 420),
        (40, 1000, 400),
        (0, 6000, 300),
        (40, 6000, 2400),
        (10, 500, 100),  # never fewer than 100 nodes
        (100, 5000, 5000),
        (0, 5000, 500),  # 50 − 5000/125 = 10%
        (0, 100, 100),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, want: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == want


def test_node_search_rotates_from_where_the_last_cycle_stopped() -> None:
    # 200 nodes: the adaptive percentage gives 100 feasible nodes to find per cycle.
    nodes = [make_node(f"n{i:03d}", unschedulable=i < 50) for i in range(200)]
    c = Cluster(*nodes)
    c.create(make_pod("a", cpu="100m"))
    c.settle()
    # 50 unschedulable nodes were processed before the 100 feasible ones were found.
    assert c.sched.algorithm.search.next_start_node_index == 150
    c.create(make_pod("b", cpu="100m"))
    c.settle()
    # starts at n150: 50 feasible, then 50 infeasible (n000-n049), then 50 feasible.
    assert c.sched.algorithm.search.next_start_node_index == (150 + 150) % 200


def test_node_search_follows_node_tree_order_across_zones() -> None:
    # nodeTree order interleaves zones a, b, c; all of zone a (created first) is unschedulable.
    # 100 feasible nodes are found after 150 nodes in that order (200 in creation order).
    zone = "topology.kubernetes.io/zone"
    nodes = [make_node(f"{z}{i:03d}", labels={zone: z}, unschedulable=z == "a") for z in "abc" for i in range(100)]
    c = Cluster(*nodes, config={"percentageOfNodesToScore": 1})
    assert c.sched.cache.table.order()[:3].tolist() == [0, 100, 200]
    c.create(make_pod("p", cpu="100m"))
    c.settle()
    assert c.sched.algorithm.search.next_start_node_index == 150
    assert c.node_of("p")[0] in "bc"


def test_profile_percentage_overrides_the_global_one() -> None:
    nodes = [make_node(f"n{i:03d}") for i in range(400)]
    cfg = {"percentageOfNodesToScore": 50, "profiles": [{"schedulerName": "default-scheduler"}]}
    c = Cluster(*nodes, config=cfg)
    c.create(make_pod("a", cpu="100m"))
    c.settle()
    assert c.sched.algorithm.search.next_start_node_index == 200
    cfg = {"percentageOfNodesToScore": 50, "profiles": [{"percentageOfNodesToScore": 30}]}
    c = Cluster(*nodes, config=cfg)
    c.create(make_pod("a", cpu="100m"))
    c.settle()
    assert c.sched.algorithm.search.next_start_node_index == 120


def _framework(config: dict) -> object:
    c = Cluster(make_node("n"), config=config)
    return c.sched.profiles["default-scheduler"]


def test_multipoint_overrides_keep_the_extension_points_order_and_weights() -> None:
    # runtime/framework.go expandMultiPointPlugins: plugins also named at the point come first,
    # in that point's order; then MultiPoint's; an explicit Score weight wins (0 means 1).
    fwk = _framework(
        {
            "profiles": [
                {
                    "plugins": {
                        "score": {"enabled": [{"name": "ImageLocality", "weight": 5}, {"name": "TaintToleration"}]}
                    }
                }
            ]
        }
    )
    names = [p.name for p in fwk.scores]
    assert names[:2] == ["ImageLocality", "TaintToleration"]
    assert names[2:] == [
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
    ]
    assert fwk.weights["DynamicResources"] == 2
    assert fwk.weights["ImageLocality"] == 5
    assert fwk.weights["TaintToleration"] == 1
    assert fwk.weights["NodeAffinity"] == 2


def test_disabling_a_multipoint_plugin_at_one_point_keeps_it_elsewhere() -> None:
    fwk = _framework({"profiles": [{"plugins": {"score": {"disabled": [{"name": "TaintToleration"}]}}}]})
    assert "TaintToleration" not in [p.name for p in fwk.scores]
    assert "TaintToleration" in [p.name for p in fwk.filters]


def test_star_disables_every_default_at_a_point_but_keeps_explicit_ones() -> None:
    fwk = _framework(
        {"profiles": [{"plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "ImageLocality"}]}}}]}
    )
    assert [p.name for p in fwk.scores] == ["ImageLocality"]
    assert len(fwk.filters) > 1


def test_multipoint_double_registration_is_an_error() -> None:
    cfg = {
        "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocality"}, {"name": "ImageLocality"}]}}}]
    }
    with pytest.raises(InputError, match='plugin "ImageLocality" already registered as "score"'):
        _framework(cfg)


class OutOfRange(PerNodeScorePlugin):
    name = "OutOfRange"

    def score(self, state: CycleState, pod: PodInfo, node_info: object) -> int:
        return 150


def test_a_score_outside_0_100_is_a_scheduler_error() -> None:
    registry = in_tree_registry()
    registry.register("OutOfRange", OutOfRange)
    cfg = {"profiles": [{"plugins": {"score": {"enabled": [{"name": "OutOfRange"}]}}}]}
    c = Cluster(make_node("n1"), make_node("n2"), config=cfg, registry=registry)
    c.create(make_pod("p", cpu="100m"))
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.last_message["default/p"] == (
        'applying score defaultWeights on Score plugins: plugin "OutOfRange" returns an invalid score 150, '
        "it should in the range of [0, 100] after normalizing"
    )


class Coded(FilterPlugin):
    """Rejects every node, node n2 with the code in the pod's ``code`` label."""

    name = "Coded"

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: object) -> NodeVerdicts:
        codes = np.full(len(nodes.names), np.int8(Code.UNSCHEDULABLE))  # type: ignore[attr-defined]
        codes[nodes.index["n2"]] = int(pod.labels["code"])  # type: ignore[attr-defined]
        return NodeVerdicts(codes, 0, lambda _id: ("coded",))


_REJECTED = "0/2 nodes are available: 2 coded. preemption: 0/2 nodes are available: "
_NOT_HELPFUL = "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (Code.UNSCHEDULABLE, _REJECTED + "2 No preemption victims found for incoming pod."),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, _REJECTED + _NOT_HELPFUL),
        (Code.PENDING, _REJECTED + _NOT_HELPFUL),
        (Code.ERROR, 'running "Coded" filter plugin: coded'),
        (Code.WAIT, 'running "Coded" filter plugin: coded'),
        (Code.SKIP, 'running "Coded" filter plugin: coded'),
    ],
)
def test_a_filter_verdict_that_is_no_rejection_is_an_error(code: Code, message: str) -> None:
    """RunFilterPlugins: a node's status other than Unschedulable, UnschedulableAndUnresolvable
    or Pending fails the cycle with an error naming the plugin (``framework.go``)."""
    registry = in_tree_registry()
    registry.register("Coded", Coded)
    cfg = {"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Coded"}]}}}]}
    c = Cluster(make_node("n1"), make_node("n2"), config=cfg, registry=registry)
    pod = make_pod("p", cpu="100m")
    pod["metadata"]["labels"] = {"code": str(int(code))}
    c.create(pod)
    c.settle()
    assert c.node_of("p") is None
    assert c.sched.last_message["default/p"] == message


class Gate(PermitPlugin):
    """Waits for pods labelled wait=<seconds>."""

    name = "Gate"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        wait = pod.labels.get("wait")
        return (Status(Code.WAIT), float(wait)) if wait else (None, 0.0)


def _gated_cluster(**gates: bool) -> Cluster:
    registry = in_tree_registry()
    registry.register("Gate", Gate)
    cfg: dict = {"profiles": [{"plugins": {"permit": {"enabled": [{"name": "Gate"}]}}}], "featureGates": gates}
    return Cluster(make_node("n", cpu="2"), config=cfg, registry=registry)


@pytest.mark.parametrize(("gate", "nominated"), [(True, "n"), (False, None)])
def test_a_pod_waiting_at_permit_is_nominated_to_its_node(gate: bool, nominated: str | None) -> None:
    """NominatedNodeNameForExpectation (KEP-5278, beta and on): a binding that will wait at
    Permit tells others where the pod goes; the binding clears the nomination, and a rejection
    clears it too (clearNominatedNode)."""
    # (without popping from the backoff queue: "r" would be tried again at once, and wait again)
    c = _gated_cluster(NominatedNodeNameForExpectation=gate, SchedulerPopFromBackoffQ=False)
    c.create(_waiting("w", 60), _waiting("r", 60))
    c.settle()
    for name in ("w", "r"):
        assert (c.store.get("Pod", "default", name).get("status") or {}).get("nominatedNodeName") == nominated
    c.sched.waiting_pods.get("uid-default-w").allow("Gate")
    c.sched.waiting_pods.get("uid-default-r").reject("Gate", "not today")
    c.settle()
    assert c.node_of("w") == "n"
    assert "nominatedNodeName" not in c.store.get("Pod", "default", "w")["status"]
    assert "nominatedNodeName" not in c.store.get("Pod", "default", "r")["status"]


def _waiting(name: str, seconds: int, cpu: str = "1") -> dict:
    p = make_pod(name, cpu=cpu)
    p["metadata"]["labels"] = {"wait": str(seconds)}
    return p


def test_permit_wait_then_allow_binds_and_the_room_stays_reserved_meanwhile() -> None:
    c = _gated_cluster()
    c.create(_waiting("w", 60, cpu="2"))
    c.settle()
    wp = c.sched.waiting_pods.get("uid-default-w")
    assert wp is not None and wp.get_pending_plugins() == ["Gate"]
    assert c.node_of("w") is None
    c.create(make_pod("other", cpu="1"))  # the waiting pod is assumed: no room left
    c.settle()
    assert c.node_of("other") is None
    assert c.sched.last_message["default/other"] == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        ""
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    wp.allow("Gate")
    c.settle()
    assert c.node_of("w") == "n"
    assert c.sched.waiting_pods.get("uid-default-w") is None


@pytest.mark.parametrize(
    ("asked", "effective", "shown"),
    [(30, 30, "30s"), (3600, 900, "15m0s")],  # waits are capped at 15 minutes
)
def test_permit_timeout_rejects_and_requeues(asked: int, effective: int, shown: str) -> None:
    c = _gated_cluster()
    c.create(_waiting("w", asked))
    c.settle()
    first = c.sched.waiting_pods.get("uid-default-w")
    c.advance(effective - 1)
    assert c.sched.waiting_pods.get("uid-default-w") is first
    c.advance(1)
    assert c.events("FailedScheduling") == [f"rejected due to timeout after waiting {shown} at plugin Gate"]
    # its own status update requeued it (Gate registers no events: every event may help), and an
    # idle scheduler pops a backing-off pod at once (SchedulerPopFromBackoffQ): it waits again
    again = c.sched.waiting_pods.get("uid-default-w")
    assert again is not None and again is not first
    assert c.sched.queue.where("uid-default-w") == "inFlight"


def test_permit_reject_from_outside_frees_the_room() -> None:
    c = _gated_cluster()
    c.create(_waiting("w", 60, cpu="2"), make_pod("other", cpu="1"))
    c.settle()
    assert c.node_of("other") is None
    c.sched.waiting_pods.get("uid-default-w").reject("Gate", "not today")
    c.settle()
    # the rejected pod's room is released (AssignedPodDelete moves "other"), both back off in the
    # same window, and the idle scheduler pops "other" first (it failed first): it fits; "w"
    # tried again does not
    assert c.events("FailedScheduling")[1] == "not today"
    assert c.node_of("other") == "n" and c.node_of("w") is None
    assert c.events("FailedScheduling")[-1].startswith("0/1 nodes are available: 1 Insufficient cpu.")


PRIORITIES = (
    make_priority_class("p10", 10),
    make_priority_class("never0", 0, preemptionPolicy="Never"),
    make_priority_class("never100", 100, preemptionPolicy="Never"),
)


def test_nominated_pods_of_equal_or_higher_priority_hold_their_room() -> None:
    # RunFilterPluginsWithNominatedPods: n1 must also fit with the nominated pod added.
    host = "kubernetes.io/hostname"
    n1, n2 = make_node("n1", cpu="2", labels={host: "n1"}), make_node("n2", cpu="2", labels={host: "n2"})
    c = Cluster(*PRIORITIES, n1, n2, make_waiting_nominated("big", "n1", cpu="2"))
    c.create(make_pod("low", cpu="1", spec={"nodeSelector": {host: "n1"}}))
    c.settle()
    assert c.node_of("low") is None
    assert c.sched.last_message["default/low"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector. "
        ""
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    c.create(make_pod("free", cpu="1"))
    c.settle()
    assert c.node_of("free") == "n2"


def test_lower_priority_nominated_pods_do_not_block() -> None:
    c = Cluster(
        *PRIORITIES, make_node("n1", cpu="2"), make_waiting_nominated("small", "n1", cpu="2", priority_class="never0")
    )
    c.create(make_pod("high", cpu="1", priority_class="p10"))
    c.settle()
    assert c.node_of("high") == "n1"


@pytest.mark.parametrize(
    ("nominated_on", "next_start"),
    [
        ("n010", 101),  # inside the window: n010 fails with "big" added, one more node is searched
        ("n150", 100),  # past the 100th feasible node: never examined, the window is unchanged
    ],
)
def test_nominated_pods_count_only_where_the_search_reaches(nominated_on: str, next_start: int) -> None:
    # 200 nodes, 100 feasible nodes to find; upstream runs the with-nominated-pods pass per node as
    # findNodesThatPassFilters reaches it, so the search window decides which nodes it touches.
    nodes = [make_node(f"n{i:03d}", cpu="2") for i in range(200)]
    c = Cluster(*PRIORITIES, *nodes, make_waiting_nominated("big", nominated_on, cpu="2"))
    assert c.sched.algorithm.search.next_start_node_index == 0  # "big" found nothing: all 200 processed
    c.create(make_pod("low", cpu="1"))
    c.settle()
    assert c.node_of("low") not in (None, nominated_on)
    assert c.sched.algorithm.search.next_start_node_index == next_start


@pytest.mark.parametrize("fits", [True, False])
def test_a_small_prefilter_result_is_filtered_on_its_rows_alone_with_the_same_outcome(monkeypatch, fits) -> None:
    """A daemonset-like pod names its node by metadata.name among 40: Filter runs on that row
    only, and placements and messages are those of filtering every row."""
    from kubesched.scheduler.nodesearch import columns

    def run(factor: int) -> tuple[str | None, list[str]]:
        monkeypatch.setattr(columns, "SMALL_RESULT_FACTOR", factor)
        nodes = [make_node(f"n{i:02d}", cpu="1") for i in range(40)]
        c = Cluster(*nodes)
        p = make_pod("ds", cpu="500m" if fits else "2")
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n07"]}]}
        p["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
        c.create(p)
        c.settle()
        return c.node_of("ds"), c.events("FailedScheduling")

    sub = run(16)
    whole = run(10**9)  # a huge factor: always every row
    assert sub == whole
    if fits:
        assert sub == ("n07", [])
    else:
        assert sub[1][0].startswith(
            "0/40 nodes are available: 1 Insufficient cpu, 39 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        )


def test_a_prefilter_result_naming_every_node_leaves_none_out_of_the_message() -> None:
    """One node, named by the pod's node affinity: PreFilter leaves no node out, so the message
    has no "node(s) didn't satisfy plugin(s)" entry (``FitError.Error`` adds the absent nodes'
    reasons only when there are some), here or in preemption's."""
    c = Cluster(make_node("n0", cpu="1"))
    p = make_pod("ds", cpu="2")
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0"]}]}
    p["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    }
    c.create(p)
    c.settle()
    assert c.events("FailedScheduling") == [
        # more than the node's allocatable: unresolvable, so no preemption either
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 Preemption is not helpful for scheduling."
    ]
