"""NodeResourcesBalancedAllocation (PreScore, Score): favour nodes whose balance the pod improves.

v1.36 (k/k PR #135573) scores the change in balance: with b = int((1 − std)·100) of the
resource fractions, score = 50 + (50 + b(with pod) − b(without pod)) / 2, so an unchanged
balance scores 75. Requests, not non-zero requests, are used; best-effort pods are skipped.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    Memo,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.noderesources import scoring
from kubesched.scheduler.plugins.noderesources.args import parse_balanced_args


class NodeResourcesBalancedAllocation(PreScorePlugin, ScorePlugin, SignPlugin):
    name = "NodeResourcesBalancedAllocation"
    pre_score_memo = Memo()  # the pod's requests alone

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): the requests it scores with, zero CPU/memory defaulted
        (``calculatePodResourceRequestList``)."""
        return [
            SignFragment("Resources", tuple(sorted(pod.requests.items()))),
            SignFragment("NonZeroRequests", (pod.non_zero_cpu, pod.non_zero_memory)),
        ], None

    scores_bounded = True
    rows_only = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.resources = parse_balanced_args(args)
        self._cpu_memory = scoring.is_cpu_memory(self.resources)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        if all(pod.requests.get(name, 0) == 0 for name, _ in self.resources):
            return Status(Code.SKIP)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        rr = scoring.ResourceRows.of(state, nodes, rows)
        if self._cpu_memory:  # the default
            return scoring.balanced_cpu_memory(rr, pod)
        base, pod_req, alloc = scoring.requested_matrix(rr, nodes, pod, self.resources, use_requested=True)
        without, with_pod = scoring.balanced_scores(base, pod_req, alloc)
        half = MAX_NODE_SCORE // 2
        return half + (half + with_pod - without) // 2
