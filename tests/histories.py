"""The history differential: a random history (``tests/random_histories.py``) replayed on one
kube-apiserver v1.37.2 for kube-scheduler v1.37.2 and for ``kubesched scheduler`` at once. Each
history is played twice, once per side: side ``up``'s nodes and pods for kube-scheduler, side
``ks``'s for kubesched, the same names behind a side prefix, each pod the scheduler places held
to one node by name (so every other node is left out alike for both). After every step both sides
settle, and every pod of the history is compared: whether and where it is bound, its
nominatedNodeName, its phase, whether it is terminating, and its PodScheduled condition's message
word for word, but for the counts of nodes outside the history (other histories run beside it on
the same API server), which are written ``*``.

Time only a real clock gives is driven alike on both sides: both schedulers back off 1 s at most
(``HISTORY_SETTINGS``), and a step is settled when no pod of the history changed for ``QUIET``
seconds, longer than any backoff; nothing here waits for the five-minute flush of unschedulable
pods (every step that could help a pod is a cluster event both schedulers see)."""

from __future__ import annotations

import re
import time
from typing import Any

from tests.random_histories import History, Step
from tests.upstream import SIDES, ControlPlane

HISTORY_SETTINGS = "podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 1\n"
QUIET = 3.0  # seconds without a change in the history's pods: settled
STEP_LIMIT = 40.0  # seconds a step may take to settle
# each pod its own priority, high or low (``low-<n>``, ``high-<n>`` for the pod numbered n):
# preemption's choice of victims among pods of one priority falls to their start times, which no
# kubelet sets here (upstream then reads the time of the call), so ties are not drawn
PRIORITY_CLASSES = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": f"{level}-{n}"},
        "value": base + n,
    }
    for level, base in (("low", 10), ("high", 1000))
    for n in range(100)
]
NS = "/api/v1/namespaces/default/pods"
MERGE = "application/merge-patch+json"
# the count of the nodes outside the history (others run beside it on the same API server): * on
# both sides; NodeAffinity's PreFilter leaves them out of the attempt, so no other count has them
OUTSIDE = [
    (re.compile(r"0/\d+ nodes are available"), "0/* nodes are available"),
    (re.compile(r"\d+ (node\(s\) didn't satisfy plugin\(s\) \[)"), r"* \1"),
    (re.compile(r"\d+ (Preemption is not helpful for scheduling)"), r"* \1"),
]


