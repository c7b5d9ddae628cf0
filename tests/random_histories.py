"""Random API histories for the history differential (``tests/histories.py``): a few nodes (some
publishing a GPU or two through a DRA driver's ResourceSlice) and a sequence of what happens to a
cluster in use. Pods are placed by another component (bound at create, as a kubelet's or another
scheduler's) or left to the scheduler (``probe``: pending, held to one node by name, some of high
priority so that they preempt, some held by a scheduling gate until a later step removes it, some
with a ResourceClaim for a GPU); then pods finish (Succeeded or Failed, as a Job's do), are
deleted and stay terminating until the kubelet step stops them, are rolled out (a Deployment's
surge: the new pod created, the old one deleted), PodDisruptionBudgets are created, changed and
deleted over them, priority classes are added (some never preempting) and used, the resource
claim controller releases the claims of pods that are done, nodes are cordoned, tainted, go
NotReady (with the node lifecycle controller's taints), are deleted and come back (their pods
stay bound to the name).

Every choice is an integer drawn from a range (``Draws.integer``), so a history is its sequence of
integers: ``make_history(seed)`` draws them from a seeded ``random.Random`` for the large run
(``scripts/histories.py``) and the test; ``Drawn`` draws them from hypothesis, which replays a
seed's sequence (``Seeded.drawn``) and shrinks it (``scripts/histories.py --shrink``)."""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass, field
from typing import Any, Protocol


