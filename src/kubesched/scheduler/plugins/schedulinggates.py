"""SchedulingGates (PreEnqueue): a pod with ``spec.schedulingGates`` waits, gated, until they are gone."""

from __future__ import annotations

from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.events import POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import EnqueueExtensions, PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import go_list


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status.of(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"waiting for scheduling gates: {go_list(pod.scheduling_gates)}"
        )

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def same_pod(pod: PodInfo, _old: Any, new: Any) -> bool:
            return isinstance(new, PodInfo) and new.uid == pod.uid and not new.scheduling_gates

        return [ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), same_pod)]
