"""The history differential: a random history (``tests/random_histories.py``) replayed for
kube-scheduler v1.37.2 and for kubesched at once, each side on its own API server (two
kube-apiservers v1.37.2, one with kube-scheduler and one with ``kubesched scheduler``; or
``kubesched up`` for kubesched's side), so that neither scheduler sees the other's pods. Each
history is played twice, once per side: side ``up``'s nodes and pods for kube-scheduler, side
``ks``'s for kubesched, the same names behind a side prefix, each pod the scheduler places held
to one node by name (so every other node is left out alike for both). After every step both sides
settle, and every pod of the history is compared: whether and where it is bound, its
nominatedNodeName, its phase, whether it is terminating, and its PodScheduled condition's message
word for word, but for the counts of nodes outside the history (other histories run beside it on
the same API servers), which are written ``*``. Once the history is over, each pod's
FailedScheduling events are compared too.

Time only a real clock gives is driven alike on both sides: both schedulers back off 1 s at most
(``HISTORY_SETTINGS``), and a step is settled when no pod of the history changed for ``QUIET``
seconds, longer than any backoff; nothing here waits for the five-minute flush of unschedulable
pods (every step that could help a pod is a cluster event both schedulers see). What
kube-controller-manager would do is a step of its own, done alike on both sides: the node
lifecycle controller's taints, the disruption controller's verdict on a budget, the resource
claim controller's release of a done pod's claim."""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

from tests.random_clusters import DRIVER
from tests.random_histories import History, Step
from tests.upstream import SIDES


