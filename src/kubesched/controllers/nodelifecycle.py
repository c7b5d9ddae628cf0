"""The node lifecycle controller and the taint-based eviction it drives
(``pkg/controller/nodelifecycle``, ``pkg/controller/tainteviction``): a node whose kubelet has
not renewed its Lease for ``--node-monitor-grace-period`` gets its conditions Unknown
("Kubelet stopped posting node status.") and the ``node.kubernetes.io/unreachable`` taints
(a node reporting Ready False gets ``not-ready``); its pods are marked not Ready; a pod on a node
with a NoExecute taint it does not tolerate is deleted at once, one that tolerates it for
``tolerationSeconds`` (300 s by default, from the DefaultTolerationSeconds admission) when that
time is up. A node whose kubelet reports Ready again loses the taints."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.podindex import PodsByNode
from kubesched.api.selectors import Taint, Toleration
from kubesched.api.watch import DELETED, WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.controllers.disruption_target import with_disruption_target
from kubesched.controllers.recorder import Recorder
from kubesched.controllers.workqueue import Later, Retries, every
from kubesched.health import LoopHealth

NODE_LEASE_NAMESPACE = "kube-node-lease"
MONITOR_PERIOD = 5.0  # --node-monitor-period
MONITOR_GRACE_PERIOD = 50.0  # --node-monitor-grace-period (v1.29+)
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNKNOWN_REASON = "NodeStatusUnknown"
UNKNOWN_MESSAGE = "Kubelet stopped posting node status."
CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def _ready(node: dict[str, Any]) -> str:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return str(c.get("status") or "Unknown")
    return "Unknown"


def _tolerations(pod: dict[str, Any]) -> list[tuple[Toleration, int | None]]:
    out = []
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        tol = Toleration(
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        seconds = t.get("tolerationSeconds")
        out.append((tol, int(seconds) if seconds is not None else None))
    return out


def eviction_delay(pod: dict[str, Any], taints: list[dict[str, Any]]) -> float | None:
    """``getMinTolerationTime``: seconds until the pod must go for these NoExecute taints (0:
    at once, one untolerated), None when it tolerates them all for ever."""
    tolerations = _tolerations(pod)
    least: float | None = None
    for raw in taints:
        if raw.get("effect") != "NoExecute":
            continue
        taint = Taint(str(raw.get("key") or ""), str(raw.get("value") or ""), "NoExecute")
        matching = [s for t, s in tolerations if t.tolerates(taint)]
        if not matching:
            return 0.0
        bounded = [s for s in matching if s is not None]
        if len(bounded) < len(matching):
            continue  # a toleration without tolerationSeconds keeps it for ever
        seconds = float(max(0, min(bounded)))
        least = seconds if least is None else min(least, seconds)
    return least


class NodeLifecycleController:
    name = "node-lifecycle"

    def __init__(
        self,
        client: ObjectClient,
        wake: Callable[[], None] | None = None,
        grace: float = MONITOR_GRACE_PERIOD,
        period: float = MONITOR_PERIOD,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.wake = wake or (lambda: None)
        self._retries = Retries(client, "node-lifecycle-controller", self._mark, self.wake, health)
        self.grace = grace
        self.period = period
        self.recorder = Recorder(client, "node-controller")
        self.taint_recorder = Recorder(client, "taint-eviction-controller")
        self._due = True
        self._dirty_nodes: dict[str, None] = {n["metadata"]["name"]: None for n in client.list("Node")}
        # pods by node name, as upstream's pod indexer (``nodeNameKeyIndex``): a node's pods are
        # looked up, not found by listing every pod
        self._pods_on = PodsByNode()
        for pod in client.list("Pod"):
            self._pods_on.track(pod, deleted=False)
        self._later = Later(client, self._pod_due, self.wake)
        every(client, self.period, self._mark_due)

    def _mark_due(self) -> None:
        self._due = True
        self.wake()

    def _pod_due(self, key: tuple[str, str, str]) -> None:
        self._dirty_nodes[key[0]] = None  # a pod's toleration ran out: its node is looked at again

    def _pods_of(self, node: str) -> list[dict[str, Any]]:
        """The node's pods as they are now."""
        out = []
        for ns, name in self._pods_on.keys(node):
            pod = self.client.get("Pod", ns, name)
            if pod is not None and (pod.get("spec") or {}).get("nodeName") == node:
                out.append(pod)
        return out

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Node":
            self._dirty_nodes[ev.obj["metadata"]["name"]] = None
        elif ev.kind == "Pod":
            node = self._pods_on.track(ev.obj, deleted=ev.type == DELETED)
            if node:
                self._dirty_nodes[node] = None

    def run(self) -> None:
        if self._due:
            self._due = False
            self._monitor()
        names, self._dirty_nodes = list(self._dirty_nodes), {}
        for name in names:
            self._retries.attempt(name, f"Node {name}", self._sync)

    def _mark(self, name: str) -> None:
        self._dirty_nodes[name] = None

    def _sync(self, name: str) -> None:
        node = self.client.get("Node", "", name)
        if node is not None:
            self._taint(node)
            self._evict(node)

    # -- health --------------------------------------------------------------------------------
    def _monitor(self) -> None:
        """``monitorNodeHealth``: a node whose Lease is older than the grace period is Unknown."""
        now = self.client.clock.now()
        stamp = rfc3339(now)
        for node in self.client.list("Node"):
            name = node["metadata"]["name"]
            lease = self.client.get("Lease", NODE_LEASE_NAMESPACE, name)
            renewed = ((lease or {}).get("spec") or {}).get("renewTime") or node["metadata"].get("creationTimestamp")
            if not renewed or now - parse_rfc3339(renewed) <= self.grace or _ready(node) == "Unknown":
                continue

            def unknown(o: dict[str, Any]) -> dict[str, Any]:
                status = dict(o.get("status") or {})
                conds = []
                for c in status.get("conditions") or []:
                    if c.get("type") in CONDITIONS:
                        c = {
                            **c,
                            "status": "Unknown",
                            "reason": UNKNOWN_REASON,
                            "message": UNKNOWN_MESSAGE,
                            "lastTransitionTime": stamp,
                        }
                    conds.append(c)
                return {**o, "status": {**status, "conditions": conds}}

            with contextlib.suppress(ApiError):
                node = self.client.patch("Node", "", name, unknown)
            self.recorder.event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            self._mark_pods_not_ready(name)
            self._dirty_nodes[name] = None

    def _mark_pods_not_ready(self, node: str) -> None:
        """``MarkPodsNotReady``: the node's pods are no longer Ready."""
        stamp = rfc3339(self.client.clock.now())
        for pod in self._pods_of(node):

            def not_ready(o: dict[str, Any]) -> dict[str, Any]:
                status = dict(o.get("status") or {})
                conds = [
                    {**c, "status": "False", "lastTransitionTime": stamp}
                    if c.get("type") == "Ready" and c.get("status") == "True"
                    else c
                    for c in status.get("conditions") or []
                ]
                return {**o, "status": {**status, "conditions": conds}}

            with contextlib.suppress(ApiError):
                self.client.patch(
                    "Pod", pod["metadata"].get("namespace") or "default", pod["metadata"]["name"], not_ready
                )
                self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")

    def _taint(self, node: dict[str, Any]) -> None:
        """``doNoExecuteTaintingPass`` and TaintNodesByCondition: unreachable for Unknown,
        not-ready for False, neither for a Ready node."""
        ready = _ready(node)
        want = {"Unknown": UNREACHABLE, "False": NOT_READY}.get(ready)
        taints = list((node.get("spec") or {}).get("taints") or [])
        ours = [t for t in taints if t.get("key") in (UNREACHABLE, NOT_READY)]
        keep = [t for t in taints if t.get("key") not in (UNREACHABLE, NOT_READY)]
        stamp = rfc3339(self.client.clock.now())
        wanted = []
        if want is not None:
            for effect in ("NoSchedule", "NoExecute"):
                existing = next((t for t in ours if t.get("key") == want and t.get("effect") == effect), None)
                wanted.append(
                    existing
                    or {"key": want, "effect": effect, **({"timeAdded": stamp} if effect == "NoExecute" else {})}
                )
        if wanted == ours:
            return
        with contextlib.suppress(ApiError):
            self.client.patch(
                "Node",
                "",
                node["metadata"]["name"],
                lambda o: {**o, "spec": {**(o.get("spec") or {}), "taints": keep + wanted}},
            )

    # -- eviction ------------------------------------------------------------------------------
    def _evict(self, node: dict[str, Any]) -> None:
        """The taint eviction controller: delete each pod when its NoExecute tolerations run out."""
        name = node["metadata"]["name"]
        taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]
        if not taints:
            return
        since = min(parse_rfc3339(t["timeAdded"]) if t.get("timeAdded") else self.client.clock.now() for t in taints)
        now = self.client.clock.now()
        for pod in self._pods_of(name):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            delay = eviction_delay(pod, taints)
            if delay is None:
                continue
            due = since + delay
            if now >= due:
                self._delete(pod)
            else:
                self._later.at((name, meta.get("namespace") or "default", meta["name"]), due)

    def _delete(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        stamp = rfc3339(self.client.clock.now())

        with contextlib.suppress(ApiError):
            patch = with_disruption_target(
                stamp, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint"
            )
            self.client.patch("Pod", ns, name, patch)
            self.taint_recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {ns}/{name}")
            self.client.delete("Pod", ns, name, uid=meta.get("uid"))