class Replay:
    """One history on ``plane``, numbered ``case`` (its objects' names and labels)."""

    def __init__(self, plane: ControlPlane, history: History, case: int) -> None:
        self.plane = plane
        self.history = history
        self.case = case
        self.nodes = {n["name"]: dict(n) for n in history.nodes}
        self.state = {n: {"present": True, "cordon": False, "taint": False, "notready": False} for n in self.nodes}
        self.observed: list[dict[str, dict[str, tuple[Any, ...]]]] = []

    # -- names ------------------------------------------------------------------------------------
    def name(self, side: str, template: str) -> str:
        return f"h{self.case}-{side}-{template}"

    def template(self, side: str, name: str) -> str:
        return name.removeprefix(f"h{self.case}-{side}-")

    # -- objects ----------------------------------------------------------------------------------
    def node_object(self, side: str, template: str) -> dict[str, Any]:
        n = self.nodes[template]
        name = self.name(side, template)
        allocatable = {"cpu": n["cpu"], "memory": "16Gi", "pods": n["pods"]}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "side": side, "slot": f"h{self.case}-{template}"},
            },
            "status": {"allocatable": allocatable, "capacity": allocatable, "conditions": self.conditions(template)},
        }

    def conditions(self, template: str) -> list[dict[str, Any]]:
        ready = "False" if self.state[template]["notready"] else "True"
        return [{"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "KubeletNotReady"}]

    def spec(self, template: str) -> dict[str, Any]:
        """The node's spec as the node lifecycle controller leaves it: its taints for NotReady
        and cordoned nodes (``TaintNodesByCondition``), beside the history's own taint."""
        st = self.state[template]
        taints: list[dict[str, Any]] = []
        if st["taint"]:
            taints.append({"key": "dedicated", "value": "batch", "effect": "NoSchedule"})
        if st["notready"]:
            taints += [{"key": "node.kubernetes.io/not-ready", "effect": e} for e in ("NoSchedule", "NoExecute")]
        if st["cordon"]:
            taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
        return {"unschedulable": st["cordon"] or None, "taints": taints or None}

    def pod_object(self, side: str, step: Step) -> dict[str, Any]:
        p = step.pod
        container: dict[str, Any] = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": p["cpu"]}}}
        if p["port"]:
            container["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        digits = "".join(ch for ch in step.target if ch.isdigit())
        number = int(digits) % 100 if digits else 0
        spec: dict[str, Any] = {"containers": [container], "priorityClassName": f"{p['priority']}-{number}"}
        if step.op == "run":  # placed by another component: bound at create, to the name even if gone
            spec |= {"nodeName": self.name(side, p["node"]), "schedulerName": "other-scheduler"}
        else:
            # held to its node by name, as a DaemonSet's pod is: NodeAffinity's PreFilter narrows
            # the attempt to that node, so no other node (another history's) is looked at
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [self.name(side, p["node"])]}]}
            affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
            spec |= {"schedulerName": SIDES[side], "affinity": {"nodeAffinity": affinity}}
            if p.get("gated"):
                spec["schedulingGates"] = [{"name": "example.com/hold"}]
        labels = {"hist": f"h{self.case}", "side": side, "tmpl": step.target}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name(side, step.target), "labels": labels},
            "spec": spec,
        }

    # -- steps ------------------------------------------------------------------------------------
    def ok(self, got: tuple[int, Any], *allowed: int) -> None:
        code, body = got
        assert code in (*allowed, 200, 201), (self.case, code, body)

    def put_node(self, side: str, template: str) -> None:
        node = self.node_object(side, template)
        self.ok(self.plane.request("POST", "/api/v1/nodes", node))
        self.patch_node(side, template)

    def patch_node(self, side: str, template: str) -> None:
        name = self.name(side, template)
        # kube-apiserver taints a new node not-ready; the history's own taints replace that
        self.ok(self.plane.request("PATCH", f"/api/v1/nodes/{name}", {"spec": self.spec(template)}, content_type=MERGE))
        status = {"status": {"conditions": self.conditions(template)}}
        self.ok(self.plane.request("PATCH", f"/api/v1/nodes/{name}/status", status, content_type=MERGE))

    def start(self) -> None:
        for side in SIDES:
            for template in self.nodes:
                self.put_node(side, template)

    def apply(self, step: Step) -> None:
        op, target = step.op, step.target
        for side in SIDES:
            name = self.name(side, target)
            if op in ("run", "probe"):
                self.ok(self.plane.request("POST", NS, self.pod_object(side, step)))
                if op == "run":
                    status = {"status": {"phase": "Running"}}
                    self.ok(self.plane.request("PATCH", f"{NS}/{name}/status", status, content_type=MERGE))
            elif op.startswith("finish-"):  # the kubelet's report that the pod's containers exited
                status = {"status": {"phase": op.removeprefix("finish-")}}
                self.ok(self.plane.request("PATCH", f"{NS}/{name}/status", status, content_type=MERGE), 404, 422)
            elif op == "ungate":  # the gate's controller lets the pod be scheduled
                gates = {"spec": {"schedulingGates": None}}
                self.ok(self.plane.request("PATCH", f"{NS}/{name}", gates, content_type=MERGE), 404)
            elif op == "terminate":  # graceful: a bound pod stays until the kubelet step
                self.ok(self.plane.request("DELETE", f"{NS}/{name}"), 404)
            elif op == "kubelet":  # the kubelet stops every terminating pod of the history
                for pod in self.pods(side):
                    if pod["metadata"].get("deletionTimestamp"):
                        gone = {"gracePeriodSeconds": 0}
                        self.ok(self.plane.request("DELETE", f"{NS}/{pod['metadata']['name']}", gone), 404)
        if op in ("cordon", "uncordon", "taint", "untaint", "notready", "ready"):
            key = {"uncordon": "cordon", "untaint": "taint", "ready": "notready"}.get(op, op)
            self.state[target][key] = op == key
            if self.state[target]["present"]:
                for side in SIDES:
                    self.patch_node(side, target)
        elif op == "delete-node" and self.state[target]["present"]:
            self.state[target]["present"] = False
            for side in SIDES:
                self.ok(self.plane.request("DELETE", f"/api/v1/nodes/{self.name(side, target)}"), 404)
        elif op == "recreate-node" and not self.state[target]["present"]:
            self.state[target]["present"] = True
            for side in SIDES:
                self.put_node(side, target)

    # -- observing --------------------------------------------------------------------------------
    def pods(self, side: str | None = None) -> list[dict[str, Any]]:
        selector = f"hist=h{self.case}" + (f",side={side}" if side else "")
        code, body = self.plane.request("GET", f"{NS}?labelSelector={selector}")
        assert code == 200, body
        return list(body.get("items") or [])

    def snapshot(self) -> dict[str, dict[str, tuple[Any, ...]]]:
        """Per side, per pod template: (node, nominated node, phase, terminating, message)."""
        out: dict[str, dict[str, tuple[Any, ...]]] = {side: {} for side in SIDES}
        for pod in self.pods():
            meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
            side = meta["labels"]["side"]
            cond = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
            message = str(cond.get("message") or "") if cond.get("status") == "False" else ""
            for pattern, written in OUTSIDE:
                message = pattern.sub(written, message)
            message = message.replace(f"h{self.case}-{side}-", "")
            out[side][meta["labels"]["tmpl"]] = (
                self.template(side, spec.get("nodeName") or ""),
                self.template(side, status.get("nominatedNodeName") or ""),
                status.get("phase") or "",
                bool(meta.get("deletionTimestamp")),
                message,
            )
        return out

    def settle(self) -> dict[str, dict[str, tuple[Any, ...]]]:
        """The pods once nothing of the history changed for QUIET seconds (or STEP_LIMIT passed)."""
        start = last_change = time.monotonic()
        seen = self.snapshot()
        while time.monotonic() - last_change < QUIET and time.monotonic() - start < STEP_LIMIT:
            time.sleep(0.25)
            now = self.snapshot()
            if now != seen:
                seen, last_change = now, time.monotonic()
        return seen

    def run(self) -> str:
        """Replay the history; "" when both sides agreed after every step, else the first step
        where they did not and what differed."""
        self.start()
        for i, step in enumerate(self.history.steps):
            self.apply(step)
            seen = self.settle()
            self.observed.append(seen)
            differs = difference(seen["up"], seen["ks"])
            if differs:
                return f"history {self.case}, step {i} ({step}): {differs}"
        return ""

    def clean(self) -> None:
        for pod in self.pods():
            self.plane.request("DELETE", f"{NS}/{pod['metadata']['name']}", {"gracePeriodSeconds": 0})
        for side in SIDES:
            for template in self.nodes:
                self.plane.request("DELETE", f"/api/v1/nodes/{self.name(side, template)}")


