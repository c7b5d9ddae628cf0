"""The pod garbage collector (``pkg/controller/podgc``), every 20 s: once more pods have finished
(Succeeded or Failed) than ``--terminated-pod-gc-threshold`` (12,500), the oldest of them are
deleted, evicted ones first (then by creation time and name); a pod bound to a node that has been
gone for the 40 s quarantine is marked Failed with a ``DisruptionTarget`` condition
(``DeletionByPodGC``) and deleted; a pod being deleted that was never bound is deleted at once.
Deletions are forced (grace period 0), as upstream's."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import DELETED, WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.controllers.workqueue import Retries, every
from kubesched.health import LoopHealth, describe

GC_PERIOD = 20.0  # gcCheckPeriod
TERMINATED_POD_THRESHOLD = 12_500  # kube-controller-manager's --terminated-pod-gc-threshold
QUARANTINE = 40.0  # quarantineTime: a node must be gone this long before its pods are
FINISHED = ("Succeeded", "Failed")


def _created(pod: dict[str, Any]) -> float:
    stamp = (pod.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(stamp) if stamp else 0.0


def _evicted(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("reason") == "Evicted"


class PodGarbageCollector:
    name = "pod-garbage-collector"

    def __init__(
        self,
        client: ObjectClient,
        wake: Callable[[], None] | None = None,
        threshold: int = TERMINATED_POD_THRESHOLD,
        period: float = GC_PERIOD,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.wake = wake or (lambda: None)
        self.threshold = threshold
        self.period = period
        self._due = False
        self._gone_since: dict[str, float] = {}  # nodes seen deleted: when
        self._retries = Retries(client, "pod-garbage-collector-controller", lambda _key: None, self.wake, health)
        every(client, period, self._mark_due)

    def _mark_due(self) -> None:
        self._due = True
        self.wake()

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == "Node":
            name = ev.obj["metadata"]["name"]
            if ev.type == DELETED:
                self._gone_since.setdefault(name, self.client.clock.now())
            else:
                self._gone_since.pop(name, None)

    def run(self) -> None:
        if not self._due:
            return
        self._due = False
        pods = self.client.list("Pod")
        if self.threshold > 0:
            self._gc_terminated(pods)
        self._gc_terminating(pods)
        self._gc_orphaned(pods)
        self._gc_unscheduled_terminating(pods)

    def _gc_terminated(self, pods: list[dict[str, Any]]) -> None:
        """``gcTerminated``: past the threshold, the oldest finished pods (evicted first) go."""
        finished = [p for p in pods if (p.get("status") or {}).get("phase") in FINISHED]
        excess = len(finished) - self.threshold
        if excess <= 0:
            return
        finished.sort(key=lambda p: (not _evicted(p), _created(p), p["metadata"].get("name") or ""))
        for pod in finished[:excess]:
            self._retries.attempt(_key(pod), describe("Pod", _key(pod)), partial(self._delete, pod))

    def _gc_terminating(self, pods: list[dict[str, Any]]) -> None:
        """``gcTerminating``: a pod being deleted on a node that is not Ready and is tainted
        ``node.kubernetes.io/out-of-service`` (no kubelet will confirm it) is failed and deleted,
        evicted ones and the oldest first."""
        nodes = {n["metadata"]["name"]: n for n in self.client.list("Node")}
        stuck = []
        for pod in pods:
            node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            if not pod["metadata"].get("deletionTimestamp") or node is None:
                continue
            taints = (node.get("spec") or {}).get("taints") or []
            if not _ready(node) and any(t.get("key") == OUT_OF_SERVICE for t in taints):
                stuck.append(pod)
        stuck.sort(key=lambda p: (not _evicted(p), _created(p), p["metadata"].get("name") or ""))
        for pod in stuck:
            self._retries.attempt(_key(pod), describe("Pod", _key(pod)), partial(self._fail, pod, condition=False))

    def _gc_orphaned(self, pods: list[dict[str, Any]]) -> None:
        """``gcOrphaned``: pods of nodes gone past the quarantine."""
        now = self.client.clock.now()
        nodes = {n["metadata"]["name"] for n in self.client.list("Node")}
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or node in nodes:
                continue
            since = self._gone_since.setdefault(node, now)
            if now - since < QUARANTINE:
                continue
            self._retries.attempt(_key(pod), describe("Pod", _key(pod)), partial(self._fail, pod))

    def _gc_unscheduled_terminating(self, pods: list[dict[str, Any]]) -> None:
        """``gcUnscheduledTerminating``: a pod being deleted that no node will ever confirm."""
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
                self._retries.attempt(_key(pod), describe("Pod", _key(pod)), partial(self._delete, pod))

    def _fail(self, pod: dict[str, Any], _queued: object = None, *, condition: bool = True) -> None:
        """``markFailedAndDeletePodWithCondition``: Failed (with the DisruptionTarget condition
        for an orphan; ``markFailedAndDeletePod`` sets none), then a forced delete."""
        if (pod.get("status") or {}).get("phase") not in FINISHED:
            now = rfc3339(self.client.clock.now())
            with_condition = condition
            disruption = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "lastTransitionTime": now,
            }
            uid = pod["metadata"].get("uid")

            def failed(o: dict[str, Any]) -> dict[str, Any]:
                if o["metadata"].get("uid") != uid:
                    return o
                status = dict(o.get("status") or {})
                status["phase"] = "Failed"
                if with_condition:
                    status["conditions"] = [
                        *(c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"),
                        disruption,
                    ]
                return {**o, "status": status}

            try:
                self.client.patch("Pod", *_key(pod), failed)
            except ApiError as exc:
                if exc.code != 404:
                    raise
                return
        self._delete(pod)

    def _delete(self, pod: dict[str, Any], _queued: object = None) -> None:
        try:
            self.client.delete("Pod", *_key(pod), grace_period_seconds=0, uid=pod["metadata"].get("uid"))
        except ApiError as exc:
            if exc.code not in (404, 409):  # gone already, or another pod by now
                raise


OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"  # v1.TaintNodeOutOfService


def _ready(node: dict[str, Any]) -> bool:
    """``nodeutil.IsNodeReady``."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _key(pod: dict[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return meta.get("namespace") or "default", meta.get("name") or ""
