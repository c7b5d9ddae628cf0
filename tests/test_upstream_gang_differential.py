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

from tests.helpers import make_node, make_pod
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
