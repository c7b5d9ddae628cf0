"""The scheduler's informer event handlers (``pkg/scheduler/eventhandlers.go``): nodes and pods
into the cache and the queue, the other watched kinds into the listers, and each change turned
into the ClusterEvent that requeues the pods it may help (``framework/events.go``)."""

from __future__ import annotations

from typing import Any

from mypy_extensions import trait

from kubesched.api.node import NodeSpecInfo, node_info_from
from kubesched.api.pod import (
    PodInfo,
    labels_alone_changed,
    pod_info_from,
    same_scheduling_inputs,
    validated_pod_info,
)
from kubesched.api.watch import ADDED, DELETED, WatchEvent
from kubesched.errors import InputError
from kubesched.framework.events import (
    ASSIGNED_POD,
    ASSIGNED_POD_DELETE,
    NODE,
    UNSCHEDULABLE_POD,
    ActionType,
    ClusterEvent,
)
from kubesched.scheduler.listers import KINDS as LISTED_KINDS
from kubesched.scheduler.listers import STORAGE_KINDS
from kubesched.scheduler.parts import SchedulerParts

# the event of a pod bound (seen on the watch), the same frozen value each time
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULABLE_POD, ActionType.ADD, "UnschedulablePodAdd")
POD_GROUP = "PodGroup"
DRA_KINDS = frozenset({"ResourceClaim", "DeviceClass", "ResourceSlice"})
EVENT_KINDS = DRA_KINDS | frozenset(STORAGE_KINDS)  # the kinds plugins register cluster events for


