"""The upstream-style plugin tables, judged by upstream itself: each case of a table (the nodes, the
pods on them, the pod to place) becomes a cluster that kube-scheduler v1.37.2's scheduler (the
oracle) and ``kubesched simulate`` both schedule under a profile with only the plugin under test
(plus ImageLocality, which scores 0 here, so that every feasible node is scored and so reported).
The table's expectation, upstream's answer and kubesched's must all agree: the feasible nodes, and
for a pod that fits nowhere the FailedScheduling message; and kubesched must agree with upstream on
everything ``tests/oracle.disagreement`` compares (each node's Filter verdict with its plugin and
reasons, the raw and weighted scores)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import make_node, make_pod, make_priority_class
from tests.oracle import disagreement, kubesched, upstream
from tests.test_dynamicresources import (
    CONSUMABLE_CASES,
    MULTI_SELECTOR_CASES,
    PRE_ENQUEUE_CASES,
    PRIORITIZED_SCORE_CASES,
    TAINT_RULE_CASES,
    claim_pod,
    claim_user,
    multi_cluster,
    prioritized_objects,
    shared_cluster,
    tainted_cluster,
)
from tests.test_interpodaffinity import FILTER_CASES as AFFINITY_CASES
from tests.test_interpodaffinity import NODES as AFFINITY_NODES
from tests.test_interpodaffinity import SCORE_CASES as AFFINITY_SCORE_CASES
from tests.test_nodedeclaredfeatures import FILTER_CASES as FEATURE_CASES
from tests.test_nodedeclaredfeatures import NODES as FEATURE_NODES
from tests.test_plugins_fit import ENOUGH_REQUESTS_CASES, NODE, RTCR_CASES
from tests.test_plugins_node import (
    IMAGE_LOCALITY_CASES,
    IMAGE_NODES,
    NODE_AFFINITY_CASES,
    NODE_PORTS_CASES,
    NODES,
    TAINT_FILTER_CASES,
    TAINT_SCORE_CASES,
)
from tests.test_podtopologyspread import POLICY_CASES, SINGLE_CONSTRAINT_CASES
from tests.test_podtopologyspread import SCORE_CASES as SPREAD_SCORE_CASES
from tests.test_preemption import PICK_ONE_NODE_CASES
from tests.test_resize import NODE as RESIZE_NODE
from tests.test_resize import RESIZE_CASES
from tests.test_volumes import DISK_CONFLICT_CASES, VOLUME_BINDING_CASES, VOLUME_ZONE_CASES, pv, pvc, with_claims
from tests.test_volumes import node as zoned_node
from tests.upstream import binaries

from kubesched.framework.status import Code


def profile(plugin: str, args: dict[str, Any] | None = None, also: tuple[str, ...] = ()) -> dict[str, Any]:
    """A KubeSchedulerConfiguration whose one profile runs ``plugin`` alone, its score weighted 1
    (and the queue sort, the binder, a witness score and the plugins ``also`` names)."""
    enabled = [{"name": "PrioritySort"}, {"name": plugin, "weight": 1}]
    enabled += [{"name": "ImageLocality"}] if plugin != "ImageLocality" else []
    enabled += [{"name": name} for name in also]
    enabled.append({"name": "DefaultBinder"})
    config = [{"name": plugin, "args": args}] if args else []
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}},
                "pluginConfig": config,
            }
        ],
    }


API_VERSIONS = {kind: "storage.k8s.io/v1" for kind in ("StorageClass", "CSIDriver", "CSINode", "CSIStorageCapacity")}


def cluster(nodes: list[dict[str, Any]], bound: list[dict[str, Any]], incoming: dict[str, Any]) -> list[dict[str, Any]]:
    """A case's objects as a cluster file holds them (``nodes`` and ``bound`` may hold any kinds)."""
    objects = [copy.deepcopy(o) for o in (*nodes, *bound, incoming)]
    for o in objects:
        o.setdefault("apiVersion", API_VERSIONS.get(o["kind"], "v1"))
        spec = o.get("spec") or {}
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            c.setdefault("image", "pause")  # what the plugin's table leaves out and the API requires:
            res = c.get("resources") or {}  # an image, limits at the requests of extended resources
            extended = {k: v for k, v in (res.get("requests") or {}).items() if "/" in k}
            if extended:
                res["limits"] = {**extended, **(res.get("limits") or {})}
        o["metadata"].setdefault("labels", {})
        o["metadata"]["labels"].setdefault("kubernetes.io/hostname", o["metadata"]["name"]) if o[
            "kind"
        ] == "Node" else None
    return objects


