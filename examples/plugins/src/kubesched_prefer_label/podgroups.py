"""``PodGroupExists``: an out-of-tree plugin that reads a custom resource of its own, as
scheduler-plugins' Coscheduling reads its PodGroup CRD (scheduling.x-k8s.io/v1alpha1).

A pod labelled ``scheduling.x-k8s.io/pod-group: NAME`` waits (UnschedulableAndUnresolvable)
until a PodGroup NAME exists in its namespace with ``spec.minMember`` at least 1; the plugin
registers the PodGroup's Add and Update events, so the pod is retried when the group appears
(the scheduler then lists and watches PodGroups for it). Pods without the label pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubesched.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EnqueueExtensions,
    NodeTableView,
    PodInfo,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    custom_kind,
)

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# upstream's GVK form of an event resource: <plural>.<version>.<group>
PODGROUPS = "podgroups.v1alpha1.scheduling.x-k8s.io"


class PodGroupExists(PreFilterPlugin, EnqueueExtensions):
    name = "PodGroupExists"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        group = pod.labels.get(GROUP_LABEL)
        if not group:
            return None, None
        assert self.handle is not None
        found = self.handle.listers.get(str(custom_kind(PODGROUPS)), pod.namespace, group)
        if found is None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'PodGroup "{pod.namespace}/{group}" not found',))
        min_member = (found.get("spec") or {}).get("minMember", 0)
        if not isinstance(min_member, int) or min_member < 1:
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'PodGroup "{pod.namespace}/{group}" has no minMember',)
            )
        return None, None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(PODGROUPS, ActionType.ADD | ActionType.UPDATE))]
