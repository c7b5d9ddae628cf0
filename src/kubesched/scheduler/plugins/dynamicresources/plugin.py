"""DynamicResources: the scheduler's side of Dynamic Resource Allocation (resource.k8s.io/v1),
in the default profile just before DefaultPreemption, as ``applyFeatureGates`` puts it while
the DynamicResourceAllocation gate is on (GA since v1.34).

What this file implements of upstream's plugin (``dynamicresources.go``, v1.36):

* PreEnqueue: every claim a pod references must exist. A claim from a template must have been
  created and recorded in ``status.resourceClaimStatuses`` (``resourceclaim.Name``), a named
  claim must be found (the claim tracker's assume cache).
* PreFilter: the cycle state is written first, with no claims, for every pod; a pod without
  claims is then skipped by Filter.
* PostFilter: a pod with no claims to allocate gets ``no new claims to deallocate``, which the
  framework joins with DefaultPreemption's reason: v1.36's FailedScheduling messages read
  ``... no new claims to deallocate, preemption: 0/N nodes are available: ...``. Without the
  state (an earlier PreFilter rejected the pod as unresolvable) the plugin reports the cycle
  state's ``not found`` error, as upstream's does.

Not yet: kubesched does not store ResourceClaims, DeviceClasses or ResourceSlices, so a pod
with claims waits at PreEnqueue (its claims cannot be found) rather than being scheduled as if
it had none; the structured allocator (Filter, Reserve, PreBind) comes with those objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.scheduler.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.scheduler.framework.cycle_state import CycleState
from kubesched.scheduler.framework.interface import (
    EnqueueExtensions,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
)
from kubesched.scheduler.framework.status import Code, Status
from kubesched.scheduler.framework.types import Diagnosis
from kubesched.scheduler.nodetable import NodeTable

STATE_KEY = "DynamicResources"
# framework.ErrNotFound: what CycleState.Read returns for a key never written
STATE_NOT_FOUND = "not found"
NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
# resourceclaim.ErrClaimNotFound / ErrAPIUnsupported (k8s.io/dynamic-resource-allocation/resourceclaim)
CLAIM_NOT_CREATED = "ResourceClaim not created yet"
API_UNSUPPORTED = "none of the supported fields are set"


@dataclass(slots=True)
class _State:
    """stateData: the pod's claims, one per ``spec.resourceClaims`` entry (empty without any)."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)


class _ClaimMissing(Exception):
    pass


def _resource_claims(pod: PodInfo) -> list[Any]:
    spec = pod.obj.get("spec") or {}
    claims = spec.get("resourceClaims")
    return claims if isinstance(claims, list) else []


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, PostFilterPlugin, EnqueueExtensions):
    name = "DynamicResources"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)

    # -- claims ----------------------------------------------------------------------------------
    def _claim_name(self, pod: PodInfo, entry: Mapping[str, Any]) -> str | None:
        """``resourceclaim.Name``: the claim a ``spec.resourceClaims`` entry stands for; None
        when a template produced no claim (allowed: the claim is skipped)."""
        if entry.get("resourceClaimName"):
            return str(entry["resourceClaimName"])
        if entry.get("resourceClaimTemplateName"):
            statuses = (pod.obj.get("status") or {}).get("resourceClaimStatuses") or []
            for status in statuses:
                if isinstance(status, Mapping) and status.get("name") == entry.get("name"):
                    name = status.get("resourceClaimName")
                    return str(name) if name else None
            raise _ClaimMissing(f'pod "{pod.namespace}/{pod.name}": {CLAIM_NOT_CREATED}')
        raise _ClaimMissing(
            f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.get("name")}": {API_UNSUPPORTED}'
        )

    def _lookup(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The claim tracker's Get. kubesched keeps no ResourceClaims yet: none is ever found."""
        return None

    def _pod_claims(self, pod: PodInfo) -> list[Mapping[str, Any]]:
        """``foreachPodResourceClaim``: every claim of the pod, or _ClaimMissing saying which is not there."""
        out = []
        for entry in _resource_claims(pod):
            if not isinstance(entry, Mapping):
                continue
            name = self._claim_name(pod, entry)
            if name is None:
                continue
            claim = self._lookup(pod.namespace, name)
            if claim is None:
                raise _ClaimMissing(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                raise _ClaimMissing(f'resourceclaim "{name}" is being deleted')
            out.append(claim)
        return out

    # -- PreEnqueue -------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not _resource_claims(pod):
            return None
        try:
            self._pod_claims(pod)
        except _ClaimMissing as exc:
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))  # statusUnschedulable
        return None

    # -- PreFilter --------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)  # written before anything can fail, for PostFilter
        if not _resource_claims(pod):
            return None, Status.of(Code.SKIP)
        try:
            claims = self._pod_claims(pod)
        except _ClaimMissing as exc:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
        if not claims:
            return None, Status.of(Code.SKIP)
        s.claims = claims
        return None, None

    # -- PostFilter -------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return None, Status.of(Code.ERROR, STATE_NOT_FOUND)
        if not s.claims:
            return None, Status.of(Code.UNSCHEDULABLE, NO_CLAIMS_TO_DEALLOCATE)
        return None, Status.of(Code.UNSCHEDULABLE, "still not schedulable")

    # -- queueing ---------------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A claim's availability may depend on node labels (ResourceSlices' node selectors);
        # with queueing hints on, UpdateNodeTaint is not needed (v1.36's EventsToRegister).
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL))]