class Plane(Protocol):
    """An API server the replay drives: ``tests.upstream.ControlPlane`` or ``tests.live.Server``."""

    def request(self, method: str, path: str, body: Any = None, *, content_type: str = ...) -> tuple[int, Any]: ...


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
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
EVENTS = "/api/v1/namespaces/default/events"
FINALIZER = "resource.kubernetes.io/delete-protection"  # the scheduler's on a claim it allocates
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": DRIVER},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}
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

    def __init__(self, plane: Plane | dict[str, Plane], history: History, case: int) -> None:
        # one API server for both sides, or one per side (kube-apiserver for upstream's and
        # ``kubesched up`` for kubesched's, its embedded scheduler): ``Plane`` is either
        self.planes: dict[str, Plane] = plane if isinstance(plane, dict) else dict.fromkeys(SIDES, plane)
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

    def slice_object(self, side: str, template: str) -> dict[str, Any]:
        """The node's GPUs as its DRA driver's kubelet plugin publishes them."""
        node = self.name(side, template)
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-gpus"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"gpu-{k}"} for k in range(int(self.nodes[template].get("gpus", "0")))],
            },
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

    def priority_class(self, step: Step) -> tuple[str, dict[str, Any]]:
        """An added class's name and object: named for its pod, above every other class or between
        low and high, preempting or not."""
        owner = str(step.pod.get("class", step.target))
        name, number = f"h{self.case}-{owner}", pod_number(owner)
        obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": (3000 if step.pod.get("above") else 500) + number,
        }
        if step.pod.get("never"):
            obj["preemptionPolicy"] = "Never"
        return name, obj

    def claim_object(self, side: str, pod: str) -> dict[str, Any]:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"{self.name(side, pod)}-gpu", "labels": {"hist": f"h{self.case}", "side": side}},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}},
        }

    def pod_object(self, side: str, step: Step) -> dict[str, Any]:
        p = step.pod
        container: dict[str, Any] = {"name": "c", "image": "pause", "resources": {"requests": {"cpu": p["cpu"]}}}
        if p["port"]:
            container["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
        number = pod_number(step.target)
        priority = self.priority_class(step)[0] if p["priority"] == "added" else f"{p['priority']}-{number}"
        spec: dict[str, Any] = {"containers": [container], "priorityClassName": priority}
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
            if p.get("claim"):
                spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": f"{self.name(side, step.target)}-gpu"}]
        labels = {"hist": f"h{self.case}", "side": side, "tmpl": step.target, "app": p.get("app", "a")}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": self.name(side, step.target), "labels": labels},
            "spec": spec,
        }

    def pdb_object(self, side: str, app: str) -> dict[str, Any]:
        selector = {"matchLabels": {"hist": f"h{self.case}", "side": side, "app": app}}
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": self.name(side, f"pdb-{app}")},
            "spec": {"selector": selector, "minAvailable": 1},
        }

    # -- steps ------------------------------------------------------------------------------------
    def ok(self, got: tuple[int, Any], *allowed: int) -> None:
        code, body = got
        assert code in (*allowed, 200, 201), (self.case, code, body)

    def put_node(self, side: str, template: str) -> None:
        plane = self.planes[side]
        node = self.node_object(side, template)
        self.ok(plane.request("POST", "/api/v1/nodes", node))
        self.patch_node(side, template)
        if self.nodes[template].get("gpus", "0") != "0":
            self.ok(plane.request("POST", "/apis/resource.k8s.io/v1/resourceslices", self.slice_object(side, template)))

    def patch_node(self, side: str, template: str) -> None:
        plane, name = self.planes[side], self.name(side, template)
        # kube-apiserver taints a new node not-ready; the history's own taints replace that
        self.ok(plane.request("PATCH", f"/api/v1/nodes/{name}", {"spec": self.spec(template)}, content_type=MERGE))
        status = {"status": {"conditions": self.conditions(template)}}
        self.ok(plane.request("PATCH", f"/api/v1/nodes/{name}/status", status, content_type=MERGE))

    def delete_node(self, side: str, template: str) -> None:
        """The node and, as the garbage collector does (the slice is owned by its node), its slice."""
        plane, name = self.planes[side], self.name(side, template)
        self.ok(plane.request("DELETE", f"/api/v1/nodes/{name}"), 404)
        self.ok(plane.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}-gpus"), 404)

    def start(self) -> None:
        for side in SIDES:
            for template in self.nodes:
                self.put_node(side, template)

    def planes_once(self) -> list[Plane]:
        """Each API server once (cluster-scoped objects both sides share)."""
        return list({id(p): p for p in self.planes.values()}.values())

    def apply(self, step: Step) -> None:
        op, target = step.op, step.target
        if op == "add-class":  # cluster-scoped: once per API server
            for plane in self.planes_once():
                self.ok(plane.request("POST", CLASSES, self.priority_class(step)[1]))
        for side in SIDES:
            plane, name = self.planes[side], self.name(side, target)
            if op in ("run", "probe", "add-class"):
                if step.pod.get("claim"):
                    self.ok(plane.request("POST", CLAIMS, self.claim_object(side, target)))
                self.ok(plane.request("POST", NS, self.pod_object(side, step)))
                if op == "run":
                    status = {"status": {"phase": "Running"}}
                    self.ok(plane.request("PATCH", f"{NS}/{name}/status", status, content_type=MERGE))
            elif op.startswith("finish-"):  # the kubelet's report that the pod's containers exited
                status = {"status": {"phase": op.removeprefix("finish-")}}
                self.ok(plane.request("PATCH", f"{NS}/{name}/status", status, content_type=MERGE), 404, 422)
            elif op == "ungate":  # the gate's controller lets the pod be scheduled
                gates = {"spec": {"schedulingGates": None}}
                self.ok(plane.request("PATCH", f"{NS}/{name}", gates, content_type=MERGE), 404)
            elif op == "terminate":  # graceful: a bound pod stays until the kubelet step
                self.ok(plane.request("DELETE", f"{NS}/{name}"), 404)
            elif op == "kubelet":  # the kubelet stops every terminating pod of the history
                for pod in self.pods(side):
                    if pod["metadata"].get("deletionTimestamp"):
                        gone = {"gracePeriodSeconds": 0}
                        self.ok(plane.request("DELETE", f"{NS}/{pod['metadata']['name']}", gone), 404)
            elif op == "pdb":
                self.put_pdb(side, target, int(step.pod["allowed"]))
            elif op == "delete-pdb":
                self.ok(plane.request("DELETE", f"{PDBS}/{self.name(side, f'pdb-{target}')}"), 404)
            elif op == "release":
                self.release(side)
        if op in ("cordon", "uncordon", "taint", "untaint", "notready", "ready"):
            key = {"uncordon": "cordon", "untaint": "taint", "ready": "notready"}.get(op, op)
            self.state[target][key] = op == key
            if self.state[target]["present"]:
                for side in SIDES:
                    self.patch_node(side, target)
        elif op == "delete-node" and self.state[target]["present"]:
            self.state[target]["present"] = False
            for side in SIDES:
                self.delete_node(side, target)
        elif op == "recreate-node" and not self.state[target]["present"]:
            self.state[target]["present"] = True
            for side in SIDES:
                self.put_node(side, target)

    def put_pdb(self, side: str, app: str, allowed: int) -> None:
        """A budget over the side's pods of ``app``, and the disruption controller's verdict on it
        (``disruptionsAllowed``; no disruption controller runs)."""
        plane, name = self.planes[side], self.name(side, f"pdb-{app}")
        code, body = plane.request("GET", f"{PDBS}/{name}")
        if code == 404:
            code, body = plane.request("POST", PDBS, self.pdb_object(side, app))
            self.ok((code, body))
        status = {
            "observedGeneration": body["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": 1 + allowed,
            "desiredHealthy": 1,
            "expectedPods": 1 + allowed,
        }
        self.ok(plane.request("PATCH", f"{PDBS}/{name}/status", {"status": status}, content_type=MERGE))

    def release(self, side: str) -> None:
        """The resource claim controller (``syncClaim``, pkg/controller/resourceclaim/controller.go):
        a reservation for a pod that is gone or done (a terminal phase, or deleted unscheduled) is
        removed; a claim no pod reserves any more is deallocated and loses its finalizer."""
        plane = self.planes[side]
        pods = {p["metadata"]["name"]: p for p in self.pods(side)}

        def done(ref: dict[str, Any]) -> bool:
            pod = pods.get(ref.get("name", ""))
            if pod is None or pod["metadata"].get("uid") != ref.get("uid"):
                return True
            phase = (pod.get("status") or {}).get("phase")
            unscheduled = pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName")
            return phase in ("Succeeded", "Failed") or bool(unscheduled)

        for claim in self.claims(side):
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            remaining = [r for r in reserved if not done(r)]
            if len(remaining) == len(reserved):
                continue
            status["reservedFor"] = remaining or None
            finalizers = claim["metadata"].get("finalizers") or []
            if not remaining and FINALIZER in finalizers:
                status["allocation"] = None
            claim["status"] = status
            path = f"{CLAIMS}/{claim['metadata']['name']}"
            code, claim = plane.request("PUT", f"{path}/status", claim)
            self.ok((code, claim))
            if not (claim.get("status") or {}).get("allocation") and FINALIZER in finalizers:
                claim["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER] or None
                self.ok(plane.request("PUT", path, claim))

    # -- observing --------------------------------------------------------------------------------
    def pods(self, side: str) -> list[dict[str, Any]]:
        selector = f"hist=h{self.case},side={side}"
        code, body = self.planes[side].request("GET", f"{NS}?labelSelector={selector}")
        assert code == 200, body
        return list(body.get("items") or [])

    def claims(self, side: str) -> list[dict[str, Any]]:
        code, body = self.planes[side].request("GET", f"{CLAIMS}?labelSelector=hist%3Dh{self.case},side%3D{side}")
        assert code == 200, body
        return list(body.get("items") or [])

    def failures(self, side: str) -> dict[str, list[str]]:
        """Each pod's FailedScheduling notes, in the order they were first recorded, a repeat of
        the one before folded: client-go's event broadcaster writes a new Event when the pod
        (its resourceVersion, in ``regarding``) changed since the last, and counts a repeat of an
        unchanged pod's in the first one's series, whose count is timing."""
        selector = "reason%3DFailedScheduling"
        code, body = self.planes[side].request("GET", f"{EVENTS}?fieldSelector={selector}")
        assert code == 200, body
        prefix = f"h{self.case}-{side}-"
        mine = [e for e in body.get("items") or [] if e["involvedObject"].get("name", "").startswith(prefix)]
        mine.sort(key=lambda e: (e.get("eventTime") or e.get("firstTimestamp") or "", e["metadata"]["name"]))
        out: dict[str, list[str]] = {}
        for event in mine:
            notes = out.setdefault(event["involvedObject"]["name"].removeprefix(prefix), [])
            note = self.normalized(side, str(event.get("message") or ""))
            if not notes or notes[-1] != note:
                notes.append(note)
        return out

    def normalized(self, side: str, message: str) -> str:
        for pattern, written in OUTSIDE:
            message = pattern.sub(written, message)
        return message.replace(f"h{self.case}-{side}-", "")

    def snapshot(self) -> dict[str, dict[str, tuple[Any, ...]]]:
        """Per side, per pod template: (node, nominated node, phase, terminating, message)."""
        out: dict[str, dict[str, tuple[Any, ...]]] = {side: {} for side in SIDES}
        for side in SIDES:
            for pod in self.pods(side):
                meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
                cond = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
                message = str(cond.get("message") or "") if cond.get("status") == "False" else ""
                out[side][meta["labels"]["tmpl"]] = (
                    self.template(side, spec.get("nodeName") or ""),
                    self.template(side, status.get("nominatedNodeName") or ""),
                    status.get("phase") or "",
                    bool(meta.get("deletionTimestamp")),
                    self.normalized(side, message),
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
        where they did not and what differed. The pods' FailedScheduling events are compared once
        the history is over, as each step's events may still be on their way."""
        self.start()
        for i, step in enumerate(self.history.steps):
            self.apply(step)
            seen = self.settle()
            self.observed.append(seen)
            differs = difference(seen["up"], seen["ks"])
            if differs:
                return f"history {self.case}, step {i} ({step}): {differs}"
        differs = event_difference(*self.settled_failures())
        return f"history {self.case}, its FailedScheduling events: {differs}" if differs else ""

    def settled_failures(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Both sides' FailedScheduling notes once neither changed for ``QUIET`` seconds: each
        scheduler writes its events from a queue of its own, behind its attempts."""
        start = last_change = time.monotonic()
        seen = (self.failures("up"), self.failures("ks"))
        while time.monotonic() - last_change < QUIET and time.monotonic() - start < STEP_LIMIT:
            time.sleep(0.5)
            now = (self.failures("up"), self.failures("ks"))
            if now != seen:
                seen, last_change = now, time.monotonic()
        return seen

    def clean(self) -> None:
        for side in SIDES:
            plane = self.planes[side]
            for pod in self.pods(side):
                plane.request("DELETE", f"{NS}/{pod['metadata']['name']}", {"gracePeriodSeconds": 0})
                name = pod["metadata"]["name"]
                plane.request("DELETE", f"{EVENTS}?fieldSelector=involvedObject.name%3D{name}")
            for claim in self.claims(side):
                path = f"{CLAIMS}/{claim['metadata']['name']}"
                plane.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE)
                plane.request("DELETE", path)
            for app in ("a", "b"):
                plane.request("DELETE", f"{PDBS}/{self.name(side, f'pdb-{app}')}")
            for template in self.nodes:
                self.delete_node(side, template) if self.state[template]["present"] else None
        for step in self.history.steps:
            if step.op == "add-class":
                for plane in self.planes_once():
                    plane.request("DELETE", f"{CLASSES}/{self.priority_class(step)[0]}")


def pod_number(template: str) -> int:
    digits = "".join(ch for ch in template if ch.isdigit())
    return int(digits) % 100 if digits else 0


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


def retried(previous: str, note: str) -> bool:
    """``note`` is a preemptor's next attempt after ``previous``, its preemption: the same
    failure (the absent nodes' plugins aside) and ``not eligible`` where ``previous`` found a
    placement. Other histories on the same API server requeue pods at moments the two
    schedulers see apart, so whether that attempt came is timing (see ``one_retry_apart``)."""
    placed = PLACEMENT.search(previous)
    if placed is None or not note.endswith(NOT_ELIGIBLE):
        return False
    first = ABSENT_PLUGINS.sub("[...]", previous[: placed.start()])
    return first == ABSENT_PLUGINS.sub("[...]", note[: -len(NOT_ELIGIBLE)])


def event_difference(up: dict[str, list[str]], ks: dict[str, list[str]]) -> str:
    """The pods whose FailedScheduling notes differ, with both sides' notes; a preemptor's retry
    while its victims still terminate (``retried``) is left out on both sides."""

    def kept(notes: list[str]) -> list[str]:
        out: list[str] = []
        for note in notes:
            if not (out and retried(out[-1], note)) and (not out or out[-1] != note):
                out.append(note)
        return out

    differs = []
    for pod in sorted(set(up) | set(ks)):
        a, b = kept(up.get(pod, [])), kept(ks.get(pod, []))
        if a != b:
            differs.append(f"{pod}: upstream {a}, kubesched {b}")
    return "; ".join(differs)


def prepare(plane: Plane) -> None:
    """What every history on ``plane`` names: the priority classes and the GPUs' DeviceClass."""
    for obj in [*PRIORITY_CLASSES, DEVICE_CLASS]:
        group = "scheduling.k8s.io" if obj["kind"] == "PriorityClass" else "resource.k8s.io"
        plural = "priorityclasses" if obj["kind"] == "PriorityClass" else "deviceclasses"
        code, body = plane.request("POST", f"/apis/{group}/v1/{plural}", obj)
        assert code in (201, 409), body


def nominations(replay: Replay, side: str) -> dict[str, list[str]]:
    """Each pod's nominatedNodeName values, in the order the steps saw them (repeats folded)."""
    out: dict[str, list[str]] = {}
    for seen in replay.observed:
        for pod, state in seen[side].items():
            values = out.setdefault(pod, [])
            if state[1] and (not values or values[-1] != state[1]):
                values.append(state[1])
    return out
