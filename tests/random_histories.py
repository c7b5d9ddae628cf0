"""Random API histories for the history differential (``tests/histories.py``): a few nodes and a
sequence of what happens to a cluster in use. Pods are placed by another component (bound at
create, as a kubelet's or another scheduler's) or left to the scheduler (``probe``: pending, held
to one node by name, some of high priority so that they preempt, some held by a scheduling gate
until a later step removes it); then pods finish
(Succeeded or Failed, as a Job's do), are deleted and stay terminating until the kubelet step
stops them, nodes are cordoned, tainted, go NotReady (with the node lifecycle controller's
taints), are deleted and come back (their pods stay bound to the name).

``make_history(rng)`` takes anything with ``random.Random``'s methods (``tests/random_clusters.Rng``):
a seeded ``random.Random`` for the large run (``scripts/histories.py``) and the test."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.random_clusters import Rng, chance


@dataclass(frozen=True)
class Step:
    """One thing that happens: ``op`` on ``target`` (a pod's or node's template name)."""

    op: str
    target: str = ""
    pod: dict[str, Any] = field(default_factory=dict)  # the pod's template, for run and probe

    def __str__(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.pod.items() if k != "name")
        return " ".join(x for x in (self.op, self.target, extra) if x)


@dataclass
class History:
    nodes: list[dict[str, str]]
    steps: list[Step]

    def __str__(self) -> str:
        nodes = ", ".join(f"{n['name']}(cpu {n['cpu']}, pods {n['pods']})" for n in self.nodes)
        return f"nodes {nodes}; " + "; ".join(str(s) for s in self.steps)


NODE_OPS = ("cordon", "uncordon", "taint", "untaint", "notready", "ready", "delete-node", "recreate-node")


def pod_template(rng: Rng, name: str, node: str, *, probe: bool) -> dict[str, Any]:
    return {
        "name": name,
        "node": node,
        "cpu": rng.choice(["300m", "700m", "1", "1500m"]),
        "priority": "high" if probe and chance(rng, 0.3) else "low",
        "port": chance(rng, 0.15),
        "gated": probe and chance(rng, 0.1),  # held by a scheduling gate until an ungate step
    }


def make_history(rng: Rng, steps: int = 10) -> History:
    nodes = [
        {"name": f"n{i}", "cpu": rng.choice(["2", "4"]), "pods": rng.choice(["110", "110", "3"])}
        for i in range(rng.randint(1, 3))
    ]
    names = [n["name"] for n in nodes]
    out: list[Step] = []
    alive: list[str] = []  # pods created and not deleted
    count = 0

    gated: list[str] = []  # probes still held by their scheduling gate

    def new_pod(op: str) -> None:
        nonlocal count
        name = f"{'r' if op == 'run' else 'p'}{count}"
        count += 1
        template = pod_template(rng, name, rng.choice(names), probe=op == "probe")
        out.append(Step(op, name, template))
        alive.append(name)
        if template["gated"]:
            gated.append(name)

    for _ in range(rng.randint(1, 3)):
        new_pod("run")
    while len(out) < steps:
        roll = rng.random()
        if roll < 0.35:
            new_pod("probe")
        elif roll < 0.45:
            new_pod("run")
        elif roll < 0.6 and alive:
            out.append(Step("finish-" + rng.choice(["Succeeded", "Failed"]), rng.choice(alive)))
        elif roll < 0.7 and alive:
            target = rng.choice(alive)
            out.append(Step("terminate", target))
            alive.remove(target)
        elif roll < 0.77:
            out.append(Step("kubelet"))
        elif roll < 0.85 and gated:
            out.append(Step("ungate", gated.pop(0)))
        else:
            out.append(Step(rng.choice(NODE_OPS), rng.choice(names)))
    return History(nodes, out)
