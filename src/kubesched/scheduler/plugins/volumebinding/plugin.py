"""VolumeBinding (PreFilter, Filter, PreScore, Score, Reserve, PreBind): a pod's claims must be
bound to volumes whose node affinity admits the node, or bindable or provisionable there; the
scheduler's choice is assumed at Reserve and written at PreBind, which waits for the PV
controller to finish (``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go``).

Score (``scorer.py``) under StorageCapacityScoring, beta and on in v1.37; with the gate off
PreScore skips.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.api.quantity import value as quantity_value
from kubesched.api.volumes import (
    ANN_MIGRATED_PLUGINS,
    ephemeral_claim_error,
    has_volumes,
    pod_claim_names,
)
from kubesched.errors import InputError
from kubesched.features import STORAGE_CAPACITY_SCORING
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.handle import internal
from kubesched.scheduler.plugins.helper import VolumeSignPlugin, uses_claim_or_ephemeral
from kubesched.scheduler.plugins.volumebinding.binder import (
    REASONS,
    BindingError,
    Found,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from kubesched.scheduler.plugins.volumebinding.scorer import score, shape_of

STATE_KEY = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT_SECONDS = 600
POLL_SECONDS = 1.0  # wait.PollUntilContextTimeout's interval in BindPodVolumes


@dataclass(slots=True)
class VolumeBindingArgs:
    """``VolumeBindingArgs``: how long PreBind waits for the bindings, and the score's shape
    under StorageCapacityScoring (upstream's default when unset)."""

    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    shape: list[Any] | None = None

    def validate(self) -> None:
        if self.bind_timeout_seconds < 0:
            raise InputError("invalid BindTimeoutSeconds, should not be a negative value", field="bindTimeoutSeconds")


@dataclass(slots=True)
class StateData:
    """``stateData``: the claims, FindPodVolumes' answer, and what Reserve assumed."""

    claims: PodVolumeClaims | None = None
    found: Found | None = None
    nodes: NodeTableView | None = None
    all_bound: bool = False
    volumes: dict[str, PodVolumes] = field(default_factory=dict)  # node → assumed at Reserve

    def clone(self) -> StateData:
        return self  # shared across copies, as upstream's pointer


class VolumeBinding(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
    VolumeSignPlugin,
):
    name = "VolumeBinding"
    # PreFilter skips a pod without volumes, writing empty state that the pods the memo serves
    # then share (its clone is itself, as upstream's pointer): Reserve sets allBound on it, as it
    # would for each of them, and nothing else writes it
    pre_filter_memo = Memo(when=lambda pod: not has_volumes(pod.obj))
    pre_score_memo = Memo()  # Skip unless StorageCapacityScoring's shape is set
    cross_node = False  # the verdict on a node depends on that node's pods alone
    scores_bounded = True  # the shape's scores lie in 0..10, scaled to 0..100
    # a ClassVar: compiled, a plain class-level assignment would be an instance attribute's default
    Args: ClassVar[type[VolumeBindingArgs]] = VolumeBindingArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.args = args if isinstance(args, VolumeBindingArgs) else VolumeBindingArgs()
        if handle is None:
            raise InputError("VolumeBinding needs the scheduler's handle")
        own = internal(handle)
        self.binder = VolumeBinder(own.listers, self._node_labels)
        # upstream builds the scorer only under the gate (volume_binding.go, New)
        self.shape = shape_of(self.args.shape) if own.features.enabled(STORAGE_CAPACITY_SCORING) else None

    def _node_labels(self, node: str) -> Mapping[str, str]:
        assert self.handle is not None
        obj = self.handle.snapshot.node_object(node) or {}
        return (obj.get("metadata") or {}).get("labels") or {}

    # -- PreFilter -----------------------------------------------------------------------------------
    def _has_claims(self, pod: PodInfo) -> tuple[bool, str | None]:
        """``podHasPVCs``: whether the pod uses claims, and why it cannot be scheduled yet."""
        names = pod_claim_names(pod.obj)
        for name, ephemeral in names:
            pvc = self.binder.pvc_cache.get(pod.namespace, name)
            if pvc is None:
                if ephemeral:
                    return True, f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
                return True, f'persistentvolumeclaim "{name}" not found'
            status = pvc.get("status") or {}
            if status.get("phase") == "Lost":
                volume = (pvc.get("spec") or {}).get("volumeName") or ""
                return True, f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
            if (pvc.get("metadata") or {}).get("deletionTimestamp"):
                return True, f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral and (err := ephemeral_claim_error(pod.obj, pvc)):
                return True, err
        return bool(names), None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_volumes(pod.obj):
            state.write(STATE_KEY, StateData())
            return None, Status(Code.SKIP)
        has, why = self._has_claims(pod)
        if why is not None:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (why,))
        if not has:
            state.write(STATE_KEY, StateData())
            return None, Status(Code.SKIP)
        try:
            claims = self.binder.pod_volume_claims(pod.obj)
        except BindingError as exc:
            return None, Status.error(str(exc))
        if claims.immediate:
            return None, Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",)
            )
        state.write(STATE_KEY, StateData(claims=claims))
        return None, None

    # -- Filter ---------------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s: StateData | None = state.get(STATE_KEY)
        if s is None or s.claims is None:
            return None
        found = self.binder.find(pod.obj, s.claims, nodes)
        assert self.handle is not None
        if nodes is self.handle.snapshot.table:  # not one of preemption's what-if copies
            s.found, s.nodes = found, nodes
        code = np.where(found.reasons > 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(np.int8)
        reason = found.reasons.astype(np.int64)
        error = found.error
        if error is not None and found.error_rows is not None:
            code[found.error_rows] = Code.ERROR
            reason[found.error_rows] = 1 << 8
        if not code.any():
            return None
        return NodeVerdicts(code, reason, functools.partial(_describe, error))

    # -- PreScore / Score (StorageCapacityScoring) ------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        return Status(Code.SKIP) if self.shape is None else None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), np.int64)
        s: StateData | None = state.get(STATE_KEY)
        if self.shape is None or s is None or s.found is None or s.nodes is None:
            return out
        seen = s.nodes
        if seen.names is nodes.names:
            at = np.asarray(rows, np.int64)
        else:  # the rows Filter saw, by name
            at = np.array([seen.index.get(nodes.names[r], -1) for r in rows.tolist()], np.int64)
        known = at >= 0
        if not known.any():
            return out
        at = at[known]
        found = s.found
        matching = [(pvc, candidates, choice[at]) for pvc, candidates, choice in found.matching]
        every = self.binder.node_capacity
        out[known] = score(len(at), matching, found.provision_first, lambda pvc: every(pvc, seen)[at], self.shape)
        return out

    # -- Reserve / Unreserve ----------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: StateData | None = state.get(STATE_KEY)
        if s is None:
            return None
        if s.found is None or s.nodes is None or node_name not in s.nodes.index:
            s.all_bound = True  # the pod references no claim
            return None
        volumes = self.binder.pod_volumes(s.found, s.nodes.index[node_name])
        try:
            s.all_bound = self.binder.assume(pod.obj, node_name, volumes)
        except BindingError as exc:
            return Status.error(str(exc))
        s.volumes[node_name] = volumes
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: StateData | None = state.get(STATE_KEY)
        if s is not None and node_name in s.volumes:
            self.binder.revert(s.volumes[node_name])

    # -- PreBind ---------------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Skip when every claim is bound (nothing to write), an error when Reserve left no
        volumes for the node."""
        s: StateData | None = state.get(STATE_KEY)
        if s is None or s.all_bound:
            return Status(Code.SKIP)
        if s.volumes.get(node_name) is None:
            return Status.error(f'no pod volume found for node "{node_name}"')
        return None

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: StateData | None = state.get(STATE_KEY)
        if s is None or s.all_bound:
            return None
        volumes = s.volumes.get(node_name)
        if volumes is None:
            return Status.error(f'no pod volumes found for node "{node_name}"')
        try:
            self._bind(pod, node_name, volumes)
        except BindingError as exc:
            return Status.error(str(exc))
        return None

    def _bind(self, pod: PodInfo, node: str, volumes: PodVolumes) -> None:
        """``BindPodVolumes``: the API updates, then the wait for the PV controller."""
        assert self.handle is not None
        client = self.handle.client
        done_bindings = done_claims = 0
        try:
            for i, (pvc, pv) in enumerate(volumes.static_bindings):
                volumes.static_bindings[i] = (pvc, client.update_volume(pv))
                done_bindings += 1
            for i, claim in enumerate(volumes.dynamic_provisions):
                volumes.dynamic_provisions[i] = client.update_volume_claim(claim)
                done_claims += 1
        except Exception as exc:  # an API error: the assumptions not yet written are dropped
            self.binder.revert(
                PodVolumes(volumes.static_bindings[done_bindings:], volumes.dynamic_provisions[done_claims:])
            )
            raise BindingError(str(exc)) from None
        deadline = time.monotonic() + self.args.bind_timeout_seconds
        while True:
            if self.binder.check_bindings(client, pod.obj, node, volumes):
                return
            if time.monotonic() >= deadline or not client.settle(POLL_SECONDS):
                raise BindingError("binding volumes: context deadline exceeded")

    # -- QueueingHints -----------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        def class_changed(_pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterStorageClassChange``: a new class, or new allowedTopologies."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True
            return old.get("allowedTopologies") != new.get("allowedTopologies")

        def csi_node_changed(_pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterCSINodeChange``: created, or its migrated plugins changed."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True

            def migrated(o: Mapping[str, Any]) -> Any:
                return ((o.get("metadata") or {}).get("annotations") or {}).get(ANN_MIGRATED_PLUGINS)

            return migrated(old) != migrated(new)

        def csi_driver_changed(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterCSIDriverChange``: capacity tracking turned off for a driver an
            inline CSI volume of the pod uses."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True
            name = (new.get("metadata") or {}).get("name")
            uses = any(
                isinstance(v, Mapping) and (v.get("csi") or {}).get("driver") == name
                for v in (pod.obj.get("spec") or {}).get("volumes") or []
            )
            return (
                uses
                and bool((old.get("spec") or {}).get("storageCapacity"))
                and not (new.get("spec") or {}).get("storageCapacity")
            )

        def capacity_changed(_pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterCSIStorageCapacityChange``: new, or a larger volume limit."""
            if not isinstance(old, Mapping) or not isinstance(new, Mapping):
                return True
            before, after = _volume_limit(old), _volume_limit(new)
            return after is not None and (before is None or after > before)

        return [
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD | ActionType.UPDATE), class_changed),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE), uses_claim_or_ephemeral
            ),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD | ActionType.UPDATE), csi_node_changed),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.UPDATE), csi_driver_changed),
            ClusterEventWithHint(
                ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE), capacity_changed
            ),
        ]


def _volume_limit(cap: Mapping[str, Any]) -> int | None:
    raw = cap.get("maximumVolumeSize") if cap.get("maximumVolumeSize") is not None else cap.get("capacity")
    if raw is None:
        return None
    try:
        return quantity_value(raw)
    except InputError:
        return None


def _describe(error: object, bits: int) -> tuple[str, ...]:
    """A node's reasons from its bits (bit 8: the search's error); a function of the module with
    the error bound, not a closure (see tests/test_no_cycles.py)."""
    if bits & (1 << 8):
        return (str(error),)
    return tuple(text for bit, text in REASONS if bits & bit)
