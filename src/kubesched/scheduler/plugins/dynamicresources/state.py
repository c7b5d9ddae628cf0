"""DynamicResources' cycle state (``stateData`` in ``dynamicresources.go``) and the names and
messages the plugin's verdicts use."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesched.scheduler.plugins.dynamicresources.allocator import ClaimPlan
from kubesched.scheduler.plugins.dynamicresources.claims import uid_of

RESOURCE_CLAIM = "ResourceClaim"
DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"

STATE_KEY = "DynamicResources"
# framework.ErrNotFound: what CycleState.Read returns for a key never written
STATE_NOT_FOUND = "not found"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
# resourceclaim.ErrClaimNotFound / ErrAPIUnsupported (k8s.io/dynamic-resource-allocation/resourceclaim)
CLAIM_NOT_CREATED = "ResourceClaim not created yet"
API_UNSUPPORTED = "none of the supported fields are set"
# resourceclaim.ResourceClaimReservedForMaxSize
RESERVED_FOR_MAX = 256
# extendeddynamicresources.go: a special claim left from a prior cycle with requests in it
CANNOT_SCHEDULE_EXTENDED = "cannot schedule extended resource claim"
# the reasons of Filter verdicts (reason ids)
_REASONS = {1: (CANNOT_ALLOCATE,), 2: (NOT_AVAILABLE,), 3: (CANNOT_SCHEDULE_EXTENDED,)}


@dataclass(slots=True)
class DraState:
    """stateData: the pod's claims, one per ``spec.resourceClaims`` entry (empty without any),
    those to allocate, and the chosen devices once Reserve ran."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)
    plans: list[ClaimPlan] = field(default_factory=list)
    allocated_on: list[Any] = field(default_factory=list)  # per claim: allocation node selector terms or None
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim uid -> status.allocation
    ext: ExtendedClaim | None = None  # extended resources backed by DRA (KEP-5004)

    def clone(self) -> DraState:
        """A shallow copy (upstream's Clone shares the pointer; preemption's dry runs here copy
        the fields, as ``copy.copy`` did, at a tenth of its cost)."""
        return DraState(self.claims, self.plans, self.allocated_on, self.unavailable, self.allocations, self.ext)


@dataclass(slots=True)
class ExtendedClaim:
    """The pod's special claim for its extended resources backed by DRA: from a prior cycle
    (``prior``: it has a real name) or in memory (``<extended-resources>``), and per pattern of
    resources left to DRA by the nodes (bit i: the i-th resource has no node allocatable) the
    node-specific claim, its request mappings and its allocation plan."""

    claim: dict[str, Any]
    resources: list[tuple[str, int]]
    prior: bool
    pod: Mapping[str, Any] = field(default_factory=dict)
    variants: dict[int, tuple[dict[str, Any], list[dict[str, str]], ClaimPlan | None]] = field(default_factory=dict)
    chosen: int = 0  # the variant of the node Reserve was called for
    created: dict[str, Any] | None = None  # the claim PreBind wrote

    @property
    def uid(self) -> str:
        return uid_of(self.claim)