class Draws(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...


class Seeded:
    """A seed's draws, each recorded (``drawn``: the sequence hypothesis replays)."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)
        self.drawn: list[int] = []

    def integer(self, lo: int, hi: int) -> int:
        value = self._random.randint(lo, hi)
        self.drawn.append(value)
        return value


class Drawn:
    """Draws from hypothesis' ``st.data()``: each one integer choice, shrunk toward ``lo``."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data, self._integers = data, st.integers

    def integer(self, lo: int, hi: int) -> int:
        return int(self._data.draw(self._integers(lo, hi)))


def pick(draws: Draws, seq: list[Any] | tuple[Any, ...]) -> Any:
    return seq[draws.integer(0, len(seq) - 1)]


def percent(draws: Draws, p: int) -> bool:
    """True ``p`` times in 100 (false where hypothesis shrinks to)."""
    return draws.integer(0, 99) >= 100 - p


@dataclass(frozen=True)
class Step:
    """One thing that happens: ``op`` on ``target`` (a pod's, node's or PDB's template name)."""

    op: str
    target: str = ""
    pod: dict[str, Any] = field(default_factory=dict)  # the pod's template (run, probe), a PDB's, a class's

    def __str__(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.pod.items() if k != "name")
        return " ".join(x for x in (self.op, self.target, extra) if x)


@dataclass
class History:
    nodes: list[dict[str, str]]
    steps: list[Step]

    def __str__(self) -> str:
        nodes = ", ".join(
            f"{n['name']}(cpu {n['cpu']}, pods {n['pods']}{', gpus ' + n['gpus'] if n.get('gpus', '0') != '0' else ''})"
            for n in self.nodes
        )
        return f"nodes {nodes}; " + "; ".join(str(s) for s in self.steps)


NODE_OPS = ("cordon", "uncordon", "taint", "untaint", "notready", "ready", "delete-node", "recreate-node")
APPS = ("a", "b")


def pod_template(draws: Draws, name: str, node: str, *, probe: bool, gpus: bool) -> dict[str, Any]:
    template = {
        "name": name,
        "node": node,
        "cpu": pick(draws, ["300m", "700m", "1", "1500m"]),
        "priority": "high" if probe and percent(draws, 30) else "low",
        "port": percent(draws, 15),
        "gated": probe and percent(draws, 10),  # held by a scheduling gate until an ungate step
        "app": pick(draws, APPS),  # what PodDisruptionBudgets select
    }
    if probe and gpus and percent(draws, 30):
        template["claim"] = True  # a ResourceClaim of its own, for one GPU
    return template


def make_history(source: Draws | int, steps: int = 16) -> History:
    """A history of 1 to ``steps`` steps from a seed or from draws."""
    draws = Seeded(source) if isinstance(source, int) else source
    nodes = [
        {
            "name": f"n{i}",
            "cpu": pick(draws, ["2", "4"]),
            "pods": pick(draws, ["110", "110", "3"]),
            "gpus": pick(draws, ["0", "1", "2"]),
        }
        for i in range(draws.integer(1, 3))
    ]
    names = [n["name"] for n in nodes]
    gpus = any(n["gpus"] != "0" for n in nodes)
    length = draws.integer(1, steps)
    out: list[Step] = []
    alive: list[str] = []  # pods created and not deleted
    probes: list[str] = []  # pods left to the scheduler, created and not deleted
    gated: list[str] = []  # probes still held by their scheduling gate
    templates: dict[str, dict[str, Any]] = {}
    pdbs: set[str] = set()
    count = 0

    def add(op: str, template: dict[str, Any]) -> None:
        name = template["name"]
        out.append(Step(op, name, template))
        templates[name] = template
        alive.append(name)
        if op != "run":
            probes.append(name)
        if template["gated"]:
            gated.append(name)

    def fresh_name(op: str) -> str:
        nonlocal count
        count += 1
        return f"{'r' if op == 'run' else 'p'}{count - 1}"

    def new_pod(op: str) -> None:
        name = fresh_name(op)
        add(op, pod_template(draws, name, pick(draws, names), probe=op == "probe", gpus=gpus))

    def gone(name: str) -> None:
        alive.remove(name)
        if name in probes:
            probes.remove(name)

    for _ in range(draws.integer(1, 3)):
        new_pod("run")
    while len(out) < length:
        roll = draws.integer(0, 99)
        if roll < 30:
            new_pod("probe")
        elif roll < 37:
            new_pod("run")
        elif roll < 48 and alive:
            out.append(Step("finish-" + pick(draws, ["Succeeded", "Failed"]), pick(draws, alive)))
        elif roll < 55 and alive:
            target = pick(draws, alive)
            out.append(Step("terminate", target))
            gone(target)
        elif roll < 61:
            out.append(Step("kubelet"))
        elif roll < 65 and gated:
            out.append(Step("ungate", gated.pop(0)))
        elif roll < 70 and probes:  # a Deployment's rolling update: surge one, then delete the old
            old = pick(draws, probes)
            add("probe", {**templates[old], "name": fresh_name("probe"), "gated": False})
            out.append(Step("terminate", old))
            gone(old)
        elif roll < 76:  # the disruption controller's verdict on a budget changes, or it goes
            app = pick(draws, APPS)
            if app in pdbs and percent(draws, 30):
                out.append(Step("delete-pdb", app))
                pdbs.discard(app)
            else:
                out.append(Step("pdb", app, {"name": app, "allowed": draws.integer(0, 1)}))
                pdbs.add(app)
        elif roll < 80:  # a priority class added, and a pod that names it (the class is named for the pod)
            name = fresh_name("probe")
            template = pod_template(draws, name, pick(draws, names), probe=True, gpus=gpus)
            template["priority"] = "added"
            template["class"] = name  # the class is named for its first pod; a rollout's pod keeps it
            template["never"] = percent(draws, 40)  # preemptionPolicy: Never
            template["above"] = percent(draws, 50)  # above every other class, else between low and high
            add("add-class", template)
        elif roll < 85 and gpus:
            out.append(Step("release"))  # the resource claim controller frees done pods' claims
        else:
            out.append(Step(pick(draws, NODE_OPS), pick(draws, names)))
    return History(nodes, out)


def shrunk(number: int, disagrees: Any, *, seconds: float) -> list[tuple[History, str]]:
    """Hypothesis' shrinking of history ``number``: its seed's draws are replayed first (as if
    hypothesis had saved them from an earlier failure), and while they disagree hypothesis
    shrinks them, each try a history ``disagrees`` judges (its disagreement, or ""). Past
    ``seconds`` every try counts as agreeing, which ends the shrink. Returns each disagreeing
    history tried, in order: the last is the smallest hypothesis found."""
    from hypothesis import Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.database import ExampleDatabase, choices_to_bytes

    seeded = Seeded(number)
    make_history(seeded)

    class SeedFirst(ExampleDatabase):
        """What hypothesis saves while it shrinks, and the seed's draws as a failure it kept aside
        (under its secondary key: one under the primary key it takes as shrunk already)."""

        def __init__(self) -> None:
            super().__init__()
            self.saved: dict[bytes, set[bytes]] = {}

        def fetch(self, key: bytes) -> Any:
            yield from list(self.saved.get(key, ()))
            if key.endswith(b".secondary"):
                yield choices_to_bytes(tuple(seeded.drawn))

        def save(self, key: bytes, value: bytes) -> None:
            self.saved.setdefault(key, set()).add(value)

        def delete(self, key: bytes, value: bytes) -> None:
            self.saved.get(key, set()).discard(value)

    found: list[tuple[History, str]] = []
    deadline = time.monotonic() + seconds

    @settings(
        database=SeedFirst(),
        phases=[Phase.reuse, Phase.shrink],
        deadline=None,
        report_multiple_bugs=False,
    )
    @given(st.data())
    def history_agrees(data: Any) -> None:
        history = make_history(Drawn(data))
        if time.monotonic() > deadline:
            return
        why = disagrees(history)
        if why:
            found.append((history, why))
            raise AssertionError(why)

    with contextlib.suppress(AssertionError):
        history_agrees()
    return found
