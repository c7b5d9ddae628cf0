"""NodeDeclaredFeatures (PreFilter, Filter): a pod whose spec needs a node feature (KEP-5328) goes
only to nodes that declare it in ``status.declaredFeatures`` (GA in v1.37;
``pkg/scheduler/framework/plugins/nodedeclaredfeatures``). What a pod needs and what a node
declares are bitmasks over the feature registry (``kubesched.api.node_features``)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.node_features import mask_words, registry_version, required_mask
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status

ERR_REASON = "node(s) didn't match Pod's required features"
STATE_KEY = "PreFilterNodeDeclaredFeatures"
_CACHE = "NodeDeclaredFeatures/required"


def pod_requirements(pod: PodInfo) -> int:
    """The pod's required features, inferred once per pod object."""
    cached = pod.extra.get(_CACHE)
    if cached is not None and cached[0] is pod.obj:
        return int(cached[1])
    mask = required_mask(pod.obj.get("spec") or {})
    pod.extra[_CACHE] = (pod.obj, mask)
    return mask


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin, EnqueueExtensions, SignPlugin):
    name = "NodeDeclaredFeatures"
    pre_filter_memo = Memo(guarded=True)  # the pod's spec, under the feature registry
    cross_node = False  # a node's own declaration decides
    rows_only = True
    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the features the pod needs (``fwk.FeaturesSignerName``)."""
        return [SignFragment("Features", pod_requirements(pod))], None

    def memo_guard(self, nodes: NodeTableView) -> Hashable:
        return registry_version()

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = pod_requirements(pod)
        if not required:
            return None, Status(Code.SKIP)
        state.write(STATE_KEY, required)
        return None, None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        declared = nodes.declared_features
        required = np.array(mask_words(int(state.read(STATE_KEY)), declared.shape[1]), np.uint64)
        missing = ((declared & required) != required).any(axis=1)
        if not missing.any():
            return None
        return NodeVerdicts.reject_where(missing, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def node_declares_otherwise(_pod: PodInfo, old: Any, new: Any) -> bool:
            return not (
                isinstance(old, NodeSpecInfo)
                and isinstance(new, NodeSpecInfo)
                and old.declared_features == new.declared_features
            )

        def pod_needs_otherwise(_pod: PodInfo, old: Any, new: Any) -> bool:
            if not isinstance(old, PodInfo) or not isinstance(new, PodInfo):
                return True
            return required_mask(old.obj.get("spec") or {}) != required_mask(new.obj.get("spec") or {})

        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE), node_declares_otherwise
            ),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), pod_needs_otherwise),
        ]