@trait
class EventHandlers(SchedulerParts):
    """The Scheduler's handlers (``addNodeToCache``, ``updatePodInSchedulingQueue``, …); a part
    of ``Scheduler``, which holds the state (``SchedulerParts``)."""

    def _dispatch(self, ev: WatchEvent) -> None:
        if ev.kind == "Node":
            if ev.type == ADDED:
                self._on_node_add(ev.obj)
            elif ev.type == DELETED:
                self._on_node_delete(ev.obj)
            else:
                self._on_node_update(ev.old or {}, ev.obj)
        elif ev.kind == "Pod":
            if ev.type == ADDED:
                self._on_pod_add(ev.obj)
            elif ev.type == DELETED:
                self._on_pod_delete(ev.obj)
            else:
                self._on_pod_update(ev.old or {}, ev.obj)
        elif ev.kind == "PodGroup":
            if ev.type == DELETED:
                self._on_pod_group_delete(ev.obj)
            else:
                self._on_pod_group(ev.old if ev.type != ADDED else None, ev.obj)
        elif ev.kind in LISTED_KINDS:
            if ev.type == DELETED:
                self.listers.delete(ev.kind, ev.obj)
            else:
                self.listers.set(ev.kind, ev.obj)
            if ev.kind == "DeviceTaintRule":
                # the slice tracker applies rules to the slices: a rule's change is a slice update
                self.cluster_generation += 1
                self.queue.move_all(ClusterEvent("ResourceSlice", ActionType.UPDATE, "ResourceSliceUpdate"), None, None)
            elif ev.kind in EVENT_KINDS:  # the kinds plugins register cluster events for
                self._moved_by(ev.kind, ev)
        elif ev.kind in self._custom_events:  # a custom resource plugins register events for
            if ev.type == DELETED:
                self.listers.delete(ev.kind, ev.obj)
            else:
                self.listers.set(ev.kind, ev.obj)
            self._moved_by(self._custom_events[ev.kind], ev)

    def _moved_by(self, resource: str, ev: WatchEvent) -> None:
        """A change of an object plugins register events for: unschedulable pods whose plugins
        it may help are moved (``movePodsToActiveOrBackoffQueue``)."""
        verb = {ADDED: "Add", DELETED: "Delete"}.get(ev.type, "Update")
        action = {ADDED: ActionType.ADD, DELETED: ActionType.DELETE}.get(ev.type, ActionType.UPDATE)
        self.cluster_generation += 1
        self.queue.move_all(ClusterEvent(resource, action, f"{resource}{verb}"), ev.old, ev.obj)

    # -- node handlers --------------------------------------------------------------------------
    def _on_node_add(self, obj: dict[str, Any]) -> None:
        spec = node_info_from(obj)
        self.cache.add_node(obj, spec)
        self.cluster_generation += 1
        self.queue.move_all(ClusterEvent(NODE, ActionType.ADD, "NodeAdd"), None, spec)

    def _on_node_update(self, old_obj: dict[str, Any], obj: dict[str, Any]) -> None:
        old = self.cache.node_spec((obj.get("metadata") or {}).get("name", ""))
        spec = node_info_from(obj)
        self.cache.update_node(obj, spec)
        self.cluster_generation += 1
        action = node_update_actions(old, spec, old_obj, obj)
        if action:
            self.queue.move_all(ClusterEvent(NODE, action, f"Node{action.name or 'Update'}"), old, spec)

    def _on_node_delete(self, obj: dict[str, Any]) -> None:
        # ``deleteNodeFromCache``: plugins that care (PodTopologySpread: a domain may be gone) get
        # the event first, with the node as it was
        name = (obj.get("metadata") or {}).get("name", "")
        old = self.cache.node_spec(name) or node_info_from(obj)
        self.queue.move_all(ClusterEvent(NODE, ActionType.DELETE, "NodeDelete"), old, None)
        self.cache.remove_node(name)
        self.cluster_generation += 1

    # -- pod group handlers (GenericWorkload) ------------------------------------------------------
    def _on_pod_group(self, old: dict[str, Any] | None, obj: dict[str, Any]) -> None:
        """``addPodGroup`` / ``updatePodGroup``: the cache's state, the queue's forest, then the
        PodGroupAdd/Update event."""
        groups = self.cache.pod_groups
        if groups is None:
            return
        groups.set_pod_group(obj)
        if old is None:
            self.queue.add_pod_group(obj)
            self.queue.move_all(ClusterEvent(POD_GROUP, ActionType.ADD, "PodGroupAdd"), None, obj)
        else:
            if (old.get("metadata") or {}).get("resourceVersion") == (obj.get("metadata") or {}).get("resourceVersion"):
                return
            self.queue.update_pod_group(obj)
            self.queue.move_all(ClusterEvent(POD_GROUP, ActionType.UPDATE, "PodGroupUpdate"), old, obj)

    def _on_pod_group_delete(self, obj: dict[str, Any]) -> None:
        groups = self.cache.pod_groups
        if groups is None:
            return
        groups.remove_pod_group(obj)
        self.queue.delete_pod_group(obj)
        self.queue.move_all(ClusterEvent(POD_GROUP, ActionType.DELETE, "PodGroupDelete"), obj, None)

    # -- pod handlers ---------------------------------------------------------------------------
    def _parse_pod(self, obj: dict[str, Any]) -> PodInfo | None:
        """PodInfo for a watched pod. A version whose scheduling inputs are unchanged (a binding,
        a status write) reuses the previous parse; a malformed pod is dropped (None)."""
        uid = (obj.get("metadata") or {}).get("uid", "")
        prev = self._pod_infos.get(uid)
        if prev is not None:
            if prev.obj is obj:
                return prev
            if same_scheduling_inputs(prev.obj, obj):
                info = prev.evolve(
                    obj,
                    (obj.get("spec") or {}).get("nodeName") or "",
                    (obj.get("status") or {}).get("nominatedNodeName") or "",
                )
                self._pod_infos[uid] = info
                return info
            if labels_alone_changed(prev, obj):  # a binding that added the node's zone and region
                info = prev.evolve(
                    obj,
                    (obj.get("spec") or {}).get("nodeName") or "",
                    (obj.get("status") or {}).get("nominatedNodeName") or "",
                    (obj.get("metadata") or {}).get("labels") or {},
                )
                self._pod_infos[uid] = info
                return info
        parsed = validated_pod_info(obj)  # parsed by an in-process API server's validation
        if parsed is None:
            try:
                parsed = pod_info_from(obj)
            except InputError:
                return None
        self._pod_infos[uid] = parsed
        return parsed

    def _on_pod_add(self, obj: dict[str, Any]) -> None:
        pod = self._parse_pod(obj)
        if pod is None:
            return
        if pod.node_name:
            self.cache.add_pod(pod)
            self.cluster_generation += 1
            self.queue.move_all(ASSIGNED_POD_ADD, None, pod)
        elif pod.scheduler_name in self.profiles:
            if self.cache.pod_groups is not None and pod.pod_group:  # ``addPodToSchedulingQueue``
                self.cache.pod_groups.add_member(pod)
                self.queue.add(pod)
                self.queue.move_all(UNSCHEDULED_POD_ADD, None, pod)
                return
            self.queue.add(pod)

    def _on_pod_update(self, old_obj: dict[str, Any], obj: dict[str, Any]) -> None:
        known = self._pod_infos.get((obj.get("metadata") or {}).get("uid", ""))
        old = known if known is not None and known.obj is old_obj else None
        if old is None and old_obj:
            old = self._parse_pod(old_obj)
        pod = self._parse_pod(obj)
        if pod is None:
            return
        if pod.node_name:
            was_pending = old is not None and not old.node_name
            self.cache.update_pod(pod)
            self.cluster_generation += 1
            if was_pending:
                self.queue.delete(pod.uid)
                self.queue.move_all(ASSIGNED_POD_ADD, None, pod)
            else:
                action = pod_update_actions(old, pod)
                if action:
                    self.queue.move_all(ClusterEvent(ASSIGNED_POD, action, "AssignedPodUpdate"), old, pod)
        elif pod.scheduler_name in self.profiles:
            if pod.deleting:
                if self.cache.is_assumed(pod.uid) and (old is None or not old.deleting):
                    self._assumed_pod_deleted(pod.uid)
                return
            if self.cache.pod_groups is not None and pod.pod_group:
                self.cache.pod_groups.update_member(old, pod)
            if self.cache.is_assumed(pod.uid):  # in its binding cycle: the queue does not hold it
                return
            action = pod_update_actions(old, pod)
            self.queue.update(
                pod, ClusterEvent(UNSCHEDULABLE_POD, action, "UnschedulablePodUpdate") if action else None, old
            )
            if old is not None and old.nominated_node_name and old.nominated_node_name != pod.nominated_node_name:
                # hasNominatedNodeNameChanged: as if it left its old node, for pods it outranked
                priority = old.priority
                self.queue.move_all(ASSIGNED_POD_DELETE, old, None, pre_check=lambda q: q.pod.priority <= priority)

    def _on_pod_delete(self, obj: dict[str, Any]) -> None:
        pod = self._parse_pod(obj)
        if pod is None:
            return
        self._pod_infos.pop(pod.uid, None)
        if pod.node_name or self.cache.pod(pod.uid) is not None:
            removed = self.cache.remove_pod(pod.uid)
            self.cluster_generation += 1
            self.waiting_pods.reject(pod.uid)
            self.queue.delete_nominated(pod.uid)
            self.queue.move_all(ASSIGNED_POD_DELETE, removed or pod, None)
        else:
            if self.cache.pod_groups is not None and pod.pod_group:
                self.cache.pod_groups.remove_member(pod)
            self.queue.delete(pod.uid)
            self.waiting_pods.reject(pod.uid)
            if pod.nominated_node_name and pod.scheduler_name in self.profiles:
                # its nomination held room for pods of lower or equal priority, as if assigned
                priority = pod.priority
                self.queue.move_all(ASSIGNED_POD_DELETE, pod, None, pre_check=lambda q: q.pod.priority <= priority)

    def _assumed_pod_deleted(self, uid: str) -> None:
        """``handleAssumedPodDeletion``: a pod whose deletion began in its binding cycle stops
        holding its node at once: rejected if it waits at Permit (its binding cycle then
        forgets it), else forgotten here; pods it may have blocked are moved."""
        current = self.cache.pod(uid)
        if current is None:
            return
        if not self.waiting_pods.reject(uid):
            self.cache.forget_pod(uid)
        self.cluster_generation += 1
        self.queue.move_all(ASSIGNED_POD_DELETE, current[0], None)


