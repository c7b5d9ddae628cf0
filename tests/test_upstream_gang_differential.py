"""Random gang clusters judged by upstream: seeded clusters of nodes, PodGroups (gangs of random
minCount) and loose pods, their pods and groups in a shuffled order, run through kube-scheduler
v1.37.2's scheduler (the oracle's ``--together``: every pending pod created in the file's order,
taken in the queue's order) and through ``kubesched simulate``; each pod must end bound or not
alike, with the same first FailedScheduling message, and each PodGroup with the same
``PodGroupInitiallyScheduled`` condition. (Which of two equal nodes a pod took is upstream's random
pick: not compared.)"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.helpers import make_node, make_pod, make_priority_class
from tests.oracle import upstream
from tests.test_gang_scheduling import GATES, _write, member, pod_group
from tests.upstream import binaries

from kubesched.features import FeatureGates
from kubesched.simulate.runner import simulate

CASES = 30


def gang_cluster(seed: int) -> list[dict[str, Any]]:
    r = random.Random(seed)
    objs = [make_node(f"n{i}", cpu=str(r.randint(1, 4))) for i in range(r.randint(1, 4))]
    rest: list[dict[str, Any]] = []
    for g in range(r.randint(1, 3)):
        size = r.randint(1, 4)
        cpu = str(r.randint(1, 2))
        rest.append(pod_group(f"g{g}", r.randint(1, size)))
        rest += [member(f"g{g}-{i}", f"g{g}", cpu=cpu) for i in range(size)]
    rest += [make_pod(f"loose-{i}", cpu="1") for i in range(r.randint(0, 2))]
    r.shuffle(rest)  # a member may come before its PodGroup, a loose pod between members
    return objs + rest


def test_random_gang_clusters_agree_with_upstream(tmp_path: Path) -> None:
    paths = [_write(tmp_path, f"case-{i}", gang_cluster(i)) for i in range(CASES)]
    theirs = upstream(binaries() / "oracle", paths, gates=GATES, together=True)
    disagreements = []
    for i, (path, outcome) in enumerate(zip(paths, theirs, strict=True)):
        mine = simulate([str(path)], feature_gates=FeatureGates.parse(GATES))
        pods = {}
        for p in mine.pods:
            messages = [
                e["message"] for e in mine.events if e["reason"] == "FailedScheduling" and e["name"] == p["name"]
            ]
            pods[p["name"]] = (bool(p["nodeName"]), messages[0] if messages else None)
        expected = {r["pod"].split("/")[1]: (bool(r.get("node")), (r.get("messages") or [None])[0]) for r in outcome}
        for name in sorted(expected):
            if expected[name] != pods.get(name):
                disagreements.append(f"case {i} pod {name}: upstream {expected[name]}, kubesched {pods.get(name)}")
        groups = {g["name"]: g["condition"] for g in mine.pod_groups}
        for r in outcome:
            group = r.get("podGroup")
            name = r["pod"].split("/")[1].split("-")[0]
            if group is not None and groups.get(name) != group:
                disagreements.append(f"case {i} podgroup {name}: upstream {group}, kubesched {groups.get(name)}")
    assert not disagreements, "\n".join(disagreements[:10])


def preempting_cluster(seed: int) -> list[dict[str, Any]]:
    """Nodes of distinct sizes (no two score alike) full of lower-priority pods, some of them in a
    PodGroup evicted whole, and a gang of higher priority that fits only by preempting."""
    r = random.Random(seed)
    n = r.randint(2, 4)
    objs: list[dict[str, Any]] = [make_priority_class("high", 100)]
    objs += [make_node(f"n{i}", cpu=str(i + 1)) for i in range(n)]
    if r.random() < 0.5:
        objs.append(pod_group("whole", 2, disruptionMode={"all": {}}))
        objs += [member(f"whole-{k}", "whole", cpu="500m", node=f"n{k}") for k in range(2)]
    for i in range(n):
        objs += [make_pod(f"low-{i}-{k}", cpu=f"{r.choice([400, 600, 800])}m", node=f"n{i}") for k in range(i + 1)]
    size = r.randint(1, n)
    objs.append(pod_group("g", size, priorityClassName="high"))
    objs += [member(f"g-{k}", "g", cpu=str(r.randint(1, 2)), priority_class="high") for k in range(size)]
    return objs


def test_random_preempting_gangs_evict_what_upstream_evicts(tmp_path: Path) -> None:
    """Workload-aware preemption judged by upstream: the same victims evicted, and each pod of the
    gang bound or not alike (kubesched's reprieve checks only the victim's own nodes here)."""
    paths = [_write(tmp_path, f"preempt-{i}", preempting_cluster(i)) for i in range(CASES)]
    theirs = upstream(binaries() / "oracle", paths, gates=GATES, together=True)
    disagreements = []
    evicted = 0
    for i, (path, outcome) in enumerate(zip(paths, theirs, strict=True)):
        mine = simulate([str(path)], feature_gates=FeatureGates.parse(GATES))
        victims = sorted(
            f"{d['namespace']}/{d['name']}" for d in mine.deleted_pods if d.get("reason") == "PreemptionByScheduler"
        )
        if victims != sorted(outcome[0].get("victims") or []):
            disagreements.append(f"case {i}: upstream evicts {outcome[0].get('victims')}, kubesched {victims}")
        evicted += len(victims)
        bound = {p["name"]: bool(p["nodeName"]) for p in mine.pods}
        for r in outcome:
            name = r["pod"].split("/")[1]
            if name.startswith("g-") and bool(r.get("node")) != bound.get(name):
                disagreements.append(f"case {i} pod {name}: upstream {r.get('node')}, kubesched {bound.get(name)}")
    assert not disagreements, "\n".join(disagreements[:10])
    assert evicted >= CASES  # the cases preempt
