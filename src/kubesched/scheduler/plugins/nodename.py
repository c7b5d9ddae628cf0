"""NodeName (Filter): a pod with ``spec.nodeName`` fits only that node."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status

ERR_REASON = "node(s) didn't match the requested node name"


class NodeName(FilterPlugin, EnqueueExtensions, SignPlugin):
    name = "NodeName"

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the verdict depends on ``spec.nodeName`` alone."""
        return [SignFragment("NodeName", pod.node_name)], None

    node_only = True
    cross_node = False
    rows_only = True

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        if not pod.node_name:
            return None
        mask = np.ones(nodes.n, bool)
        row = nodes.index.get(pod.node_name)
        if row is not None:
            mask[row] = False
        return NodeVerdicts.reject_where(mask, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def is_named(pod: PodInfo, _old: Any, new: Any) -> bool:
            return isinstance(new, NodeSpecInfo) and new.name == pod.node_name

        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), is_named)]
