"""The scheduler cache (``pkg/scheduler/backend/cache``): nodes and the pods on them, with assumed pods.

A pod is *assumed* on its node as soon as the scheduling cycle picks it, so the next cycle sees
its resources; the watch confirming the binding turns the assumption into fact without
counting it twice, and a failed binding *forgets* it. Assumed pods never expire (v1.37's cache has
no expiry); one whose deletion begins is forgotten at once (``handleAssumedPodDeletion``).
The cache keeps the columnar ``NodeTable`` current incrementally; since cycles run one at a
time and cache updates happen between them, that table is each cycle's snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesched.api.node import NodeSpecInfo, node_info_from
from kubesched.api.pod import PodInfo
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.podgroups import PodGroupStates
from kubesched.scheduler.podtable import PodTable

PodListener = Callable[[str, PodInfo, str, bool], None]


class Cache:
    def __init__(self) -> None:
        self.table = NodeTable()
        self.pod_table = PodTable(len(self.table.res_names))
        # pods nominated to nodes (the nominator's view, as columns for the filters' second pass)
        self.nominated_table = PodTable(len(self.table.res_names), capacity=64)
        self._nominated_on: dict[str, set[str]] = {}
        self._nominated_node: dict[str, str] = {}
        self._nodes: dict[str, dict[str, Any]] = {}
        self._pods: dict[str, tuple[PodInfo, str]] = {}  # uid → (pod, node name)
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self.assumed: set[str] = set()
        self.binding_finished: set[str] = set()
        self._listeners: list[PodListener] = []
        # pod group states, kept only under GenericWorkload (``cache.podGroupStates``)
        self.pod_groups: PodGroupStates | None = None

    def add_pod_listener(self, fn: PodListener) -> None:
        """Call ``fn(event, pod, node, assumed)`` when a pod arrives on a node ("add": assumed by a
        scheduling cycle, or seen bound by the watch) or leaves it ("remove": forgotten after a
        failed binding, or deleted). A confirmed assumption is no new arrival. For plugins that
        keep per-node state of their own, as upstream plugins read NodeInfo's pods."""
        self._listeners.append(fn)

    def _notify(self, event: str, pod: PodInfo, node: str, assumed: bool) -> None:
        for fn in self._listeners:
            fn(event, pod, node, assumed)

    # -- nodes ------------------------------------------------------------------------------
    def add_node(self, obj: dict[str, Any], spec: NodeSpecInfo | None = None) -> NodeSpecInfo:
        spec = spec or node_info_from(obj)
        self._nodes[spec.name] = obj
        row = self.table.add_node(spec)
        on_node = self._by_node.get(spec.name, {})
        for pod in on_node.values():
            self.table.add_pod(row, pod)
        self.pod_table.node_added(row, list(on_node))
        self.nominated_table.node_added(row, list(self._nominated_on.get(spec.name, ())))
        return spec

    def update_node(self, obj: dict[str, Any], spec: NodeSpecInfo | None = None) -> NodeSpecInfo:
        spec = spec or node_info_from(obj)
        if spec.name not in self._nodes:
            return self.add_node(obj, spec)
        self._nodes[spec.name] = obj
        self.table.update_node(spec)
        return spec

    def remove_node(self, name: str) -> None:
        if self._nodes.pop(name, None) is not None:
            self.pod_table.node_removed(self.table.index[name])
            self.nominated_table.node_removed(self.table.index[name])
            self.table.remove_node(name)

    def node_object(self, name: str) -> dict[str, Any] | None:
        return self._nodes.get(name)

    def node_spec(self, name: str) -> NodeSpecInfo | None:
        row = self.table.index.get(name)
        return None if row is None else self.table.specs[row]

    # -- pods -------------------------------------------------------------------------------
    def _account(self, pod: PodInfo, node: str, sign: int) -> None:
        if sign > 0:
            self._pods[pod.uid] = (pod, node)
            self._by_node.setdefault(node, {})[pod.uid] = pod
        else:
            self._pods.pop(pod.uid, None)
            on_node = self._by_node.get(node)
            if on_node is not None:
                on_node.pop(pod.uid, None)
                if not on_node:
                    del self._by_node[node]
        row = self.table.index.get(node)
        if row is not None:
            self.table.add_pod(row, pod, sign)
        if sign > 0:
            self.pod_table.add(pod, -1 if row is None else row, self.table.res_index)
        else:
            self.pod_table.remove(pod.uid)

    def assume_pod(self, pod: PodInfo, node: str) -> None:
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.key}({pod.uid}) is in the cache, so can't be assumed")
        self._account(pod, node, +1)
        self.assumed.add(pod.uid)
        if self.pod_groups is not None and pod.pod_group:
            self.pod_groups.assume(pod)
        if self._listeners:
            self._notify("add", pod, node, True)

    def finish_binding(self, uid: str) -> None:
        if uid in self.assumed:
            self.binding_finished.add(uid)

    def forget_pod(self, uid: str) -> None:
        if uid in self.assumed:
            pod, node = self._pods[uid]
            self._account(pod, node, -1)
            self.assumed.discard(uid)
            self.binding_finished.discard(uid)
            if self.pod_groups is not None and pod.pod_group:
                self.pod_groups.forget(pod)
            if self._listeners:
                self._notify("remove", pod, node, True)

    def add_pod(self, pod: PodInfo) -> None:
        """A bound pod seen by the watch: confirms an assumption or adds it."""
        if self.pod_groups is not None and pod.pod_group:
            self.pod_groups.add_member(pod)
        current = self._pods.get(pod.uid)
        if current is not None and current[1] == pod.node_name and _same_parse(current[0], pod):
            # the binding of the pod assumed there (or a status write): nothing the node or pod
            # tables count changed, only the object and maybe its start time
            if pod.uid in self.assumed:
                self.assumed.discard(pod.uid)
                self.binding_finished.discard(pod.uid)
            self._pods[pod.uid] = (pod, pod.node_name)
            self._by_node.setdefault(pod.node_name, {})[pod.uid] = pod
            self.pod_table.replace(pod)
            return
        if current is not None:
            if pod.uid in self.assumed:
                self.assumed.discard(pod.uid)
                self.binding_finished.discard(pod.uid)
            self._account(current[0], current[1], -1)
        self._account(pod, pod.node_name, +1)
        if self._listeners and current is None:
            self._notify("add", pod, pod.node_name, False)

    def update_pod(self, pod: PodInfo) -> None:
        self.add_pod(pod)

    def remove_pod(self, uid: str) -> PodInfo | None:
        current = self._pods.get(uid)
        if current is None:
            return None
        self.assumed.discard(uid)
        self.binding_finished.discard(uid)
        self._account(current[0], current[1], -1)
        if self.pod_groups is not None and current[0].pod_group:
            self.pod_groups.remove_member(current[0])
        if self._listeners:
            self._notify("remove", current[0], current[1], False)
        return current[0]

    def set_nominated(self, pod_or_uid: PodInfo | str, node: str | None) -> None:
        """Mirror the nominator: ``(pod, node)`` on nomination, ``(uid, None)`` when cleared."""
        if node is None:
            uid = str(pod_or_uid)
            old_node = self._nominated_node.pop(uid, None)
            if old_node is not None:
                self._nominated_on[old_node].discard(uid)
            self.nominated_table.remove(uid)
            return
        assert isinstance(pod_or_uid, PodInfo)
        uid = pod_or_uid.uid
        self.set_nominated(uid, None)
        self.nominated_table.add(pod_or_uid, self.table.index.get(node, -1), self.table.res_index)
        self._nominated_on.setdefault(node, set()).add(uid)
        self._nominated_node[uid] = node

    def is_assumed(self, uid: str) -> bool:
        return uid in self.assumed

    def pods_on(self, node: str) -> list[PodInfo]:
        return list(self._by_node.get(node, {}).values())

    def assigned_pods(self) -> list[tuple[PodInfo, str]]:
        """Every pod on a node (assumed ones too), with its node."""
        return list(self._pods.values())

    def pod(self, uid: str) -> tuple[PodInfo, str] | None:
        return self._pods.get(uid)

    def counts(self) -> dict[str, int]:
        return {"nodes": len(self._nodes), "pods": len(self._pods), "assumed_pods": len(self.assumed)}


def _same_parse(a: PodInfo, b: PodInfo) -> bool:
    """Whether two versions of a pod share one parse (``PodInfo.evolve``): everything the node
    and pod tables count (requests, ports, labels, terms, priority, termination) is the same."""
    return (
        a.requests is b.requests
        and a.labels is b.labels
        and a.host_ports is b.host_ports
        and a.pod_affinity is b.pod_affinity
        and a.priority == b.priority
        and a.deleting == b.deleting
        and a.namespace == b.namespace
    )
