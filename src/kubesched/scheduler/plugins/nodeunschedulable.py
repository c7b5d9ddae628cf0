"""NodeUnschedulable (Filter): ``spec.unschedulable`` nodes refuse pods that don't tolerate it."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.api.selectors import Taint, tolerates_any
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
ERR_REASON = "node(s) were unschedulable"


class NodeUnschedulable(FilterPlugin, EnqueueExtensions, SignPlugin):
    name = "NodeUnschedulable"

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the pod's tolerations decide (``fwk.TolerationsSigner``)."""
        return [SignFragment("Tolerations", pod.tolerations)], None

    node_only = True
    cross_node = False
    rows_only = True

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        mask = nodes.unschedulable
        if not np.count_nonzero(mask) or tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return NodeVerdicts.reject_where(mask, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def node_schedulable(pod: PodInfo, _old: Any, new: Any) -> bool:
            return isinstance(new, NodeSpecInfo) and (
                not new.unschedulable or tolerates_any(pod.tolerations, UNSCHEDULABLE_TAINT)
            )

        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_schedulable),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION)),
        ]