def node_update_actions(
    old: NodeSpecInfo | None, new: NodeSpecInfo, old_obj: dict[str, Any], new_obj: dict[str, Any]
) -> ActionType:
    """Which Node Update* actions a change amounts to (``framework/events.go`` NodeSchedulingPropertiesChange)."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if dict(old.labels) != dict(new.labels):
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if (old_obj.get("status") or {}).get("conditions") != (new_obj.get("status") or {}).get("conditions"):
        action |= ActionType.UPDATE_NODE_CONDITION
    if (old_obj.get("metadata") or {}).get("annotations") != (new_obj.get("metadata") or {}).get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.declared_features != new.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return action


def pod_update_actions(old: PodInfo | None, new: PodInfo) -> ActionType:
    """Pod Update* actions (``PodSchedulingPropertiesChange``)."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    if dict(old.labels) != dict(new.labels):
        action |= ActionType.UPDATE_POD_LABEL
    if old.tolerations != new.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATION
    if old.scheduling_gates and not new.scheduling_gates:
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if any(v < old.requests.get(k, 0) for k, v in new.requests.items()) or set(old.requests) - set(new.requests):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    old_claims = (old.obj.get("status") or {}).get("resourceClaimStatuses")
    if old_claims != (new.obj.get("status") or {}).get("resourceClaimStatuses"):
        action |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    return action
