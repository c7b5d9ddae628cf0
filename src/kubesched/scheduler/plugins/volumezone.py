"""VolumeZone (PreFilter, Filter): the zone and region labels of the PersistentVolumes a pod's
bound claims use must admit the node (``pkg/scheduler/framework/plugins/volumezone/volume_zone.go``).

A label value may list several zones (``a__b``, ``LabelZonesToSet``); a beta label on a volume
also matches the GA label on a node; a node with none of the four labels passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.volumes import WAIT_FOR_FIRST_CONSUMER, claim_class, name_of
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import VolumeSignPlugin, uses_claim

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
PRE_FILTER_KEY = "PreFilterVolumeZone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (BETA_ZONE, BETA_REGION, ZONE, REGION)
_GA = {BETA_ZONE: ZONE, BETA_REGION: REGION}
ADD_OR_UPDATE = ActionType.ADD | ActionType.UPDATE


def zones_of(value: str) -> frozenset[str]:
    """``LabelZonesToSet``: zones separated by ``__``."""
    return frozenset(z for z in value.split("__") if z)


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


def volume_topologies(pv: Mapping[str, Any]) -> list[PVTopology]:
    labels = (pv.get("metadata") or {}).get("labels") or {}
    return [PVTopology(name_of(pv), key, zones_of(str(labels[key]))) for key in TOPOLOGY_LABELS if key in labels]


class VolumeZone(PreFilterPlugin, FilterPlugin, EnqueueExtensions, VolumeSignPlugin):
    name = "VolumeZone"
    pre_filter_memo = Memo(when=lambda pod: not pod.pvc_names)  # Skip, whatever the cluster
    cross_node = False  # the verdict on a node depends on that node's pods alone

    def _get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        assert self.handle is not None
        return self.handle.listers.get(kind, namespace, name)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        """``getPVbyPod``: the topologies of the volumes bound to the pod's claims; an unbound claim
        of a WaitForFirstConsumer class is VolumeBinding's to place."""
        topologies: list[PVTopology] = []
        for claim_name in pod.pvc_names:
            pvc = self._get("PersistentVolumeClaim", pod.namespace, claim_name)
            if pvc is None:
                return None, _unresolvable(f'persistentvolumeclaim "{claim_name}" not found')
            pv_name = str((pvc.get("spec") or {}).get("volumeName") or "")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return None, _unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                cls = self._get("StorageClass", "", class_name)
                if cls is None:
                    return None, _unresolvable(f'storageclasses.storage.k8s.io "{class_name}" not found')
                mode = cls.get("volumeBindingMode")
                if mode is None:
                    return None, _unresolvable(f'VolumeBindingMode not set for StorageClass "{class_name}"')
                if mode == WAIT_FOR_FIRST_CONSUMER:
                    continue
                return None, _unresolvable("PersistentVolume had no name")
            pv = self._get("PersistentVolume", "", pv_name)
            if pv is None:
                return None, _unresolvable(f'persistentvolume "{pv_name}" not found')
            topologies.extend(volume_topologies(pv))
        if not topologies:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, topologies)
        return None, None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        topologies: list[PVTopology] | None = state.get(PRE_FILTER_KEY)
        if not topologies:
            return None
        zoned = np.zeros(nodes.n, bool)
        for key in TOPOLOGY_LABELS:
            codes = nodes.label_codes(key)
            if codes is not None:
                zoned |= codes >= 0
        conflict = np.zeros(nodes.n, bool)
        for topo in topologies:
            codes = nodes.label_codes(topo.key)
            ga_key = _GA.get(topo.key)
            ga = nodes.label_codes(ga_key) if ga_key else None
            for label_key, col in ((topo.key, codes), (ga_key, ga)):
                if col is None or label_key is None:
                    continue
                allowed = [c for v in topo.values if (c := nodes.label_value_code(label_key, v)) >= 0]
                has = col >= 0
                if label_key != topo.key and codes is not None:
                    has &= codes < 0  # the GA label is read only where the volume's own key is absent
                conflict |= has & ~np.isin(col, allowed)
        conflict &= zoned
        if not conflict.any():
            return None
        return NodeVerdicts.reject_where(conflict, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def class_added(_pod: PodInfo, _old: Any, new: Any) -> bool:
            """``isSchedulableAfterStorageClassAdded``: a WaitForFirstConsumer class."""
            return not isinstance(new, Mapping) or new.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER

        def volume_changed(_pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterPersistentVolumeChange``: created, or its topology labels changed."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True
            return volume_topologies(old) != volume_topologies(new)

        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD), class_added),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE), uses_claim),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE), volume_changed),
        ]


def _unresolvable(message: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,))
