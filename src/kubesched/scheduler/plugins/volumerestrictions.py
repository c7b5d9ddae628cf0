"""VolumeRestrictions (PreFilter, Filter, PreFilterExtensions): in-tree disks a node's pods
already mount in a conflicting way, and ReadWriteOncePod claims another pod already uses
(``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go``).

The disks on each node and the claims in use anywhere are kept from the cache's pod arrivals
and departures (upstream reads ``NodeInfo.Pods`` and the snapshot's ``usedPVCSet``); preemption's
dry run removes victims through ``remove_pod``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.volumes import READ_WRITE_ONCE_POD, access_modes, has_volumes, namespace_of
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import VolumeSignPlugin, uses_claim

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
PRE_FILTER_KEY = "PreFilterVolumeRestrictions"

# (kind, identity, read-only) of an in-tree disk a volume mounts; RBD's identity is (pool, image)
# and its monitors are compared apart
Disk = tuple[str, tuple[str, ...], bool, frozenset[str]]


def pod_disks(pod: Mapping[str, Any]) -> list[Disk]:
    """The in-tree disks of ``needsRestrictionsCheck``: GCE PD, AWS EBS, iSCSI, RBD."""
    out: list[Disk] = []
    for vol in (pod.get("spec") or {}).get("volumes") or []:
        if not isinstance(vol, Mapping):
            continue
        if gce := vol.get("gcePersistentDisk"):
            out.append(("gce", (str(gce.get("pdName") or ""),), bool(gce.get("readOnly")), frozenset()))
        elif ebs := vol.get("awsElasticBlockStore"):
            out.append(("ebs", (str(ebs.get("volumeID") or ""),), bool(ebs.get("readOnly")), frozenset()))
        elif iscsi := vol.get("iscsi"):
            out.append(("iscsi", (str(iscsi.get("iqn") or ""),), bool(iscsi.get("readOnly")), frozenset()))
        elif rbd := vol.get("rbd"):
            ident = (str(rbd.get("pool") or "rbd"), str(rbd.get("image") or ""))
            out.append(("rbd", ident, bool(rbd.get("readOnly")), frozenset(rbd.get("monitors") or [])))
    return out


def disks_conflict(a: Disk, b: Disk) -> bool:
    """``isVolumeConflict`` for one pair: the same disk, unless both mount it read-only (an EBS
    volume attaches to one instance only, read-only or not)."""
    if a[0] != b[0] or a[1] != b[1]:
        return False
    if a[0] == "ebs":
        return True
    if a[0] == "rbd" and not (a[3] & b[3]):
        return False
    return not (a[2] and b[2])


def claim_keys(pod: PodInfo) -> list[str]:
    """``namespace/claim`` of each persistentVolumeClaim volume (ephemeral ones are not counted,
    as upstream's ``readWriteOncePodPVCsForPod``)."""
    return [f"{pod.namespace}/{name}" for name in pod.pvc_names]


@dataclass(slots=True)
class PreFilterState:
    rwop_claims: frozenset[str]
    conflicting_refs: int
    disks: list[Disk] = field(default_factory=list)
    removed: dict[str, list[PodInfo]] = field(default_factory=dict)  # node → victims (preemption)
    added: dict[str, list[PodInfo]] = field(default_factory=dict)  # node → nominated pods

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.rwop_claims,
            self.conflicting_refs,
            self.disks,
            {k: list(v) for k, v in self.removed.items()},
            {k: list(v) for k, v in self.added.items()},
        )


class _Extensions(PreFilterExtensions):
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, nodes: NodeTableView, row: int) -> None:
        self._update(state, pod_to_add, nodes.names[row], 1)

    def remove_pod(
        self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, nodes: NodeTableView, row: int
    ) -> None:
        self._update(state, pod_to_remove, nodes.names[row], -1)

    @staticmethod
    def _update(state: CycleState, other: PodInfo, node: str, sign: int) -> None:
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return
        s.conflicting_refs += sign * sum(1 for key in claim_keys(other) if key in s.rwop_claims)
        if s.disks and pod_disks(other.obj):
            (s.added if sign > 0 else s.removed).setdefault(node, []).append(other)