FIELDS = ("node", "nominated", "phase", "terminating", "message")


PLACEMENT = re.compile(r"preemption: found a potential placement for pod on node (\S+), preempting \d+ victims$")
NOT_ELIGIBLE = "preemption: not eligible due to a terminating pod on the nominated node."
ABSENT_PLUGINS = re.compile(r"didn't satisfy plugin\(s\) \[[^\]]*\]")


def one_retry_apart(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Two states of one preemptor an attempt apart: nominated to the same node, whose victims are
    still terminating, with the preemption's message (``found a potential placement``) on one side
    and the next attempt's (``not eligible``, the nominated node filtered first) on the other.
    Other histories on the same API server requeue pods at moments the two schedulers see apart
    (a pod deleted anywhere requeues every pod NodeResourcesFit rejected), so whether that next
    attempt has come when a step settles is timing, not a decision."""
    if a[:4] != b[:4] or not a[1] or a[4] == b[4]:
        return False

    def shape(message: str) -> str | None:
        placed = PLACEMENT.search(message)
        if placed is not None:
            if placed.group(1) != a[1]:
                return None
            head = message[: placed.start()]
        elif message.endswith(NOT_ELIGIBLE):
            head = message[: -len(NOT_ELIGIBLE)]
        else:
            return None
        return ABSENT_PLUGINS.sub("didn't satisfy plugin(s) [...]", head)

    first, second = shape(a[4]), shape(b[4])
    return first is not None and first == second


def difference(up: dict[str, tuple[Any, ...]], ks: dict[str, tuple[Any, ...]]) -> str:
    out = []
    for pod in sorted(set(up) | set(ks)):
        a, b = up.get(pod), ks.get(pod)
        if a == b or (a is not None and b is not None and one_retry_apart(a, b)):
            continue
        if a is None or b is None:
            out.append(f"{pod}: upstream {'gone' if a is None else a}, kubesched {'gone' if b is None else b}")
            continue
        for f, x, y in zip(FIELDS, a, b, strict=True):
            if x != y:
                out.append(f"{pod} {f}: upstream {x!r}, kubesched {y!r}")
    return "; ".join(out)


def nominations(replay: Replay, side: str) -> dict[str, list[str]]:
    """Each pod's nominatedNodeName values, in the order the steps saw them (repeats folded)."""
    out: dict[str, list[str]] = {}
    for seen in replay.observed:
        for pod, state in seen[side].items():
            values = out.setdefault(pod, [])
            if state[1] and (not values or values[-1] != state[1]):
                values.append(state[1])
    return out
