"""GangScheduling (``framework/plugins/gangscheduling``, GenericWorkload): all-or-nothing
placement for the pods of a PodGroup with a ``gang`` policy.

* PreEnqueue: a member waits until its PodGroup exists and the group has ``minCount`` pods;
* PlacementFeasible (the pod group cycle): whether the pods scheduled so far plus those left can
  still reach ``minCount``, and whether they have;
* Permit: a member waits (5 minutes at most) until ``minCount`` members are scheduled, then the
  one that completes the quorum lets every waiting member bind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.api.validation_podgroups import pod_group_min_count
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, UNSCHEDULABLE_POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import EnqueueExtensions, PermitPlugin, PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.handle import internal
from kubesched.scheduler.podgroups import PodGroupState, object_key

PERMIT_TIMEOUT = 5 * 60.0  # permitTimeoutDuration
POD_GROUP = "PodGroup"  # the cluster event resource of scheduling.k8s.io PodGroups
WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"


@dataclass(frozen=True, slots=True)
class PlacementProgress:
    """``framework.PlacementProgress``: pods of the group scheduled so far, and those left."""

    remaining: int
    scheduled: int


def min_count(pod_group: dict[str, Any]) -> int:
    """``getMinCount``: a gang's ``minCount``, 1 for a basic group."""
    count = pod_group_min_count(pod_group)
    return 1 if count is None else count


class GangScheduling(PreEnqueuePlugin, PermitPlugin, EnqueueExtensions):
    name = "GangScheduling"

    def _state(self, namespace: str, name: str) -> PodGroupState | None:
        groups = internal(self.handle).cache.pod_groups
        return None if groups is None else groups.get((namespace, name))

    # -- PreEnqueue ---------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.pod_group:
            return None
        state = self._state(pod.namespace, pod.pod_group)
        if state is None or state.pod_group is None:
            return Status.of(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                f'waiting for pods\'s pod group "{pod.pod_group}" to appear in scheduling queue',
            )
        count = state.min_count
        if count is None:  # a basic group: nothing to wait for
            return None
        if state.all_pods_count() < count:
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING_FOR_MIN_COUNT)
        return None

    # -- the pod group cycle --------------------------------------------------------------------
    def placement_feasible(self, pod_group: dict[str, Any], progress: PlacementProgress) -> Status | None:
        """``PlacementFeasible``: Unschedulable when ``minCount`` is out of reach, Wait while it
        is not reached yet."""
        need = min_count(pod_group)
        counts = f"{progress.scheduled} scheduled, {progress.remaining} remaining"
        if progress.remaining + progress.scheduled < need:
            return Status.of(Code.UNSCHEDULABLE, f"minCount ({need}) cannot be satisfied: {counts}")
        if progress.scheduled < need:
            return Status.of(Code.WAIT, f"minCount ({need}) is not yet satisfied: {counts}")
        return None

    # -- Permit ---------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        if not pod.pod_group:
            return None, 0.0
        group = self._state(pod.namespace, pod.pod_group)
        if group is None or group.pod_group is None:
            return Status.error(f"failed to get podGroup {pod.namespace}/{pod.pod_group}: not found"), 0.0
        need = group.min_count
        if need is None:
            return None, 0.0
        handle = internal(self.handle)
        if group.scheduled_pods_count() < need:
            # members that wait for this one may be schedulable now
            if handle.queue is not None:
                handle.queue.activate([p.uid for p in group.unscheduled_pods()])
            return Status.of(Code.WAIT, "waiting for minCount pods from a gang to be scheduled"), PERMIT_TIMEOUT
        for uid in list(group.assumed):
            waiting = handle.waiting_pods.get(uid)
            if waiting is not None:
                waiting.allow(self.name)
        return None, 0.0

    # -- queueing hints -------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        def same_group_pod(pod: PodInfo, _old: Any, new: Any) -> bool:
            return (
                isinstance(new, PodInfo)
                and bool(pod.pod_group)
                and (new.namespace, new.pod_group) == (pod.namespace, pod.pod_group)
            )

        def group_added(pod: PodInfo, _old: Any, new: Any) -> bool:
            return bool(pod.pod_group) and object_key(new) == (pod.namespace, pod.pod_group)

        def min_count_decreased(pod: PodInfo, old: Any, new: Any) -> bool:
            if not pod.pod_group or object_key(new) != (pod.namespace, pod.pod_group):
                return False
            before, after = pod_group_min_count(old or {}), pod_group_min_count(new)
            return before is not None and after is not None and after < before

        return [
            ClusterEventWithHint(ClusterEvent(UNSCHEDULABLE_POD, ActionType.ADD), same_group_pod),
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.ADD), same_group_pod),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.ADD), group_added),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.UPDATE), min_count_decreased),
        ]