class VolumeRestrictions(PreFilterPlugin, FilterPlugin, EnqueueExtensions, VolumeSignPlugin):
    name = "VolumeRestrictions"
    pre_filter_memo = Memo(when=lambda pod: not has_volumes(pod.obj))  # Skip, whatever the cluster

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._extensions = _Extensions()
        self.claims_in_use: Counter[str] = Counter()  # the snapshot's usedPVCSet, with ref counts
        # (disk kind, identity) → node → pod uid → that pod's mounts of the disk
        self.disk_users: dict[tuple[str, tuple[str, ...]], dict[str, dict[str, list[Disk]]]] = {}
        if handle is not None:
            handle.snapshot.add_pod_listener(self._on_pod)

    def _on_pod(self, event: str, pod: PodInfo, node: str, _assumed: bool) -> None:
        if not has_volumes(pod.obj):
            return
        sign = 1 if event == "add" else -1
        for key in claim_keys(pod):
            self.claims_in_use[key] += sign
            if self.claims_in_use[key] <= 0:
                del self.claims_in_use[key]
        disks = pod_disks(pod.obj)
        if not disks:
            return
        for disk in disks:
            by_node = self.disk_users.setdefault(disk[:2], {})
            if sign > 0:
                by_node.setdefault(node, {}).setdefault(pod.uid, []).append(disk)
                continue
            users = by_node.get(node, {})
            users.pop(pod.uid, None)
            if not users:
                by_node.pop(node, None)
            if not by_node:
                del self.disk_users[disk[:2]]

    def _claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        assert self.handle is not None
        return self.handle.listers.get("PersistentVolumeClaim", namespace, name)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_volumes(pod.obj):
            return None, Status(Code.SKIP)
        disks = pod_disks(pod.obj)
        rwop: set[str] = set()
        for name in pod.pvc_names:
            pvc = self._claim(pod.namespace, name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'persistentvolumeclaim "{name}" not found',))
            if READ_WRITE_ONCE_POD in access_modes(pvc):
                rwop.add(f"{namespace_of(pvc)}/{name}")
        conflicting = sum(1 for key in rwop if self.claims_in_use.get(key, 0) > 0)
        if not disks and conflicting == 0:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, PreFilterState(frozenset(rwop), conflicting, disks))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self._extensions

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s: PreFilterState | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return None
        if s.disks:
            # only the nodes where one of the pod's disks is mounted already can conflict
            conflict = np.zeros(nodes.n, bool)
            for mine in s.disks:
                for node, users in self.disk_users.get(mine[:2], {}).items():
                    row = nodes.index.get(node)
                    if row is None or conflict[row]:
                        continue
                    removed = {p.uid for p in s.removed.get(node, ())}
                    theirs = [d for uid, ds in users.items() if uid not in removed for d in ds]
                    conflict[row] = any(disks_conflict(mine, d) for d in theirs)
            for node, added in s.added.items():  # nominated pods preemption puts on a node
                row = nodes.index.get(node)
                if row is not None and not conflict[row]:
                    conflict[row] = any(disks_conflict(m, d) for p in added for d in pod_disks(p.obj) for m in s.disks)
            if conflict.any():
                return NodeVerdicts.reject_where(conflict, Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        if s.conflicting_refs > 0:
            return NodeVerdicts.reject_where(np.ones(nodes.n, bool), Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def deleted_pod_frees(pod: PodInfo, old: Any, _new: Any) -> bool:
            """``isSchedulableAfterAssignedPodDeleted``: the deleted pod shared a claim with the pod
            (a ReadWriteOncePod claim may be free) or mounted one of its disks."""
            if not isinstance(old, PodInfo):
                return True
            if old.namespace == pod.namespace and set(old.pvc_names) & set(pod.pvc_names):
                return True
            mine = pod_disks(pod.obj)
            return any(disks_conflict(a, b) for a in mine for b in pod_disks(old.obj))

        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), deleted_pod_frees),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD), uses_claim),
        ]
