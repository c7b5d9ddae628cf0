"""Shared plugin helpers (``framework/plugins/helper``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.volumes import pod_claim_names, volumes_signature
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import MAX_NODE_SCORE, Plugin, PreFilterExtensions, SignFragment, SignPlugin
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
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


def uses_claim(pod: PodInfo, _old: Any, new: Any, *, ephemeral: bool = False) -> bool:
    """The volume plugins' claim hint: ``new`` is a claim in the pod's namespace that one of its
    persistentVolumeClaim volumes (and with ``ephemeral`` its generic ephemeral ones) uses."""
    if not isinstance(new, Mapping):
        return True
    meta = new.get("metadata") or {}
    if (meta.get("namespace") or "default") != pod.namespace:
        return False
    return meta.get("name") in {name for name, eph in pod_claim_names(pod.obj) if ephemeral or not eph}


def uses_claim_or_ephemeral(pod: PodInfo, old: Any, new: Any) -> bool:
    return uses_claim(pod, old, new, ephemeral=True)


class VolumeSignPlugin(SignPlugin):
    """``SignPod`` of the four volume plugins (``fwk.VolumesSigner``), and their part in the
    shape cache: none for a pod whose PreFilter skipped them (no volumes they look at), and no
    cache for a pod whose volumes they judge, since claims, volumes and attachments are cluster
    state outside the node table."""

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        return [SignFragment("Volumes", volumes_signature(pod.obj))], None

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        if self.name in state.skip_filter:
            return [], None
        return [], Status(Code.UNSCHEDULABLE, ("the pod's volumes are judged on cluster state",))


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


class OtherPodsReader(Plugin):
    """For plugins that look at other pods (InterPodAffinity, PodTopologySpread): the scheduler's
    listers (namespaces, Services, workload controllers) and the cache's pod table, through the
    handle. Properties of a class of their own, so that they stay properties when compiled."""

    @property
    def listers(self) -> Listers:
        return internal(self.handle).listers

    @property
    def pods(self) -> PodTable:
        return internal(self.handle).cache.pod_table
