"""Upstream's scheduler as the oracle, in process: ``upstream/cmd/oracle`` runs kube-scheduler
v1.37.2's scheduler (default profile, fake clientset, shared informers) on a cluster file and prints
each pending pod's node or FailedScheduling message, with every plugin's weighted score per node.
Seeded random clusters, each with one pending pod so that no random pick among tied nodes steers
what follows, go through it and through ``kubesched simulate``: an unschedulable pod's message must
be upstream's word for word, a scheduled pod's node one of upstream's top-scored nodes, and every
plugin's weighted score on every node (kubesched's results on the pod) upstream's."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from tests.upstream import binaries

from kubesched.cli import main
from kubesched.testing import Cluster

FINAL_SCORES = "kube-scheduler-simulator.sigs.k8s.io/finalscore-result"
SEED = 1137
CASES = 200


def node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"n{i}"
    spec: dict[str, Any] = {}
    if rng.random() < 0.25:
        spec["taints"] = [
            {"key": "dedicated", "value": "gpu", "effect": rng.choice(["NoSchedule", "PreferNoSchedule"])}
        ]
    allocatable = {"cpu": str(rng.choice([2, 4, 8, 16])), "memory": rng.choice(["4Gi", "8Gi", "32Gi"]), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": rng.choice(["a", "b", "c"])},
        },
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": allocatable},
    }


def pod(name: str, rng: random.Random, node_name: str | None, app: str) -> dict[str, Any]:
    requests: dict[str, str] = {"cpu": rng.choice(["100m", "250m", "500m", "1", "2", "3"])}
    if rng.random() < 0.7:
        requests["memory"] = rng.choice(["128Mi", "512Mi", "1Gi", "4Gi"])
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    elif rng.random() < 0.3:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    affinity: dict[str, Any] = {}
    if not node_name and rng.random() < 0.4:
        affinity["nodeAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": rng.choice([1, 50, 100]),
                    "preference": {
                        "matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [rng.choice("abc")]}
                        ]
                    },
                }
            ]
        }
    if not node_name and rng.random() < 0.3:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": app}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": spec,
    }


def make_case(case: int) -> list[dict[str, Any]]:
    rng = random.Random(SEED * 1000 + case)
    nodes = [node(i, rng) for i in range(rng.randint(2, 6))]
    bound = [
        pod(f"b{i}", rng, rng.choice(nodes)["metadata"]["name"], rng.choice(["web", "db"]))
        for i in range(rng.randint(0, 6))
    ]
    return [*nodes, *bound, pod("incoming", rng, None, rng.choice(["web", "db"]))]


def oracle(path: Path) -> dict[str, Any]:
    done = subprocess.run([str(binaries() / "oracle"), str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[0]


def ours(path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["simulate", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    return next(p for p in json.loads(result.stdout)["pods"] if p["name"] == "incoming")


@pytest.mark.parametrize("case", range(CASES))
def test_kubesched_decides_as_upstreams_scheduler(tmp_path, case):
    objects = make_case(case)
    path = tmp_path / f"case-{case}.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    theirs, mine = oracle(path), ours(path)
    if theirs.get("message"):
        assert mine["nodeName"] is None and mine["message"] == theirs["message"], (objects, theirs)
    else:  # one feasible node is not scored: it is the top one
        assert mine["nodeName"] in theirs.get("topNodes", [theirs["node"]]), (objects, theirs, mine)
    # every plugin's weighted score on every node: a plugin kubesched skips scores 0 upstream
    cluster = Cluster(*objects, results=True)
    cluster.settle()
    annotations = cluster.store.get("Pod", "default", "incoming")["metadata"].get("annotations") or {}
    scores = json.loads(annotations.get(FINAL_SCORES) or "{}")
    for node_name, plugins in (theirs.get("scores") or {}).items():
        mine_there = {k: int(v) for k, v in (scores.get(node_name) or {}).items()}
        for plugin in {*plugins, *mine_there}:
            assert mine_there.get(plugin, 0) == plugins.get(plugin, 0), (case, node_name, plugin, plugins, mine_there)
