"""TaintToleration (Filter, PreScore, Score): NoSchedule/NoExecute taints must be tolerated;
untolerated PreferNoSchedule taints lower the score (normalized in reverse).

Tolerations are matched once per distinct taint in the cluster, then applied to the node ×
taint matrix, so the cost does not grow with nodes × taints.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.api.selectors import tolerates_any
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import default_normalize_score

ERR_REASON = "node(s) had untolerated taint(s)"
PRE_SCORE_KEY = "PreScoreTaintToleration"


def untolerated_do_not_schedule(nodes: NodeTableView, pod: PodInfo) -> np.ndarray:
    """Rows with a NoSchedule/NoExecute taint the pod does not tolerate
    (``helper.DoNotScheduleTaintsFilterFunc``)."""
    taints = nodes.taint_list
    if not taints:
        return np.zeros(nodes.n, bool)
    untolerated = np.array(
        [t.effect in ("NoSchedule", "NoExecute") and not tolerates_any(pod.tolerations, t) for t in taints], bool
    )
    if not np.count_nonzero(untolerated):
        return np.zeros(nodes.n, bool)
    return np.asarray(nodes.taints[:, untolerated].any(axis=1), bool)


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = "TaintToleration"

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the pod's tolerations decide (``fwk.TolerationsSigner``)."""
        return [SignFragment("Tolerations", pod.tolerations)], None

    node_only = True
    cross_node = False
    rows_only = True
    scores_bounded = True

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        if not nodes.taint_list:
            return None
        mask = untolerated_do_not_schedule(nodes, pod)
        if not np.count_nonzero(mask):
            return None
        return NodeVerdicts.reject_where(mask, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)

    # PreScore reads the pod's tolerations and the taints any node has
    pre_score_memo = Memo(guarded=True)

    def memo_guard(self, nodes: NodeTableView) -> Hashable:
        # the table's list of taints only grows; holding it keeps its identity unique
        return (nodes.taint_list, len(nodes.taint_list))

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        if not nodes.taint_list:
            state.write(PRE_SCORE_KEY, None)  # no taint anywhere: every node counts 0
            return None
        prefer = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        counted = np.array(
            [t.effect == "PreferNoSchedule" and not tolerates_any(prefer, t) for t in nodes.taint_list], bool
        )
        state.write(PRE_SCORE_KEY, counted if np.count_nonzero(counted) else None)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        counted = state.get(PRE_SCORE_KEY)
        if counted is None:
            return np.zeros(len(rows), np.int64)
        return nodes.taints.take(rows, 0)[:, counted].sum(axis=1).astype(np.int64)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        if state.get(PRE_SCORE_KEY) is None:  # every count 0: reversed, every node scores 100
            out = np.empty(len(scores), np.int64)  # np.full, without its Python-level wrapper
            out.fill(MAX_NODE_SCORE)
            return out
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def node_tolerated(pod: PodInfo, _old: Any, new: Any) -> bool:
            if not isinstance(new, NodeSpecInfo):
                return True
            return all(tolerates_any(pod.tolerations, t) for t in new.taints if t.effect in ("NoSchedule", "NoExecute"))

        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), node_tolerated),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION)),
        ]