def judge(
    tmp_path: Path,
    plugin: str,
    cases: list[list[dict[str, Any]]],
    pod: str = "default/p",
    args: dict[str, Any] | None = None,
    also: tuple[str, ...] = (),
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(upstream's outcome, kubesched's) for ``pod`` in each case, one oracle process for all."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(profile(plugin, args, also)))
    paths = []
    for i, objects in enumerate(cases):
        path = tmp_path / f"case-{i}.yaml"
        # every string quoted: Go's YAML reads a bare n or y as a boolean
        path.write_text(yaml.safe_dump_all(objects, default_style='"'))
        paths.append(path)
    theirs = upstream(binaries() / "oracle", paths, config=config)
    mine = [kubesched(path, pod, config=config) for path in paths]
    judged = [(next(r for r in t if r["pod"] == pod), m) for t, m in zip(theirs, mine, strict=True)]
    for i, (t, m) in enumerate(judged):
        assert not disagreement(t, m), f"{plugin} case {i}: {disagreement(t, m)}"
    return judged


def rows(cases: list[Any]) -> list[tuple[Any, ...]]:
    """A table's cases, ``pytest.param``'s unwrapped."""
    return [tuple(c.values) if hasattr(c, "values") else tuple(c) for c in cases]


def feasible(outcome: dict[str, Any]) -> set[str]:
    """The nodes the pod could go to: those every filter passed (upstream's verdicts carry a code,
    kubesched's are None where no plugin rejected the node)."""
    return {
        n
        for n, v in (outcome.get("filters") or {}).items()
        if v is None or (isinstance(v, dict) and v["code"] == "Success")
    }


def test_taint_toleration_table(tmp_path):
    cases = [
        cluster([make_node("n", taints=taints)], [], make_pod("p", spec={"tolerations": tolerations}))
        for tolerations, taints, _ in TAINT_FILTER_CASES
    ]
    for (_, _, fits), (theirs, mine) in zip(TAINT_FILTER_CASES, judge(tmp_path, "TaintToleration", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == ({"n"} if fits else set())
        if not fits:
            assert (
                theirs["message"] == mine["message"] == "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
            )


def test_node_affinity_table(tmp_path):
    names = [n["metadata"]["name"] for n in NODES]
    cases = [cluster(NODES, [], make_pod("p", spec=spec)) for spec, _ in NODE_AFFINITY_CASES]
    for (_, fits), (theirs, mine) in zip(NODE_AFFINITY_CASES, judge(tmp_path, "NodeAffinity", cases), strict=True):
        want = {n for n, ok in zip(names, fits, strict=True) if ok}
        assert feasible(theirs) == feasible(mine) == want
        if not want:
            assert theirs["message"] == mine["message"]


@pytest.mark.parametrize("plugin", ["NodeResourcesFit"])
def test_enough_requests_table(tmp_path, plugin):
    cases = [
        cluster([NODE], [make_pod("old", node="n", **existing)], make_pod("p", **incoming))
        for existing, incoming, _, _ in ENOUGH_REQUESTS_CASES
    ]
    for (_, _, code, reasons), (theirs, mine) in zip(
        ENOUGH_REQUESTS_CASES, judge(tmp_path, plugin, cases), strict=True
    ):
        assert feasible(theirs) == feasible(mine) == (set() if code != 0 else {"n"})
        if code != Code.SUCCESS:
            assert (
                theirs["message"]
                == mine["message"]
                == f"0/1 nodes are available: {', '.join(f'1 {r}' for r in sorted(reasons))}."
            )


def test_pod_topology_spread_table(tmp_path):
    cases = [cluster(objects, [], pod) for _, objects, pod, _ in SINGLE_CONSTRAINT_CASES]
    outcomes = judge(tmp_path, "PodTopologySpread", cases, pod="default/incoming")
    for (name, objects, _, want), (theirs, mine) in zip(SINGLE_CONSTRAINT_CASES, outcomes, strict=True):
        nodes = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
        failing = {k if k.startswith("node-") else f"node-{k}" for k in want}
        assert feasible(theirs) == feasible(mine) == nodes - failing, name
        if failing == nodes:
            assert theirs["message"] == mine["message"], name


def test_inter_pod_affinity_table(tmp_path):
    cases = [cluster(AFFINITY_NODES, objects, pod) for _, objects, pod, _ in AFFINITY_CASES]
    names = {n["metadata"]["name"] for n in AFFINITY_NODES}
    for (name, _, _, want), (theirs, mine) in zip(
        AFFINITY_CASES, judge(tmp_path, "InterPodAffinity", cases), strict=True
    ):
        assert feasible(theirs) == feasible(mine) == names - set(want), name
        if set(want) == names:
            assert theirs["message"] == mine["message"], name


def test_taint_toleration_score_table(tmp_path):
    cases = [
        cluster(
            [make_node(f"n{i}", taints=t) for i, t in enumerate(taints)], [], make_pod("p", spec={"tolerations": tol})
        )
        for tol, taints, _ in TAINT_SCORE_CASES
    ]
    for (_, _, want), (theirs, mine) in zip(TAINT_SCORE_CASES, judge(tmp_path, "TaintToleration", cases), strict=True):
        scored = {f"n{i}": w for i, w in enumerate(want)}
        assert {n: s["TaintToleration"] for n, s in theirs["scores"].items()} == scored
        assert {n: s["TaintToleration"] for n, s in mine["scores"].items()} == scored


@pytest.mark.parametrize(("resources", "expected"), RTCR_CASES)
def test_requested_to_capacity_ratio_table(tmp_path, resources, expected):
    """A rising shape over the configured resources; two like nodes, so that upstream scores them."""
    rising = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
    ratio = {"shape": rising}
    strategy = {"type": "RequestedToCapacityRatio", "resources": resources, "requestedToCapacityRatio": ratio}
    nodes = [make_node(n, cpu="4", memory="10000", extra={"nvidia.com/gpu": "4"}) for n in ("n1", "n2")]
    case = cluster(nodes, [], make_pod("p", cpu="3", memory="5000"))
    ((theirs, mine),) = judge(tmp_path, "NodeResourcesFit", [case], args={"scoringStrategy": strategy})
    assert theirs["scores"]["n1"]["NodeResourcesFit"] == mine["scores"]["n1"]["NodeResourcesFit"] == expected[0]


@pytest.mark.parametrize(
    ("name", "objects", "pod", "args", "normalized"), [(c[0], c[1], c[2], c[3], c[5]) for c in AFFINITY_SCORE_CASES]
)
def test_inter_pod_affinity_score_table(tmp_path, name, objects, pod, args, normalized):
    """Upstream weighs and normalizes as the table says; a skipped Score scores 0 everywhere."""
    ((theirs, mine),) = judge(tmp_path, "InterPodAffinity", [cluster(AFFINITY_NODES, objects, pod)], args=args)
    want = normalized or dict.fromkeys(normalized or ("n1", "n2", "n3"), 0)
    assert {n: s.get("InterPodAffinity", 0) for n, s in theirs["scores"].items()} == want, name
    assert {n: s.get("InterPodAffinity", 0) for n, s in mine["scores"].items()} == want, name


def test_pod_topology_spread_policy_table(tmp_path):
    """minDomains and the inclusion policies: the nodes a case is about are feasible, or not, alike."""
    cases = [cluster(objects, [], pod) for _, objects, pod, _ in POLICY_CASES]
    outcomes = judge(tmp_path, "PodTopologySpread", cases, pod="default/incoming")
    for (name, _, _, want), (theirs, mine) in zip(POLICY_CASES, outcomes, strict=True):
        expected = {n for n, verdict in want.items() if not verdict}
        assert feasible(theirs) & set(want) == feasible(mine) & set(want) == expected, name


@pytest.mark.parametrize(("name", "objects", "pod", "norm"), [(c[0], c[1], c[2], c[4]) for c in SPREAD_SCORE_CASES])
def test_pod_topology_spread_score_table(tmp_path, name, objects, pod, norm):
    ((theirs, mine),) = judge(tmp_path, "PodTopologySpread", [cluster(objects, [], pod)], pod="default/incoming")
    assert {n: s.get("PodTopologySpread", 0) for n, s in theirs["scores"].items()} == norm, name
    assert {n: s.get("PodTopologySpread", 0) for n, s in mine["scores"].items()} == norm, name


def test_node_ports_table(tmp_path):
    cases = [
        cluster([make_node("n")], [make_pod("old", node="n", spec=used)], make_pod("p", spec=wanted))
        for used, wanted, _ in NODE_PORTS_CASES
    ]
    for (_, _, conflict), (theirs, mine) in zip(NODE_PORTS_CASES, judge(tmp_path, "NodePorts", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == (set() if conflict else {"n"})


def test_volume_zone_table(tmp_path):
    nodes = [zoned_node("a", "z1"), zoned_node("b", "z2"), make_node("plain")]
    cases = []
    for labels, _ in rows(VOLUME_ZONE_CASES):
        volumes = [pv("vol", labels=labels, claim="c"), pvc("c", volume="vol")]
        cases.append(cluster([*nodes, *volumes], [], {**with_claims("p", "c")}))
    for (_, expected), (theirs, mine) in zip(
        rows(VOLUME_ZONE_CASES), judge(tmp_path, "VolumeZone", cases), strict=True
    ):
        assert feasible(theirs) == feasible(mine) == {n for n, code in expected.items() if code == 0}


def test_volume_restrictions_table(tmp_path):
    nodes = [zoned_node("a"), zoned_node("b")]
    cases = [
        cluster(
            nodes, [make_pod("old", node="a", spec={"volumes": existing})], make_pod("p", spec={"volumes": incoming})
        )
        for existing, incoming, _ in rows(DISK_CONFLICT_CASES)
    ]
    outcomes = judge(tmp_path, "VolumeRestrictions", cases)
    for (_, _, conflict), (theirs, mine) in zip(rows(DISK_CONFLICT_CASES), outcomes, strict=True):
        assert feasible(theirs) == feasible(mine) == ({"b"} if conflict else {"a", "b"})


def test_volume_binding_table(tmp_path):
    nodes = [zoned_node("a", "z1"), zoned_node("b", "z2")]
    # a class without a provisioner is the in-memory table's alone: kube-apiserver refuses it
    table = [c for c in rows(VOLUME_BINDING_CASES) if all(o.get("provisioner") != "" for o in c[0])]
    cases = [cluster([*nodes, *objects], [], with_claims("p", *claims)) for objects, claims, _ in table]
    for (objects, _, expected), (theirs, mine) in zip(table, judge(tmp_path, "VolumeBinding", cases), strict=True):
        if isinstance(expected, tuple):  # PreFilter's answer: every node gets it
            expected = dict.fromkeys(("a", "b"), expected)
        want = {n for n, verdict in expected.items() if verdict[0] == 0} if expected else {"a", "b"}
        assert feasible(theirs) == feasible(mine) == want, objects
        if not want:
            assert theirs["message"] == mine["message"], objects


def test_dynamic_resources_pre_enqueue_table(tmp_path):
    """A pod whose claims are missing waits at DynamicResources' PreEnqueue, never popped, with the
    table's message; a pod with nothing to wait for is placed."""
    cases = [cluster([make_node("n")], [], claim_pod(claims, statuses)) for claims, statuses, _, _ in PRE_ENQUEUE_CASES]
    outcomes = judge(tmp_path, "DynamicResources", cases)
    for (_, _, code, message), (theirs, mine) in zip(PRE_ENQUEUE_CASES, outcomes, strict=True):
        if code is None:
            assert theirs["node"] == mine["node"] == "n"
        else:
            assert theirs["gated"] == mine["gated"] == f"DynamicResources: {message}"


def candidates_cluster(candidates: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Nodes of equal size, each filled by its candidate's victims (one cpu each, with the given
    priorities and start times; a PodDisruptionBudget per violation), and a preemptor that needs a
    whole node: on every node, every pod there is a victim."""
    size = max(len(c[1]) for c in candidates)
    values = sorted({v for c in candidates for v in c[1]})
    objects: list[dict[str, Any]] = [make_priority_class(f"v{v}".replace("-", "m"), v) for v in values]
    objects.append(make_priority_class("preemptor", 1000))
    for node_name, prios, *rest in candidates:
        violations = rest[0] if rest else 0
        starts = rest[1] if len(rest) > 1 else [0] * len(prios)
        objects.append(make_node(node_name, cpu=str(size)))
        for i, (value, start) in enumerate(zip(prios, starts, strict=True)):
            victim = make_pod(f"{node_name}-{i}", cpu="1", node=node_name, priority_class=f"v{value}".replace("-", "m"))
            victim["metadata"]["labels"] = {"victim": f"{node_name}-{i}"}
            victim["status"] = {"phase": "Running", "startTime": f"2026-01-01T00:00:{start:02d}Z"}
            objects.append(victim)
            if i < violations:
                objects.append(
                    {
                        "apiVersion": "policy/v1",
                        "kind": "PodDisruptionBudget",
                        "metadata": {"name": f"{node_name}-{i}", "namespace": "default"},
                        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"victim": f"{node_name}-{i}"}}},
                    }
                )
    return objects


def test_preemption_candidate_table(tmp_path):
    """pickOneNodeForPreemption's criteria as clusters: upstream nominates the table's winner and
    deletes its victims, and so does kubesched. Left out: a tie (upstream's dry run starts at a
    random node, so the first candidate is random) and a node needing no eviction (the pod would
    fit there without preempting)."""
    table = [(c, w) for c, w in PICK_ONE_NODE_CASES if all(node[1] for node in c) and w != "a"]
    cases = [
        cluster(
            candidates_cluster(c), [], make_pod("p", cpu=str(max(len(n[1]) for n in c)), priority_class="preemptor")
        )
        for c, _ in table
    ]
    outcomes = judge(tmp_path, "NodeResourcesFit", cases, also=("DefaultPreemption",))
    for (candidates, winner), (theirs, mine) in zip(table, outcomes, strict=True):
        count = next(len(n[1]) for n in candidates if n[0] == winner)
        victims = [f"default/{winner}-{i}" for i in range(count)]
        assert theirs["nominatedNode"] == mine["nominatedNode"] == winner, candidates
        assert theirs["victims"] == mine["victims"] == victims, candidates


def admitted(pod: dict[str, Any]) -> bool:
    """Whether kube-apiserver v1.37.2 with its default gates creates the pod: not one in a user
    namespace of its own on the host network (``validateHostUsers``; UserNamespacesHostNetworkSupport
    is alpha), which only the plugin's own table, filtering without an API server, holds."""
    spec = pod.get("spec") or {}
    return not (spec.get("hostUsers") is False and spec.get("hostNetwork"))


def test_node_declared_features_table(tmp_path):
    table = [(pod, fits) for pod, fits in rows(FEATURE_CASES) if admitted(pod)]
    cases = [cluster(FEATURE_NODES, [], pod) for pod, _ in table]
    for (_, fits), (theirs, mine) in zip(table, judge(tmp_path, "NodeDeclaredFeatures", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == fits


def test_image_locality_table(tmp_path):
    """ImageLocality's scores, image volumes counted; the profile's witness is ImageLocality itself."""
    cases = [cluster(IMAGE_NODES, [], make_pod("p", spec=spec)) for spec, _ in rows(IMAGE_LOCALITY_CASES)]
    for (_, scores), (theirs, mine) in zip(
        rows(IMAGE_LOCALITY_CASES), judge(tmp_path, "ImageLocality", cases), strict=True
    ):
        want = dict(zip("abc", scores, strict=True))
        assert {n: s["ImageLocality"] for n, s in theirs["raw"].items()} == want
        assert {n: s["ImageLocality"] for n, s in mine["raw"].items()} == want


def test_in_place_resize_table(tmp_path):
    """A running pod mid-resize counts as upstream's NodeInfo counts it: the incoming pod's
    NodeResourcesFit score (least allocated) on the node reads the cpu the running pod holds, and
    an incoming pod asking one millicore more than the rest is refused."""
    table = rows(RESIZE_CASES)
    (tmp_path / "fit").mkdir()
    (tmp_path / "over").mkdir()
    scored = [cluster([RESIZE_NODE], [pod], make_pod("p", cpu="100m")) for pod, _ in table]
    for (_, cpu), (theirs, mine) in zip(table, judge(tmp_path / "fit", "NodeResourcesFit", scored), strict=True):
        assert feasible(theirs) == feasible(mine) == {"n"}
        assert theirs.get("message") is None and mine["message"] is None, cpu
    over = [cluster([RESIZE_NODE], [pod], make_pod("p", cpu=f"{4001 - cpu}m")) for pod, cpu in table]
    for (_, cpu), (theirs, mine) in zip(table, judge(tmp_path / "over", "NodeResourcesFit", over), strict=True):
        assert feasible(theirs) == feasible(mine) == set(), cpu
        assert theirs["message"] == mine["message"] == "0/1 nodes are available: 1 Insufficient cpu.", cpu


def test_dynamic_resources_prioritized_list_score_table(tmp_path):
    """DRAPrioritizedList (GA): 8 − the index of the subrequest each node's allocation would use,
    normalized by the best node."""
    table = rows(PRIORITIZED_SCORE_CASES)
    cases = [cluster(prioritized_objects(gpus, counts), [], claim_user()) for gpus, counts, _ in table]
    for (_, _, raw), (theirs, mine) in zip(table, judge(tmp_path, "DynamicResources", cases), strict=True):
        assert {n: s["DynamicResources"] for n, s in theirs["raw"].items()} == raw
        assert {n: s["DynamicResources"] for n, s in mine["raw"].items()} == raw
        top = max(raw.values())
        normalized = {n: v * 100 // top for n, v in raw.items()}
        assert {n: s["DynamicResources"] for n, s in theirs["normalized"].items()} == normalized
        assert {n: s["DynamicResources"] for n, s in mine["scores"].items()} == normalized  # weight 1


def test_device_taint_rules_table(tmp_path):
    """DeviceTaintRules (GA in v1.37): their taints on the devices they select keep a claim that does
    not tolerate them off those devices, as upstream's slice tracker applies them."""
    table = rows(TAINT_RULE_CASES)
    cases = [cluster(tainted_cluster(rule, tolerate), [], claim_user()) for rule, tolerate, _ in table]
    for (_, _, fits), (theirs, mine) in zip(table, judge(tmp_path, "DynamicResources", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == fits


def test_consumable_capacity_table(tmp_path):
    """DRAConsumableCapacity (beta, on since v1.36): where a claim's share of an
    allowMultipleAllocations device fits beside the shares allocated claims hold, its request
    rounded up by the device's request policy, as upstream's incubating allocator decides."""
    table = rows(CONSUMABLE_CASES)
    cases = [cluster(shared_cluster(requests, held), [], claim_user()) for requests, held, _ in table]
    for (_, _, fits), (theirs, mine) in zip(table, judge(tmp_path, "DynamicResources", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == fits


def test_selectors_on_allow_multiple_allocations_table(tmp_path):
    """Device classes selecting on ``device.allowMultipleAllocations``: the nodes whose device
    they select, as kube-scheduler v1.37.2's CEL environment declares the field."""
    table = rows(MULTI_SELECTOR_CASES)
    cases = [cluster(multi_cluster(expression), [], claim_user()) for expression, _ in table]
    for (_, fits), (theirs, mine) in zip(table, judge(tmp_path, "DynamicResources", cases), strict=True):
        assert feasible(theirs) == feasible(mine) == fits
