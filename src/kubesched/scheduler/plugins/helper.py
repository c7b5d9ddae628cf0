"""Shared plugin helpers (``framework/plugins/helper``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import MAX_NODE_SCORE, Plugin, PreFilterExtensions
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.framework.handle import internal
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.podtable import PodTable

# update(pre-filter state, incoming pod, pod added/removed, nodes, its row, +1/-1)
StateUpdate = Callable[[Any, PodInfo, PodInfo, NodeTableView, int, int], None]


def default_normalize_score(scores: np.ndarray, reverse: bool) -> np.ndarray:
    """``DefaultNormalizeScore``: scale to [0, 100] by the max (integer math), optionally reversed."""
    if len(scores) == 0:
        return scores
    top = int(scores.max())
    if top == 0:
        return np.full_like(scores, MAX_NODE_SCORE) if reverse else scores
    out = scores * MAX_NODE_SCORE // top
    return MAX_NODE_SCORE - out if reverse else out


def go_list(items: list[str] | tuple[str, ...]) -> str:
    """Go's ``%v`` of a []string: ``[a b]``."""
    return "[" + " ".join(items) + "]"


class StateUpdater(PreFilterExtensions):
    """AddPod/RemovePod for a plugin whose PreFilter state (written under ``key``) counts pods:
    each call adjusts it by one pod on one row."""

    def __init__(self, key: str, update: StateUpdate) -> None:
        self.key, self.update = key, update

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, nodes: NodeTableView, row: int) -> None:
        s = state.get(self.key)
        if s is not None:
            self.update(s, pod, pod_to_add, nodes, row, 1)

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, nodes: NodeTableView, row: int
    ) -> None:
        s = state.get(self.key)
        if s is not None:
            self.update(s, pod, pod_to_remove, nodes, row, -1)


def _handle_listers(plugin: Plugin) -> Listers:
    return internal(plugin.handle).listers


def _handle_pod_table(plugin: Plugin) -> PodTable:
    return internal(plugin.handle).cache.pod_table


# For plugins that look at other pods (InterPodAffinity, PodTopologySpread), as class attributes:
# the scheduler's listers (namespaces, Services, workload controllers) and the cache's pod table.
handle_listers = property(_handle_listers)
handle_pod_table = property(_handle_pod_table)
