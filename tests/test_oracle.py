"""Upstream's scheduler as the oracle, in process: ``upstream/cmd/oracle`` runs kube-scheduler
v1.37.2's scheduler (default profile, fake clientset, shared informers) on a cluster file. Random
clusters (``tests/random_clusters.py``: resources with init and sidecar containers and overhead,
node and pod affinity, topology spread, taints, host ports, priorities with preemption and PDBs,
volumes, DRA claims) go through it and through ``kubesched simulate``, and ``tests/oracle.py``
compares them: the FailedScheduling message word for word, the preemption's node and victims, the
node (one of upstream's top-scored nodes) and every plugin's weighted score on every node.

The clusters come from hypothesis (``st.randoms``), derandomized so that CI runs the same ones and a
disagreement shrinks to a small cluster; ``scripts/differential.py`` runs thousands more."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.oracle import disagreement, kubesched, upstream
from tests.random_clusters import make_case
from tests.test_volumes import bound_claim, pv, pvc, storage_class, with_claims
from tests.test_volumes import node as volume_node
from tests.upstream import binaries

EXAMPLES = 150


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rng=st.randoms(use_true_random=False))
def test_kubesched_decides_as_upstreams_scheduler(tmp_path, rng):
    objects = make_case(rng)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    (theirs,) = upstream(binaries() / "oracle", [path])
    why = disagreement(theirs[0], kubesched(path))
    assert not why, f"{why}\n{yaml.safe_dump_all(objects)}"


@pytest.mark.parametrize("case", [96, 232, 82, 980, 2685, 5000])
def test_seeded_cases_the_oracle_once_caught(tmp_path, case):
    """Clusters of the large run that once disagreed: overhead from a RuntimeClass, a capacity
    score for local volumes, a preemption that nominates and then binds, a budget over pods the
    input places on nodes (they run, so the budget allows a disruption), and preemption's dry run
    under spreading and anti-affinity (judged one node at a time, the other nodes' pods in place);
    232 now also holds a pending pod still nominated elsewhere, which preempts and waits for its
    victims."""
    path = tmp_path / f"case-{case}.yaml"
    path.write_text(yaml.safe_dump_all(make_case(random.Random(case))))
    (theirs,) = upstream(binaries() / "oracle", [path])
    assert not disagreement(theirs[0], kubesched(path))


def test_the_oracle_reports_preemption(tmp_path: Path):
    """A high-priority pod that fits nowhere: upstream nominates the node whose victim has the
    lowest priority, deletes it, and binds the pod there; kubesched does the same, and the message
    says where and how many (v1.37 adds the placement on success)."""
    node = {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
    objects = [
        *(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
            for n, v in (("high", 1000), ("low", 10), ("lower", 5))
        ),
        *(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n},
                "status": {**node, "capacity": node["allocatable"]},
            }
            for n in ("n1", "n2")
        ),
        *(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {
                    "nodeName": on,
                    "priorityClassName": pc,
                    "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1500m"}}}],
                },
            }
            for name, on, pc in (("v1", "n1", "low"), ("v2", "n2", "lower"))
        ),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "incoming", "namespace": "default"},
            "spec": {
                "priorityClassName": "high",
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}],
            },
        },
    ]
    path = tmp_path / "preempt.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    (theirs,) = upstream(binaries() / "oracle", [path])
    assert theirs[0]["victims"] == ["default/v2"] and theirs[0]["nominatedNode"] == "n2" and theirs[0]["node"] == "n2"
    assert theirs[0]["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: found a potential placement for pod on node n2, preempting 1 victims"
    )
    mine = kubesched(path)
    assert not disagreement(theirs[0], mine)
    assert mine["victims"] == ["default/v2"] and mine["node"] == "n2"


def test_volume_capacity_scores_as_upstream(tmp_path: Path):
    """StorageCapacityScoring (beta, on in v1.37): a delayed-binding claim prefers the node whose
    volume it fills least; a claim bound to a volume every node reaches scores 0 everywhere."""
    nodes = [{"apiVersion": "v1", **volume_node(n)} for n in ("n1", "n2", "n3")]
    local = {"apiVersion": "storage.k8s.io/v1", **storage_class("wffc", provisioner="kubernetes.io/no-provisioner")}
    delayed = [
        pv(n, size, hosts=[host]) for n, size, host in (("a", "5Gi", "n1"), ("b", "8Gi", "n2"), ("c", "40Gi", "n3"))
    ]
    claim = {"apiVersion": "v1", **pvc("data", "4Gi")}
    bound = {"apiVersion": "v1", **bound_claim("data", "s")}
    incoming = {"apiVersion": "v1", **with_claims("incoming", "data")}
    for name, objects in (
        ("delayed", [*nodes, local, *({"apiVersion": "v1", **v} for v in delayed), claim, incoming]),
        ("shared", [*nodes, local, {"apiVersion": "v1", **pv("s", claim="data")}, bound, incoming]),
    ):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objects))
        (theirs,) = upstream(binaries() / "oracle", [path])
        mine = kubesched(path)
        assert not disagreement(theirs[0], mine), name
        expected = {"delayed": {"n1": 20, "n2": 50, "n3": 90}, "shared": {"n1": 0, "n2": 0, "n3": 0}}[name]
        assert {n: s.get("VolumeBinding", 0) for n, s in theirs[0]["scores"].items()} == expected
        # kube-scheduler's --feature-gates: with the gate off, VolumeBinding does not score
        gates = "StorageCapacityScoring=false"
        (off,) = upstream(binaries() / "oracle", [path], gates=gates)
        mine_off = kubesched(path, gates=gates)
        assert not disagreement(off[0], mine_off), name
        assert not any("VolumeBinding" in s for s in off[0]["scores"].values())


def test_a_second_pod_sees_the_first_ones_claim_allocation(tmp_path: Path):
    """One GPU and two pods with a claim each: upstream allocates it to the first and finds none
    for the second, as kubesched does. The oracle's fake clientset versions every write as
    kube-apiserver does; unversioned, the allocation was lost before the second pod and both
    were bound to the one device."""
    from tests.test_dynamicresources import gpu_class, gpu_slice

    def claim(name: str) -> dict:
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}
        meta = {"name": name, "namespace": "default"}
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": meta,
            "spec": {"devices": {"requests": [request]}},
        }

    def user(name: str, claim_name: str) -> dict:
        spec = {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
        }
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}

    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    objects = [gpu_class(), node, gpu_slice("n1", [{"name": "gpu-0"}]), claim("ca"), claim("cb")]
    objects += [user("pa", "ca"), user("pb", "cb")]
    path = tmp_path / "two-claims.yaml"
    path.write_text(yaml.safe_dump_all(objects, default_style='"'))
    (theirs,) = upstream(binaries() / "oracle", [path])
    by_pod = {r["pod"]: r for r in theirs}
    assert by_pod["default/pa"].get("node") == "n1"
    assert by_pod["default/pb"].get("node") is None
    assert by_pod["default/pb"]["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")
    for pod in ("default/pa", "default/pb"):
        assert not disagreement(by_pod[pod], kubesched(path, pod)), pod


def test_a_preemptor_nominated_elsewhere_waits_for_its_victims(tmp_path: Path):
    """A pending pod still nominated to n3 by an earlier preemption fits nowhere (n3 by topology
    spread) and preempts ``b`` on n1. Its new nomination requeues it at once (eventhandlers.go,
    ``hasNominatedNodeNameChanged``), but DefaultPreemption's PreEnqueue holds it until its last
    victim is deleting (``isRunningPreemption``): retried while ``b`` terminates it would find n3
    (spreading ignores a terminating pod, the host port does not) instead of n1 once ``b`` is gone.
    The oracle deletes victims as kube-apiserver does (terminating for their grace period)."""
    zone = "topology.kubernetes.io/zone"

    def node(name: str, z: str, cpu: str) -> dict[str, Any]:
        status = {"allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110"}}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {zone: z, "kubernetes.io/hostname": name}},
            "status": {**status, "capacity": status["allocatable"]},
        }

    def container(cpu: str) -> dict[str, Any]:
        return {
            "name": "c",
            "image": "pause",
            "ports": [{"containerPort": 80, "hostPort": 8080}],
            "resources": {"requests": {"cpu": cpu}},
        }

    objects = [
        *(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
            for n, v in (("high", 1000), ("low", 10))
        ),
        node("n1", "c", "2"),
        node("n2", "b", "100m"),
        node("n3", "c", "2"),
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "b", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "priorityClassName": "low", "containers": [container("1500m")]},
            "status": {"phase": "Running"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "incoming", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "priorityClassName": "high",
                "containers": [container("1")],
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": zone,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ],
            },
            "status": {"phase": "Pending", "nominatedNodeName": "n3"},
        },
    ]
    path = tmp_path / "nominated.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    (theirs,) = upstream(binaries() / "oracle", [path])
    mine = kubesched(path)
    assert theirs[0]["victims"] == mine["victims"] == ["default/b"]
    assert theirs[0]["nominatedNode"] == mine["nominatedNode"] == "n1"
    assert theirs[0]["node"] == mine["node"] == "n1"
    assert not disagreement(theirs[0], mine)
