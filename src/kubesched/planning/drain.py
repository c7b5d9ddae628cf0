"""``kubesched drain``: what if these nodes (a node pool) went away — do their pods fit elsewhere?

The cluster is built as ``kubesched up`` runs it, on the virtual clock: the workload controllers,
the hollow kubelet, the disruption controller and the scheduler (``kubesched.embedded``).
Then the nodes are drained as ``kubectl drain --ignore-daemonsets --delete-emptydir-data --force``
drains them (``k8s.io/kubectl/pkg/drain``): cordoned, mirror and DaemonSet pods left, every other
pod evicted through the Eviction API, so that PodDisruptionBudgets decide, an eviction refused
with 429 retried every 5 seconds until the timeout. The controllers recreate the evicted pods and
the scheduler places the replacements; the answer is where each went, or why it stays pending,
and which evictions the budgets still refused when time ran out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import ApiError, TooManyRequests
from kubesched.cluster.disruption import evict
from kubesched.cluster.loader import Manifest
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.embedded.populate import create_objects
from kubesched.errors import InputError
from kubesched.kubelet.node import ATTACH_LIMIT, default_storage_class
from kubesched.scheduler.config import SchedulerConfig
from kubesched.simulate.runner import pending_reason
from kubesched.simulate.usage import node_usage

EVICTION_RETRY = 5.0  # kubectl drain: "(will retry after 5s)"
SETTLE = 30.0  # virtual seconds for the cluster to start before the drain, and to place the last pods
MIRROR = "kubernetes.io/config.mirror"
REPLICATING = {"ReplicaSet", "ReplicationController", "StatefulSet", "Job"}


@dataclass(slots=True)
class PodOutcome:
    """One pod that was on a drained node."""

    namespace: str
    name: str
    node: str
    owner: str  # Kind/name of its controller, "" for none
    outcome: str  # evicted | blocked | left (DaemonSet or mirror pod)
    detail: str = ""  # why blocked or left; the flags kubectl drain would need
    evicted_at: float | None = None


@dataclass(slots=True)
class Replacement:
    """A pod the controllers created during the drain, and where it went."""

    namespace: str
    name: str
    owner: str
    node: str | None
    reason: str = ""
    message: str | None = None


@dataclass(slots=True)
class DrainResult:
    nodes: list[str]
    pods: list[PodOutcome] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)
    # pods created meanwhile that replace no evicted pod (a Job's next pods, another controller's
    # work): reported apart, not part of the answer
    others: list[Replacement] = field(default_factory=list)
    pending_before: int = 0  # pods pending before the drain began (not the drain's doing)
    seconds: float = 0.0  # virtual seconds from the cordon to the last eviction
    # each node's pool, zone and use (``simulate/usage.node_usage``) before the cordon and at the
    # end, for the report's capacity tables
    usage_before: list[dict[str, Any]] = field(default_factory=list)
    usage_after: list[dict[str, Any]] = field(default_factory=list)

    @property
    def blocked(self) -> list[PodOutcome]:
        return [p for p in self.pods if p.outcome == "blocked"]

    @property
    def pending(self) -> list[Replacement]:
        return [r for r in self.replacements if r.node is None]

    @property
    def lost(self) -> list[PodOutcome]:
        """Evicted pods no controller recreates (kubectl drain needs --force for them)."""
        return [p for p in self.pods if p.outcome == "evicted" and not _replicated(p.owner)]

    @property
    def awaited(self) -> dict[str, int]:
        """Per controller, evicted pods it has not recreated by the end: a StatefulSet's
        OrderedReady waits for each ordinal to run before it recreates the next."""
        evicted = Counter(p.owner for p in self.pods if p.outcome == "evicted" and _replicated(p.owner))
        made = Counter(r.owner for r in self.replacements)
        return {owner: n - made[owner] for owner, n in sorted(evicted.items()) if n > made[owner]}

    @property
    def fits(self) -> bool:
        """Every pod could leave and was recreated, and every replacement was placed."""
        return not self.blocked and not self.pending and not self.awaited

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "fits": self.fits,
            "evicted": sum(1 for p in self.pods if p.outcome == "evicted"),
            "blocked": len(self.blocked),
            "left": sum(1 for p in self.pods if p.outcome == "left"),
            "replacementsPlaced": sum(1 for r in self.replacements if r.node),
            "replacementsPending": len(self.pending),
            "notRecreated": [f"{p.namespace}/{p.name}" for p in self.lost],
            "awaitingRecreation": self.awaited,
            "pendingBefore": self.pending_before,
            "otherPodsCreated": len(self.others),
            "otherPodsPending": sum(1 for r in self.others if r.node is None),
            "virtualSeconds": round(self.seconds, 3),
            "pods": [
                {
                    "namespace": p.namespace,
                    "name": p.name,
                    "node": p.node,
                    "owner": p.owner,
                    "outcome": p.outcome,
                    "detail": p.detail,
                    "evictedAt": p.evicted_at,
                }
                for p in self.pods
            ],
            "replacements": [
                {
                    "namespace": r.namespace,
                    "name": r.name,
                    "owner": r.owner,
                    "node": r.node,
                    "reason": r.reason,
                    "message": r.message,
                }
                for r in self.replacements
            ],
            "pendingByReason": [{"message": m, "pods": n} for m, n in self.pending_reasons()],
        }

    def pending_reasons(self) -> list[tuple[str, int]]:
        return Counter(r.message or r.reason for r in self.pending).most_common()


def _owner(pod: dict[str, Any]) -> str:
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref.get('kind')}/{ref.get('name')}"
    return ""


def _replicated(owner: str) -> bool:
    return owner.split("/", 1)[0] in REPLICATING


def select_nodes(cluster: EmbeddedCluster, names: list[str], selector: str | None) -> list[str]:
    """The nodes named, and those ``selector`` (a label selector, as ``kubectl drain -l``) matches."""
    from kubesched.api.labels import labels_match, parse_label_selector

    nodes = cluster.store.list("Node")[0]
    known = {n["metadata"]["name"] for n in nodes}
    missing = [n for n in names if n not in known]
    if missing:
        raise InputError(f"no such node: {', '.join(missing)}", field="--node")
    chosen = list(dict.fromkeys(names))
    if selector is not None:
        try:
            matcher = parse_label_selector(selector)
        except ApiError as exc:
            raise InputError(exc.message, field="--selector") from None
        chosen += [
            n["metadata"]["name"] for n in nodes if labels_match(matcher, n) and n["metadata"]["name"] not in chosen
        ]
        if not chosen:
            raise InputError(f"no node matches {selector!r}", field="--selector")
    if not chosen:
        raise InputError("name the nodes to drain: --node NAME or --selector LABELS", field="--node")
    return chosen


def build(manifests: list[Manifest], config: SchedulerConfig, seed: int = 0) -> EmbeddedCluster:
    """The cluster as ``kubesched up`` would run it, settled: controllers' pods created, placed
    and Running, claims provisioned by the hollow CSI driver of the default StorageClass."""
    cluster = EmbeddedCluster(config=config, workloads=True, seed=seed, attach_limit=ATTACH_LIMIT)
    if not any(m.kind == "StorageClass" for m in manifests):  # as up: kind's "standard", the hollow driver's
        cluster.store.create("StorageClass", default_storage_class())
    rejected, _ = create_objects(cluster.store, manifests, keep_existing=True)
    if rejected:
        r = rejected[0]
        raise InputError(f"{r['kind']} {r['name']}: {r['message']}")
    cluster.settle()
    cluster.advance(SETTLE)
    return cluster


def drain(cluster: EmbeddedCluster, nodes: list[str], timeout: float, *, usage: bool = False) -> DrainResult:
    """Cordon ``nodes`` and evict their pods as kubectl drain does, for up to ``timeout`` virtual
    seconds of retries; then let the replacements be placed. ``usage``: keep each node's use
    before and after (what the report's capacity tables need)."""
    store = cluster.store
    result = DrainResult(nodes, usage_before=node_usage(cluster.sched.node_table()) if usage else [])
    before = {p["metadata"]["uid"] for p in store.list("Pod")[0]}
    result.pending_before = sum(
        1 for p in store.list("Pod")[0] if not (p.get("spec") or {}).get("nodeName") and _active(p)
    )
    for name in nodes:  # kubectl cordon: spec.unschedulable
        store.mutate("Node", "", name, lambda o: {**o, "spec": {**(o.get("spec") or {}), "unschedulable": True}})
    cluster.settle()
    drained = set(nodes)
    todo: list[PodOutcome] = []
    for pod in store.list("Pod")[0]:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        if spec.get("nodeName") not in drained or not _active(pod):
            continue
        out = PodOutcome(meta.get("namespace") or "default", meta["name"], spec["nodeName"], _owner(pod), "evicted")
        result.pods.append(out)
        if MIRROR in (meta.get("annotations") or {}):
            out.outcome, out.detail = "left", "mirror pod"
        elif out.owner.startswith("DaemonSet/"):
            out.outcome, out.detail = "left", "DaemonSet-managed (--ignore-daemonsets)"
        else:
            flags = []
            if not _replicated(out.owner):
                flags.append("no controller: not recreated (--force)")
            if any("emptyDir" in v for v in spec.get("volumes") or []):
                flags.append("local storage (--delete-emptydir-data)")
            out.detail = "; ".join(flags)
            todo.append(out)
    started = cluster.clock.now()
    refused: dict[int, str] = {}  # the last refusal of each pod still to evict
    while todo:
        waiting: list[PodOutcome] = []
        for out in todo:
            try:
                evict(store, out.namespace, out.name)
            except TooManyRequests as exc:  # the budget: retried
                refused[id(out)] = exc.message
                waiting.append(out)
                continue
            except ApiError as exc:
                if exc.code != 404:  # 404: gone meanwhile, as good as evicted
                    refused[id(out)] = exc.message
                    waiting.append(out)
                    continue
            out.evicted_at = round(cluster.clock.now() - started, 3)
        cluster.settle()
        todo = waiting
        if todo and cluster.clock.now() - started < timeout:
            cluster.advance(EVICTION_RETRY)
        else:
            break
    for out in todo:
        out.outcome, out.detail = "blocked", refused[id(out)]
    result.seconds = cluster.clock.now() - started
    cluster.advance(SETTLE)  # the last replacements placed and started
    # a new pod replaces an evicted one when its controller lost pods, as many as it lost (the
    # earliest created first); the rest were created meanwhile for reasons of their own
    owed = Counter(p.owner for p in result.pods if p.outcome == "evicted" and _replicated(p.owner))
    created = [p for p in store.list("Pod")[0] if p["metadata"]["uid"] not in before and _active(p)]
    created.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
    for pod in created:
        meta = pod["metadata"]
        node = (pod.get("spec") or {}).get("nodeName")
        reason, message = ("Scheduled", None) if node else pending_reason(cluster.sched, pod)
        owner = _owner(pod)
        made = Replacement(meta.get("namespace") or "default", meta["name"], owner, node or None, reason, message)
        if owed[owner] > 0:
            owed[owner] -= 1
            result.replacements.append(made)
        else:
            result.others.append(made)
    if usage:
        result.usage_after = node_usage(cluster.sched.node_table())
    return result


def _active(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp"
    )
