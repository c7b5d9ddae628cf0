"""The cache's pod group states (``backend/cache/podgroupstate.go``): for each PodGroup the
scheduler knows (its object, or member pods naming it), which members exist, which are still
unscheduled, which a cycle assumed and which are assigned. GangScheduling reads them: PreEnqueue
counts all members against ``minCount``, Permit counts the scheduled ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.api.validation_podgroups import pod_group_min_count, pod_group_priority

PodGroupKey = tuple[str, str]  # (namespace, name)


def group_key(pod: PodInfo) -> PodGroupKey:
    return (pod.namespace, pod.pod_group)


def object_key(obj: dict[str, Any]) -> PodGroupKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


@dataclass(slots=True)
class PodGroupState:
    """``podGroupStateData``: one group's members by where they are."""

    pod_group: dict[str, Any] | None = None
    all: dict[str, PodInfo] = field(default_factory=dict)
    unscheduled: set[str] = field(default_factory=set)
    assumed: dict[str, PodInfo] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)

    def add(self, pod: PodInfo) -> None:
        self.all[pod.uid] = pod
        if pod.node_name:
            self.assigned.add(pod.uid)
            self.unscheduled.discard(pod.uid)
            self.assumed.pop(pod.uid, None)
        else:
            self.unscheduled.add(pod.uid)

    def update(self, old: PodInfo | None, pod: PodInfo) -> None:
        self.all[pod.uid] = pod
        if (old is None or not old.node_name) and pod.node_name:
            self.assigned.add(pod.uid)
            self.unscheduled.discard(pod.uid)
            self.assumed.pop(pod.uid, None)

    def delete(self, uid: str) -> None:
        self.all.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)

    def assume(self, pod: PodInfo) -> None:
        stored = self.all.get(pod.uid)
        if stored is None:
            return
        if stored.node_name:
            self.assigned.add(pod.uid)
        else:
            self.assumed[pod.uid] = pod
        self.unscheduled.discard(pod.uid)

    def forget(self, uid: str) -> None:
        pod = self.all.get(uid)
        if pod is None:
            return
        self.assumed.pop(uid, None)
        if pod.node_name:
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    def empty(self) -> bool:
        return not self.all and self.pod_group is None

    def all_pods_count(self) -> int:
        return len(self.all)

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.assigned)

    def scheduled_pods(self) -> list[PodInfo]:
        return [self.all[uid] for uid in self.assigned] + list(self.assumed.values())

    def unscheduled_pods(self) -> list[PodInfo]:
        return [self.all[uid] for uid in self.unscheduled]

    @property
    def min_count(self) -> int | None:
        """The gang's ``minCount`` (None: no object yet, or a basic group)."""
        return None if self.pod_group is None else pod_group_min_count(self.pod_group)

    @property
    def priority(self) -> int:
        return 0 if self.pod_group is None else pod_group_priority(self.pod_group)


class PodGroupStates:
    """The cache's map of pod group states (``cache.podGroupStates``), kept while the group has
    members or an object."""

    def __init__(self) -> None:
        self._states: dict[PodGroupKey, PodGroupState] = {}

    def get(self, key: PodGroupKey) -> PodGroupState | None:
        return self._states.get(key)

    def __len__(self) -> int:
        return len(self._states)

    def _state(self, key: PodGroupKey) -> PodGroupState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
        return state

    def _drop_if_empty(self, key: PodGroupKey) -> None:
        state = self._states.get(key)
        if state is not None and state.empty():
            del self._states[key]

    # members (AddPodGroupMember, UpdatePodGroupMember, RemovePodGroupMember, assume, forget)
    def add_member(self, pod: PodInfo) -> None:
        self._state(group_key(pod)).add(pod)

    def update_member(self, old: PodInfo | None, pod: PodInfo) -> None:
        state = self._states.get(group_key(pod))
        if state is None:
            self.add_member(pod)
        else:
            state.update(old, pod)

    def remove_member(self, pod: PodInfo) -> None:
        key = group_key(pod)
        state = self._states.get(key)
        if state is not None:
            state.delete(pod.uid)
            self._drop_if_empty(key)

    def assume(self, pod: PodInfo) -> None:
        key = group_key(pod)
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = PodGroupState()
            state.all[pod.uid] = pod
        state.assume(pod)

    def forget(self, pod: PodInfo) -> None:
        state = self._states.get(group_key(pod))
        if state is not None:
            state.forget(pod.uid)

    # the PodGroup objects (AddPodGroup, UpdatePodGroup, RemovePodGroup)
    def set_pod_group(self, obj: dict[str, Any]) -> None:
        self._state(object_key(obj)).pod_group = obj

    def remove_pod_group(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        state = self._states.get(key)
        if state is not None:
            state.pod_group = None
            self._drop_if_empty(key)
