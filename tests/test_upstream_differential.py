"""Random small clusters through both schedulers on one kube-apiserver v1.37.2: every case makes
two identical sets of nodes (side ``up`` for kube-scheduler v1.37.2, side ``ks`` for kubesched,
each pod held to its side by a nodeSelector) and the same pods for each side in the same order.
Whether each pod is bound, and the FailedScheduling condition of each pod that is not, must be the
same on both sides, word for word: the other side's nodes fail the selector alike for both.

Filters exercised: NodeResourcesFit (cpu, memory, pods), TaintToleration, NodeAffinity (zones),
NodeUnschedulable; preemption's message with and without lower-priority victims. Seeded, so a
failure names a case that can be replayed."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from tests.upstream import SIDES, ControlPlane, both_schedulers

SEED = 37
CASES = 40


def make_case(rng: random.Random, n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and pod templates of case ``n`` (without side)."""
    nodes = []
    for i in range(rng.randint(1, 4)):
        spec: dict[str, Any] = {}
        if rng.random() < 0.3:
            spec["taints"] = [{"key": "dedicated", "value": rng.choice(["gpu", "db"]), "effect": "NoSchedule"}]
        if rng.random() < 0.1:
            spec["unschedulable"] = True
        cpu = str(rng.choice([1, 2, 4, 8]))
        memory = rng.choice(["2Gi", "4Gi", "16Gi"])
        pods = str(rng.choice([2, 3, 110]))
        nodes.append(
            {
                "name": f"c{n}-n{i}",
                "zone": rng.choice(["a", "b"]),
                "spec": spec,
                "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            }
        )
    pods = []
    for i in range(rng.randint(1, 4)):
        requests = {"cpu": rng.choice(["100m", "500m", "1", "3", "6", "12"])}
        if rng.random() < 0.5:
            requests["memory"] = rng.choice(["1Gi", "3Gi", "8Gi", "32Gi"])
        spec = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]}
        if rng.random() < 0.3:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        if rng.random() < 0.3:
            spec["zone"] = rng.choice(["a", "b"])
        if rng.random() < 0.2:
            spec["priority"] = "high"
        pods.append({"name": f"c{n}-p{i}", "spec": spec})
    return nodes, pods


def node_object(template: dict[str, Any], side: str, case: int) -> dict[str, Any]:
    name = f"{side}-{template['name']}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": template["zone"],
                "side": side,
                "case": str(case),
            },
        },
        "spec": template["spec"],
        "status": {"allocatable": template["allocatable"], "capacity": template["allocatable"]},
    }


def pod_object(template: dict[str, Any], side: str, case: int) -> dict[str, Any]:
    spec = dict(template["spec"])
    zone = spec.pop("zone", None)
    priority = spec.pop("priority", None)
    spec["schedulerName"] = SIDES[side]
    spec["nodeSelector"] = {"side": side, "case": str(case)}
    if zone:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}
                            ]
                        }
                    ]
                }
            }
        }
    if priority:
        spec["priorityClassName"] = "high"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{side}-{template['name']}"}, "spec": spec}


def outcome(plane: ControlPlane, name: str) -> tuple[str, str] | None:
    """("bound", "") or ("pending", condition message), or None while undecided."""
    code, pod = plane.request("GET", f"/api/v1/namespaces/default/pods/{name}")
    assert code == 200, pod
    if (pod.get("spec") or {}).get("nodeName"):
        return "bound", ""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return "pending", str(c.get("message") or "")
    return None


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("differential")
    p = ControlPlane(root / "upstream").start()
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    assert p.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", high)[0] == 201
    try:
        with both_schedulers(p, root):
            yield p
    finally:
        p.stop()


@pytest.mark.parametrize("case", range(CASES))
def test_both_schedulers_decide_each_random_case_alike(plane, case):
    rng = random.Random(SEED * 1000 + case)
    nodes, pods = make_case(rng, case)
    for side in SIDES:
        for n in nodes:
            node = node_object(n, side, case)
            code, body = plane.request("POST", "/api/v1/nodes", node)
            assert code == 201, body
            # kube-apiserver taints a new node not-ready (TaintNodesByCondition); no node controller
            # runs here to lift it, so the case's own taints replace it
            patch = {"spec": {"taints": node["spec"].get("taints") or None}}
            code, body = plane.request(
                "PATCH", f"/api/v1/nodes/{node['metadata']['name']}", patch, content_type="application/merge-patch+json"
            )
            assert code == 200, body
    for p in pods:  # one pod at a time on both sides, so the two sides see the same cluster
        for side in SIDES:
            code, body = plane.request("POST", "/api/v1/namespaces/default/pods", pod_object(p, side, case))
            assert code == 201, body
        deadline = time.monotonic() + 30
        results: dict[str, tuple[str, str] | None] = {}
        while time.monotonic() < deadline:
            results = {side: outcome(plane, f"{side}-{p['name']}") for side in SIDES}
            if all(results.values()):
                break
            time.sleep(0.1)
        assert all(results.values()), (case, p, results)
        assert results["ks"] == results["up"], (case, nodes, pods, p)
    for side in SIDES:
        for p in pods:
            plane.request("DELETE", f"/api/v1/namespaces/default/pods/{side}-{p['name']}", {"gracePeriodSeconds": 0})
        for n in nodes:
            plane.request("DELETE", f"/api/v1/nodes/{side}-{n['name']}")
