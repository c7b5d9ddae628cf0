"""DynamicResources (``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go``,
v1.36): the scheduler's side of Dynamic Resource Allocation (resource.k8s.io/v1), in the default
profile just before DefaultPreemption, as ``applyFeatureGates`` puts it while the
DynamicResourceAllocation gate is on (GA since v1.34).

* PreEnqueue: every claim a pod references must exist (a claim from a template must have been
  created and recorded in ``status.resourceClaimStatuses``) and not be being deleted.
* PreFilter: the cycle state is written first, for every pod; a pod without claims is then
  skipped. A claim allocated and reserved for other pods that cannot take more consumers, a
  claim whose allocation is in flight for another pod, or a missing DeviceClass makes the pod
  unschedulable at once.
* Filter: an allocated claim must be usable on the node (its allocation's node selector);
  claims to allocate must all fit the free devices the node reaches (``allocator``). Both
  verdicts are UnschedulableAndUnresolvable (``statusUnschedulable``): preemption does not try
  those nodes, as v1.36 does not preempt for DRA resources.
* PostFilter: a pod with no claims is Unschedulable with no reason of its own (v1.37; v1.36 said
  ``no new claims to deallocate``, which kube-scheduler v1.37.2 no longer puts in FailedScheduling
  messages); a pod whose allocated claim is unusable everywhere and reserved for nobody else gets
  it deallocated.
* Reserve / Unreserve: the chosen devices are held in flight so that no other pod takes them
  before PreBind has written the claims; Unreserve gives them back.
* PreBind: each claim gets its allocation and the pod in ``reservedFor`` (status subresource).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, cast

import numpy as np

from kubesched.api.errors import ApiError, Conflict
from kubesched.api.pod import PodInfo
from kubesched.clock import parse_rfc3339, rfc3339
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.leaderelection.config import parse_duration
from kubesched.scheduler.listers import Listers as SchedulerListers
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.plugins.dynamicresources import allocator, nodekeys
from kubesched.scheduler.plugins.dynamicresources.allocator import AllocationError, ClaimPlan, DeviceTable
from kubesched.scheduler.plugins.dynamicresources.extended import (
    CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    is_dra_extended_resource_name,
    requests_and_mappings,
    resolver_for,
)
from kubesched.scheduler.plugins.helper import default_normalize_score
from kubesched.scheduler.plugins.nodeaffinity import match_terms

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
class _State:
    """stateData: the pod's claims, one per ``spec.resourceClaims`` entry (empty without any),
    those to allocate, and the chosen devices once Reserve ran."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)
    plans: list[ClaimPlan] = field(default_factory=list)
    allocated_on: list[Any] = field(default_factory=list)  # per claim: allocation node selector terms or None
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim uid -> status.allocation
    ext: _Extended | None = None  # extended resources backed by DRA (KEP-5004)

    def clone(self) -> _State:
        """A shallow copy (upstream's Clone shares the pointer; preemption's dry runs here copy
        the fields, as ``copy.copy`` did, at a tenth of its cost)."""
        return _State(self.claims, self.plans, self.allocated_on, self.unavailable, self.allocations, self.ext)


@dataclass(slots=True)
class _Extended:
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
        return _uid(self.claim)


class _ClaimMissing(Exception):
    pass


def _extended_names(pod: PodInfo) -> bool:
    """Whether the pod requests any resource of a domain-prefixed name (an extended resource)."""
    return any("/" in r for r in pod.requests)


def _resource_claims(pod: PodInfo) -> list[Any]:
    spec = pod.obj.get("spec") or {}
    claims = spec.get("resourceClaims")
    return claims if isinstance(claims, list) else []


FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer
CONFLICT_RETRIES = 5  # retry.DefaultRetry's steps


BINDING_TIMEOUT = 600.0  # DynamicResourcesBindingTimeoutDefault
BINDING_POLL_SECONDS = 5.0


def _allocation(claim: Mapping[str, Any]) -> Mapping[str, Any]:
    return (claim.get("status") or {}).get("allocation") or {}


def _results(allocation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((allocation.get("devices") or {}).get("results") or [])


def _device_conditions(claim: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Mapping[str, Any]] | None:
    """``getAllocatedDeviceStatus``: the conditions of the result's device in the claim's status."""
    key = (result.get("driver"), result.get("pool"), result.get("device"))
    for d in (claim.get("status") or {}).get("devices") or []:
        if (d.get("driver"), d.get("pool"), d.get("device")) == key:
            return {str(c.get("type")): c for c in d.get("conditions") or [] if isinstance(c, Mapping)}
    return None


def binding_ready(claim: Mapping[str, Any]) -> bool:
    """``isClaimReadyForBinding``: every binding condition of every allocated device True."""
    if not _allocation(claim):
        return False
    for r in _results(_allocation(claim)):
        if not r.get("bindingConditions"):
            continue
        conditions = _device_conditions(claim, r)
        if conditions is None:
            return False
        if not all((conditions.get(c) or {}).get("status") == "True" for c in r["bindingConditions"]):
            return False
    return True


def binding_failure(claim: Mapping[str, Any]) -> str | None:
    """A binding failure condition that is True, as upstream's error names it; None if none is."""
    for r in _results(_allocation(claim)):
        if not r.get("bindingConditions"):
            continue
        conditions = _device_conditions(claim, r) or {}
        for name in r.get("bindingFailureConditions") or []:
            c = conditions.get(name)
            if c is not None and c.get("status") == "True":
                meta = claim.get("metadata") or {}
                return f'claim={meta.get("name")}, reason={c.get("reason", "")}, message="{c.get("message", "")}"'
    return None


def _with_finalizer(client: Any, claim: Mapping[str, Any]) -> dict[str, Any]:
    """``bindClaim``: a claim the scheduler allocates gets the delete-protection finalizer (an
    Update) before its status is written; the resourceclaim controller removes it once the claim
    is deallocated."""
    meta = claim.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER in finalizers:
        return dict(claim)
    return dict(client.update_claim({**claim, "metadata": {**meta, "finalizers": [*finalizers, FINALIZER]}}))


def _delete_claim(client: Any, claim: Mapping[str, Any]) -> None:
    """``deleteClaim``: the finalizer removed first (retried on conflict with the latest
    version), then the delete."""
    meta = claim.get("metadata") or {}
    ns, name = str(meta.get("namespace")), str(meta.get("name"))
    current: Mapping[str, Any] = claim
    for attempt in range(CONFLICT_RETRIES):
        finalizers = list((current.get("metadata") or {}).get("finalizers") or [])
        if FINALIZER not in finalizers:
            break
        finalizers.remove(FINALIZER)
        try:
            client.update_claim({**current, "metadata": {**current["metadata"], "finalizers": finalizers}})
            break
        except Conflict:
            if attempt == CONFLICT_RETRIES - 1:
                raise
            current = client.get("ResourceClaim", ns, name)
    client.delete_claim(ns, name)


def _add_shares(
    out: dict[int, dict[str, Fraction]],
    source: Mapping[tuple[str, str, str], Mapping[str, Fraction]],
    table: DeviceTable,
) -> None:
    """Add what ``source`` consumes of each shared device to ``out``, by device row."""
    for key, amounts in source.items():
        i = table.index.get(key)
        if i is None:
            continue
        mine = out.setdefault(i, {})
        for name, amount in amounts.items():
            mine[name] = mine.get(name, Fraction(0)) + amount


def _special_owner(claim: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The controller reference of an extended-resource claim (annotated), or None (malformed
    metadata included: this runs in the claim informer's handler)."""
    meta = claim.get("metadata") if claim is not None else None
    if not isinstance(meta, Mapping):
        return None
    annotations = meta.get("annotations")
    if not isinstance(annotations, Mapping) or annotations.get(CLAIM_ANNOTATION) != "true":
        return None
    refs = meta.get("ownerReferences")
    for r in refs if isinstance(refs, list) else ():
        if isinstance(r, Mapping) and r.get("controller") and r.get("uid"):
            return r
    return None


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((claim.get("status") or {}).get("reservedFor") or [])


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    PreBindPlugin,
    ScorePlugin,
    EnqueueExtensions,
    SignPlugin,
):
    name = "DynamicResources"
    # a pod without claims or extended resources skips; the empty state PreFilter writes for it
    # is replayed as a shallow copy, and no later point changes it (they all return early)
    pre_filter_memo = Memo(skip_only=True, when=lambda pod: not _resource_claims(pod) and not _extended_names(pod))

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): pods with resource claims are not signable (k/k#134986)."""
        if _resource_claims(pod):
            return [], Status(Code.UNSCHEDULABLE, ("pods with dra resource claims are not signable",))
        return [], None

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """The shape cache: no part in this cycle when PreFilter skipped (no claims, no extended
        resource a DeviceClass provides); otherwise devices and claims decide."""
        if "DynamicResources" in state.skip_filter:
            return [], None
        return [], Status(Code.UNSCHEDULABLE, ("pod uses dynamic resources",))

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.handle = handle
        self._table: DeviceTable | None = None
        self._table_version: tuple[int, int] = (-1, -1)
        # claim uid -> allocation chosen by Reserve, held (the assume cache) until the informer
        # shows the claim allocated; ``_written`` are those PreBind has written
        self.in_flight: dict[str, dict[str, Any]] = {}
        self._written: set[str] = set()
        # devices allocated by the claims the informer shows: key -> how many claims hold it,
        # kept by the claim handler so that no cycle walks every claim
        self._held: dict[tuple[str, str, str], int] = {}
        self._shared: dict[tuple[str, str, str], dict[str, Fraction]] = {}  # consumable capacity in use
        features = getattr(self.handle, "features", None)
        self._fractional = bool(features is not None and features.enabled("DRAFractionalCapacityRange"))
        self._held_version = 0
        # extended-resource claims (annotated) by the uid of the pod controlling them
        self._special: dict[str, Mapping[str, Any]] = {}
        self._mask_cache: tuple[int, int, np.ndarray] | None = None
        self._shared_cache: tuple[int, int, dict[int, dict[str, Fraction]]] | None = None
        listers = self._listers()
        if listers is not None and hasattr(listers, "subscribe"):
            listers.subscribe("ResourceClaim", self._on_claim)
            for c in listers.all("ResourceClaim"):
                self._on_claim(None, c)

    # -- informer views ---------------------------------------------------------------------------
    def _listers(self) -> SchedulerListers | None:
        listers = self.handle.listers if self.handle is not None else None
        return listers if isinstance(listers, SchedulerListers) else None

    def _lookup(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        listers = self._listers()
        return None if listers is None else listers.get("ResourceClaim", namespace, name)

    def _classes(self) -> dict[str, Mapping[str, Any]]:
        listers = self._listers()
        if listers is None:
            return {}
        return {str(c["metadata"]["name"]): c for c in listers.all("DeviceClass")}

    def devices(self) -> DeviceTable:
        """The device table, rebuilt when a ResourceSlice or a DeviceTaintRule changed (the
        slices as the tracker shows them: DeviceTaintRules' taints applied)."""
        listers = self._listers()
        versions = listers.versions if listers is not None else {}
        version = (versions.get("ResourceSlice", -1), versions.get("DeviceTaintRule", -1))
        if self._table is None or version != self._table_version:
            slices = [] if listers is None else listers.all("ResourceSlice")
            rules = [] if listers is None else listers.all("DeviceTaintRule")
            self._table = DeviceTable(allocator.apply_taint_rules(slices, rules))
            self._table_version = version
        return self._table

    def _on_claim(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """The claim informer's handler: the tally of allocated devices follows every change,
        and a written allocation in flight is released once the informer shows it."""
        for claim in (old, new):
            ref = _special_owner(claim)
            if ref is None or claim is None:
                continue
            owner = str(ref["uid"])
            if claim is new:
                self._special[owner] = claim
            elif _uid(self._special.get(owner) or {}) == _uid(claim):
                del self._special[owner]
        for claim, sign in ((old, -1), (new, 1)):
            if claim is None:
                continue
            for key in allocator.allocated_keys([claim]):
                n = self._held.get(key, 0) + sign
                if n > 0:
                    self._held[key] = n
                else:
                    self._held.pop(key, None)
            for key, amounts in allocator.shared_capacity([claim]).items():
                mine = self._shared.setdefault(key, {})
                for name, amount in amounts.items():
                    mine[name] = mine.get(name, Fraction(0)) + sign * amount
                if not any(mine.values()):
                    self._shared.pop(key, None)
        self._held_version += 1
        uid = _uid(new if new is not None else old or {})
        caught_up = (
            new is None  # deleted
            or (new.get("status") or {}).get("allocation")  # our allocation is in
            or (old is not None and (old.get("status") or {}).get("allocation"))  # deallocated since
        )
        if uid in self._written and caught_up:
            self.in_flight.pop(uid, None)
            self._written.discard(uid)

    def _shared_use(self, table: DeviceTable, exclude: set[str]) -> Mapping[int, Mapping[str, Fraction]]:
        """What allocated claims and allocations in flight consume of each shared device
        (consumable capacity), by device row; the allocated claims' part is kept until a claim
        changes (read-only: the same mapping is handed out while nothing is in flight)."""
        if not table.any_multi:
            return {}
        key = (id(table), self._held_version)
        if self._shared_cache is None or self._shared_cache[:2] != key:
            index = table.index  # each device once in the tally: its amounts as they are, uncopied
            base = {index[k]: amounts for k, amounts in self._shared.items() if k in index}
            self._shared_cache = (key[0], key[1], base)
        base = self._shared_cache[2]
        in_flight = [{"status": {"allocation": alloc}} for uid, alloc in self.in_flight.items() if uid not in exclude]
        if not in_flight:
            return base
        out = {i: dict(amounts) for i, amounts in base.items()}
        for c in in_flight:
            _add_shares(out, allocator.shared_capacity([c]), table)
        return out

    def _allocated_mask(self, table: DeviceTable, exclude: set[str]) -> np.ndarray:
        """Devices taken by allocated claims and by allocations in flight
        (``ListAllAllocatedDevices``). ``exclude``: claims about to be allocated (unallocated
        claims hold nothing, so only in-flight entries are concerned)."""
        key = (id(table), self._held_version)
        if self._mask_cache is not None and self._mask_cache[:2] == key:
            mask = self._mask_cache[2].copy()
        else:
            mask = np.zeros(len(table), bool)
            for k in self._held:
                i = table.index.get(k)
                if i is not None:
                    mask[i] = True
            self._mask_cache = (key[0], key[1], mask.copy())
        for uid, alloc in self.in_flight.items():
            if uid in exclude:
                continue
            for k in allocator.allocated_keys([{"status": {"allocation": alloc}}]):
                i = table.index.get(k)
                if i is not None:
                    mask[i] = True
        return mask

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
            meta = claim.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                raise _ClaimMissing(f'resourceclaim "{name}" is being deleted')
            if entry.get("resourceClaimTemplateName") and not any(
                r.get("uid") == pod.uid and r.get("controller") for r in meta.get("ownerReferences") or []
            ):  # resourceclaim.IsForPod
                raise _ClaimMissing(
                    f"ResourceClaim {pod.namespace}/{name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
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
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = _State()
        state.write(STATE_KEY, s)  # written before anything can fail, for PostFilter
        extended = self._extended_requests(pod)
        if not _resource_claims(pod) and not extended:
            return None, Status.of(Code.SKIP)
        try:
            claims = self._pod_claims(pod)
        except _ClaimMissing as exc:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
        if not claims and not extended:
            return None, Status.of(Code.SKIP)
        classes = self._classes()
        for claim in claims:
            status = claim.get("status") or {}
            reserved = _reserved_for(claim)
            mine = any(r.get("uid") == pod.uid for r in reserved)
            if status.get("allocation"):
                if not mine and len(reserved) >= RESERVED_FOR_MAX:  # !CanBeReserved && !IsReservedForPod
                    return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, IN_USE)
                terms = allocator.node_selector_terms((status["allocation"] or {}).get("nodeSelector"), "nodeSelector")
                s.allocated_on.append(terms if (status["allocation"] or {}).get("nodeSelector") else None)
                continue
            s.allocated_on.append(None)
            if _uid(claim) in self.in_flight and _uid(claim) not in self._written:
                meta = claim.get("metadata") or {}
                return None, Status.of(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f"resource claim {meta.get('namespace')}/{meta.get('name')} is in the process of being allocated",
                )
            try:
                plan = allocator.plan_claim(claim, classes)
            except KeyError as missing:
                request = _request_with_class(claim, str(missing.args[0]))
                return None, Status.of(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f"request {request}: device class {missing.args[0]} does not exist",
                )
            s.plans.append(plan)
        s.claims = claims
        if extended:
            s.ext = self._special_claim(pod, extended)
        return None, None

    def _extended_requests(self, pod: PodInfo) -> list[tuple[str, int]]:
        """``preFilterExtendedResources``: the pod's extended resources a DeviceClass provides."""
        if not _extended_names(pod):
            return []
        resolver = resolver_for(self.handle)
        if not resolver:
            return []
        return sorted(
            (r, q)
            for r, q in pod.requests.items()
            if q > 0 and is_dra_extended_resource_name(r) and resolver.class_for(r) is not None
        )

    def _special_claim(self, pod: PodInfo, resources: list[tuple[str, int]]) -> _Extended:
        """The claim left by a prior cycle (``findExtendedResourceClaim``: annotated, controlled by
        the pod), or a new one in memory with no requests yet."""
        c = self._special.get(pod.uid)  # indexed by its controller's uid
        ref = _special_owner(c)
        same_pod = ref is not None and ref.get("name") == pod.name
        if c is not None and same_pod and (c.get("metadata") or {}).get("namespace") == pod.namespace:
            return _Extended(dict(c), resources, prior=True, pod=pod.obj)
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "namespace": pod.namespace,
                "name": SPECIAL_CLAIM_NAME,
                "uid": f"extended-{pod.uid}",  # a temporary uid for the allocation in flight
                "generateName": f"{pod.name}-extended-resources-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
                ],
                "annotations": {CLAIM_ANNOTATION: "true"},
            },
            "spec": {},
        }
        return _Extended(claim, resources, prior=False, pod=pod.obj)

    def _patterns(self, s: _State, nodes: NodeTableView) -> np.ndarray:
        """Per row, which of the pod's extended resources the node leaves to DRA (no allocatable)
        as bits, the node-specific claim of each pattern made once (``filterExtendedResources``)."""
        assert s.ext is not None
        pattern = np.zeros(len(nodes.names), np.int64)
        for i, (r, _q) in enumerate(s.ext.resources):
            col = nodes.res_index.get(r)
            none = np.ones(len(nodes.names), bool) if col is None else nodes.alloc[col] == 0
            pattern |= none.astype(np.int64) << i
        for v in np.unique(pattern).tolist():
            if v in s.ext.variants:
                continue
            if v == 0:
                s.ext.variants[0] = (s.ext.claim, [], None)
                continue
            resolver = resolver_for(self.handle)
            wanted = {r: q for i, (r, q) in enumerate(s.ext.resources) if v >> i & 1}
            assert resolver is not None
            requests, mappings = requests_and_mappings(s.ext.pod, wanted, resolver)
            variant = {**s.ext.claim, "spec": {"devices": {"requests": requests}}}
            s.ext.variants[v] = (variant, mappings, allocator.plan_claim(variant, self._classes()))
        return pattern

    # -- Filter ------------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None or (not s.claims and s.ext is None):
            return None
        n = len(nodes.names)
        code = np.zeros(n, np.int8)
        reason = np.zeros(n, np.int64)
        if s.ext is not None and s.ext.prior and ((s.ext.claim.get("spec") or {}).get("devices") or {}).get("requests"):
            # left with requests by a prior cycle: unschedulable, so that PostFilter deletes it
            return NodeVerdicts(np.full(n, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, np.int8), 3, lambda rid: _REASONS[rid])
        # allocated claims whose devices failed to bind, or did not bind in time: available
        # nowhere, so that PostFilter deallocates them (DRADeviceBindingConditions)
        for i, claim in enumerate(s.claims):
            if not _allocation(claim):
                continue
            if binding_failure(claim) is not None or (not binding_ready(claim) and self._binding_timed_out(claim)):
                code[code == 0] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                reason[reason == 0] = 2
                s.unavailable.add(i)
        # allocated claims: usable only where their allocation's node selector matches
        for terms in s.allocated_on:
            if terms is None:
                continue
            bad = ~match_terms(nodes, terms) & (code == 0)
            code[bad] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # statusUnschedulable
            reason[bad] = 2
            s.unavailable.update(i for i, t in enumerate(s.allocated_on) if t is terms)
        # claims to allocate: the pod's own, and on nodes leaving extended resources to DRA the
        # special claim of that node's pattern
        patterns = self._patterns(s, nodes) if s.ext is not None else np.zeros(n, np.int64)
        for v in np.unique(patterns).tolist() if s.ext is not None else [0]:
            plans = list(s.plans)
            if v:
                plan = s.ext.variants[v][2] if s.ext is not None else None
                if plan is not None:
                    plans.append(plan)
            if not plans:
                continue
            try:
                fits = self._fits(plans, nodes)
            except AllocationError as exc:  # a broken selector: the attempt is an error (statusError)
                return NodeVerdicts.reject_where(np.ones(n, bool), Code.ERROR, str(exc))
            bad = ~fits & (code == 0) & (patterns == v)
            code[bad] = Code.UNSCHEDULABLE_AND_UNRESOLVABLE  # statusUnschedulable
            reason[bad] = 1
        if not code.any():
            return None
        return NodeVerdicts(code, reason, lambda rid: _REASONS[rid])

    def _fits(self, plans: list[ClaimPlan], nodes: NodeTableView) -> np.ndarray:
        """For every row, whether all claims to allocate fit there (counts, then the search)."""
        table = self.devices()
        n = len(nodes.names)
        exclude = {_uid(p.claim) for p in plans}
        taken = self._allocated_mask(table, exclude)
        fits = np.ones(n, bool)
        groups: dict[Any, int] = {}
        all_mode = []
        has_search_only = False
        for plan in plans:
            for alts in plan.requests:
                if len(alts) != 1 or alts[0].admin_access:
                    has_search_only = True
                    continue  # alternatives and admin access: only the search decides
                req = alts[0]
                if req.mode == allocator.ALL:
                    all_mode.append(req.selection)
                else:
                    groups[req.selection] = groups.get(req.selection, 0) + req.count
        rows = table.local_rows(nodes.index)
        local = table.local_idx
        for selection, need in groups.items():
            mask = table.usable(selection)
            free = mask & ~taken
            sel = free[local] & (rows >= 0)
            counts = np.bincount(rows[sel], minlength=n)[:n]
            counts = counts + table.shared_counts(free, nodes)
            fits &= counts >= need
        for selection in all_mode:
            mask = table.usable(selection)
            sel = mask[local] & (rows >= 0)
            total = np.bincount(rows[sel], minlength=n)[:n] + table.shared_counts(mask, nodes)
            free = np.bincount(rows[sel & ~taken[local]], minlength=n)[:n] + table.shared_counts(mask & ~taken, nodes)
            fits &= (total > 0) & (free == total)
        capacities = table.any_multi or any(r.capacity for p in plans for alts in p.requests for r in alts)
        exact = (
            not has_search_only
            and not capacities  # consumable capacity: shares decide, device by device
            and not table.consumers  # partitionable devices: counters decide, device by device
            and len(groups) + len(all_mode) <= 1
            and all(p.simple for p in plans)
        )
        if exact:
            return fits
        # competing requests, constraints, alternatives, shares, counters: the search, once per
        # kind of node (nodekeys) where the layout allows, else once per node
        shared = self._shared_use(table, exclude)
        candidates = np.flatnonzero(fits)
        keys = nodekeys.node_keys(table, taken, shared, nodes) if len(candidates) > 1 else None
        if keys is None:
            searched, inverse = candidates, np.arange(len(candidates))
        else:
            _, first, inverse = np.unique(keys[candidates], axis=0, return_index=True, return_inverse=True)
            searched = candidates[first]
        verdicts = np.array(
            [
                allocator.allocate_node(
                    plans, table, taken, nodes.names[r], nodes.specs[r].labels, shared, self._fractional
                )
                is not None
                for r in searched.tolist()
            ],
            bool,
        )
        fits[candidates] = verdicts[inverse.reshape(-1)]
        return fits

    # -- PostFilter -------------------------------------------------------------------------------
    def pod_group_post_filter(self, group: Any, reschedule: Any) -> tuple[None, Status]:
        """``PodGroupPostFilter``: the claims of the group's pods that could be deallocated to
        make room; kubesched deallocates none yet (its PostFilter does for single pods), and
        answers as upstream does once it is done."""
        return None, Status.of(Code.UNSCHEDULABLE, "deallocation and deletion of ResourceClaims completed")

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return None, Status.of(Code.ERROR, STATE_NOT_FOUND)
        if not s.claims and s.ext is None:
            return None, Status.of(Code.UNSCHEDULABLE)  # v1.37: the fast path adds no reason
        client = self.handle.client if self.handle is not None else None
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            reserved = _reserved_for(claim)
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                status = {
                    k: v for k, v in (claim.get("status") or {}).items() if k not in ("allocation", "reservedFor")
                }
                try:
                    if client is not None:
                        client.update_claim_status(dict(claim), status)
                except ApiError as exc:
                    return None, Status.of(Code.ERROR, exc.message)
                return None, Status.of(Code.UNSCHEDULABLE, "deallocation of ResourceClaim completed")
        if s.ext is not None and s.ext.prior:
            # the special claim of a prior cycle is deleted, for the next attempt to start anew
            try:
                if client is not None:
                    _delete_claim(client, s.ext.claim)
            except ApiError as exc:
                return None, Status.of(Code.ERROR, exc.message)
            return None, Status.of(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
        # nothing to deallocate: v1.37 adds no reason (dynamicresources.go, deallocateOrDeletePodClaims)
        return None, Status.of(Code.UNSCHEDULABLE)

    # -- Score (DRAPrioritizedList, GA) ------------------------------------------------------------
    scores_bounded = True
    rows_only = True

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        """``Score``/``computeScore``: on each node, for every firstAvailable request the
        allocation there would satisfy with its i-th subrequest, 8 − i points
        (FirstAvailableDeviceRequestMaxSize); 0 everywhere when no claim is allocated here."""
        out = np.zeros(len(rows), np.int64)
        s: _State | None = state.get(STATE_KEY)
        if s is None or not s.plans or not any(_first_available(c) for c in s.claims):
            return out
        table = self.devices()
        taken = self._allocated_mask(table, {_uid(p.claim) for p in s.plans})
        shared = self._shared_use(table, {_uid(p.claim) for p in s.plans})
        # claims allocated before this cycle count the same on every node
        fixed = sum(
            _rank_score(c, ((c.get("status") or {}).get("allocation") or {}))
            for c in s.claims
            if (c.get("status") or {}).get("allocation")
        )
        for i, row in enumerate(rows.tolist()):
            name = nodes.names[row]
            try:
                chosen = allocator.allocate_node(
                    s.plans, table, taken, name, self._node_labels(name), shared, self._fractional
                )
            except AllocationError:
                continue  # Filter reported it
            if chosen is None:
                continue
            out[i] = fixed + sum(
                _rank_score(plan.claim, allocator.allocation_result(plan, devices, table, name, self._fractional))
                for plan, devices in zip(s.plans, chosen, strict=True)
            )
        return out

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray | None:
        return default_normalize_score(scores, False)

    # -- Reserve / Unreserve ------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return None
        plans = list(s.plans)
        if s.ext is not None and not s.ext.prior:
            nodes = self.handle.snapshot.table if self.handle is not None else None
            if nodes is not None and node_name in nodes.index:
                row = nodes.index[node_name]
                s.ext.chosen = int(self._patterns(s, cast(NodeTable, nodes).take([row]))[0])
            if s.ext.chosen:  # the node leaves extended resources to DRA: its claim is allocated too
                plan = s.ext.variants[s.ext.chosen][2]
                if plan is not None:
                    plans.append(plan)
        if not plans:
            return None
        table = self.devices()
        taken = self._allocated_mask(table, {_uid(p.claim) for p in plans})
        shared = self._shared_use(table, {_uid(p.claim) for p in plans})
        labels = self._node_labels(node_name)
        try:
            chosen = allocator.allocate_node(plans, table, taken, node_name, labels, shared, self._fractional)
        except AllocationError as exc:
            return Status.of(Code.ERROR, str(exc))
        if chosen is None:
            return Status.of(Code.ERROR, "claim allocation not found for node")
        for plan, devices in zip(plans, chosen, strict=True):
            alloc = allocator.allocation_result(plan, devices, table, node_name, self._fractional)
            s.allocations[_uid(plan.claim)] = alloc
            self.in_flight[_uid(plan.claim)] = alloc  # SignalClaimPendingAllocation
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return
        for uid in list(s.allocations):
            self.in_flight.pop(uid, None)  # RemoveClaimPendingAllocation
            self._written.discard(uid)
        if s.ext is not None and s.ext.created is not None:  # written already: deleted, not orphaned
            client = self.handle.client if self.handle is not None else None
            try:
                if client is not None:
                    _delete_claim(client, s.ext.created)
            except ApiError:
                pass  # a later attempt's PostFilter finds and deletes it
            s.ext.created = None

    def _node_labels(self, node_name: str) -> Mapping[str, str]:
        nodes = self.handle.snapshot.table if self.handle is not None else None
        row = nodes.index.get(node_name) if nodes is not None else None
        return nodes.specs[row].labels if nodes is not None and row is not None else {}

    # -- PreBind ------------------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Skip for a pod without claims."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or (not s.claims and s.ext is None):
            return Status(Code.SKIP)
        return None

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """``bindClaim``: each claim gets its allocation (if the scheduler made it) and the pod in
        ``reservedFor``, through the status subresource."""
        s: _State | None = state.get(STATE_KEY)
        if s is None or (not s.claims and s.ext is None):
            return None
        client = self.handle.client if self.handle is not None else None
        if client is None:
            return None
        consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
        if s.ext is not None and s.ext.chosen:
            st = self._bind_extended(s, pod, client, consumer)
            if st is not None:
                return st
        for claim in s.claims:
            if any(r.get("uid") == pod.uid for r in _reserved_for(claim)):
                continue
            uid = _uid(claim)
            meta = claim.get("metadata") or {}
            allocation = s.allocations.get(uid)
            try:
                if allocation is not None:
                    claim = _with_finalizer(client, claim)
                status = dict(claim.get("status") or {})
                if allocation is not None:
                    status["allocation"] = allocation
                if status.get("allocation") and not status["allocation"].get("allocationTimestamp"):
                    # when the binding conditions' timeout started (DRADeviceBindingConditions)
                    status["allocation"] = {**status["allocation"], "allocationTimestamp": self._now()}
                status["reservedFor"] = [*_reserved_for(claim), consumer]
                client.update_claim_status(dict(claim), status)
            except ApiError as exc:  # Unreserve gives the devices back
                return Status.of(
                    Code.ERROR, f"add reservation to claim {meta.get('namespace')}/{meta.get('name')}: {exc.message}"
                )
            if allocation is not None:
                self._written.add(uid)
                seen = self._lookup(str(meta.get("namespace")), str(meta.get("name")))
                if seen is not None and (seen.get("status") or {}).get("allocation"):
                    self.in_flight.pop(uid, None)  # the informer was faster than this thread
                    self._written.discard(uid)
        return self._wait_for_binding_conditions(s, pod, node_name, client)

    def _wait_for_binding_conditions(self, s: _State, pod: PodInfo, node_name: str, client: Any) -> Status | None:
        """DRADeviceBindingConditions (beta, on since v1.36): when an allocated device has
        binding conditions, PreBind waits (``bindingTimeout``, 10 minutes by default) until the
        claim's device status has them all True, and fails at once when a failure condition is
        True; the next attempt's Filter then leaves the claim for PostFilter to deallocate."""
        waiting = [
            c
            for c in s.claims
            if any(r.get("bindingConditions") for r in _results(s.allocations.get(_uid(c)) or _allocation(c)))
        ]
        if not waiting:
            return None
        client.record_event(
            "Normal",
            "BindingConditionsPending",
            "Scheduling",
            pod.obj,
            f"waiting for binding conditions for device on node {node_name}",
        )
        deadline = time.monotonic() + self._binding_timeout()
        while True:
            try:
                current = [
                    client.get("ResourceClaim", str(c["metadata"].get("namespace")), str(c["metadata"]["name"]))
                    for c in waiting
                ]
            except ApiError as exc:
                return Status.error(exc.message)
            failed = next((f for c in current if (f := binding_failure(c)) is not None), None)
            if failed is not None:
                return Status.error(f"device binding failed: {failed}")
            if all(binding_ready(c) for c in current):
                return None
            if time.monotonic() >= deadline or not client.settle(BINDING_POLL_SECONDS):
                return Status.error("device binding timeout: context deadline exceeded")

    def _binding_timed_out(self, claim: Mapping[str, Any]) -> bool:
        """``isClaimTimeout``: a device with binding conditions, allocated longer ago than the
        binding timeout."""
        alloc = _allocation(claim)
        stamp = alloc.get("allocationTimestamp")
        if not stamp or not any(r.get("bindingConditions") for r in _results(alloc)):
            return False
        clock = getattr(self.handle, "clock", None)
        now = clock.now() if clock is not None else time.time()
        try:
            return parse_rfc3339(str(stamp)) + self._binding_timeout() < now
        except ValueError:
            return False

    def _binding_timeout(self) -> float:
        raw = (self.args or {}).get("bindingTimeout") if isinstance(self.args, Mapping) else None
        if raw is None:
            return BINDING_TIMEOUT
        try:
            return parse_duration(raw, "bindingTimeout")
        except InputError:
            return BINDING_TIMEOUT

    def _now(self) -> str:
        clock = getattr(self.handle, "clock", None)
        return rfc3339(clock.now() if clock is not None else time.time())

    def _bind_extended(self, s: _State, pod: PodInfo, client: Any, consumer: dict[str, Any]) -> Status | None:
        """``bindClaim`` of the special claim: created now (its name generated), given its
        allocation and the pod in ``reservedFor``, and named with the request mappings in the
        pod's ``status.extendedResourceClaimStatus``."""
        assert s.ext is not None
        variant, mappings, _plan = s.ext.variants[s.ext.chosen]
        temp = s.ext.uid
        allocation = s.allocations.get(temp)
        meta = variant["metadata"]
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "namespace": meta["namespace"],
                "generateName": meta["generateName"],
                "ownerReferences": meta["ownerReferences"],
                "annotations": meta["annotations"],
            },
            "spec": variant["spec"],
        }
        try:
            created = client.create_claim(body)
            s.ext.created = created
            if allocation is not None:
                created = s.ext.created = _with_finalizer(client, created)
            status = {"allocation": allocation, "reservedFor": [consumer]}
            client.update_claim_status(created, status)
        except ApiError as exc:
            return Status.of(Code.ERROR, f"create claim for extended resources {meta['namespace']}/: {exc.message}")
        uid = _uid(created)
        if allocation is not None:  # the allocation in flight now belongs to the real claim
            self.in_flight.pop(temp, None)
            s.allocations.pop(temp, None)
            s.allocations[uid] = allocation
            self.in_flight[uid] = allocation
            self._written.add(uid)
            seen = self._lookup(str(meta["namespace"]), str(created["metadata"]["name"]))
            if seen is not None and (seen.get("status") or {}).get("allocation"):
                self.in_flight.pop(uid, None)
                self._written.discard(uid)
        if not mappings:
            return Status.of(
                Code.ERROR,
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus",
            )
        try:
            client.patch_pod_status_fields(
                pod.namespace,
                pod.name,
                {
                    "extendedResourceClaimStatus": {
                        "requestMappings": mappings,
                        "resourceClaimName": created["metadata"]["name"],
                    }
                },
            )
        except ApiError as exc:
            return Status.of(
                Code.ERROR, f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {exc.message}"
            )
        return None

    # -- queueing ---------------------------------------------------------------------------------
    def _claim_refs(self, pod: PodInfo) -> set[str]:
        """The names of the claims the pod references, as far as they are known (kept on the
        PodInfo: a new version of the pod is a new PodInfo)."""
        cached = pod.extra.get(STATE_KEY)
        if cached is not None and cached[0] is pod.obj:  # ``extra`` is shared by evolve()d versions
            return cached[1]
        names: set[str] = set()
        statuses = {
            s.get("name"): s.get("resourceClaimName")
            for s in (pod.obj.get("status") or {}).get("resourceClaimStatuses") or []
            if isinstance(s, Mapping)
        }
        for entry in _resource_claims(pod):
            if isinstance(entry, Mapping):
                name = entry.get("resourceClaimName") or statuses.get(entry.get("name"))
                if name:
                    names.add(str(name))
        pod.extra[STATE_KEY] = (pod.obj, names)
        return names

    def _after_claim_change(self, pod: PodInfo, old: Any, new: Any) -> bool:
        """``isSchedulableAfterClaimChange``: a claim of the pod's created or with a new status,
        or any claim deallocated (devices freed), once every claim of the pod exists."""
        if not isinstance(new, Mapping):
            return True
        meta = new.get("metadata") or {}
        deallocated = (
            isinstance(old, Mapping)
            and bool((old.get("status") or {}).get("allocation"))
            and not (new.get("status") or {}).get("allocation")
        )
        uses = meta.get("namespace") == pod.namespace and meta.get("name") in self._claim_refs(pod)
        if not deallocated and not uses:
            return False  # QueueSkip: an unrelated claim
        try:
            self._pod_claims(pod)
        except _ClaimMissing:
            return False
        if deallocated or old is None:
            return True
        return (old.get("status") or {}) != (new.get("status") or {})

    def _after_pod_change(self, pod: PodInfo, _old: Any, new: Any) -> bool:
        """``isSchedulableAfterPodChange``: the pod's own update gave it its generated claims."""
        if not isinstance(new, PodInfo) or new.uid != pod.uid:
            return False
        try:
            self._pod_claims(new)
        except _ClaimMissing:
            return False
        return True

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # A claim's availability may depend on node labels (ResourceSlices' node selectors);
        # with queueing hints on, UpdateNodeTaint is not needed (v1.36's EventsToRegister).
        # Claims, classes and slices: any add or update may make the pod schedulable.
        return [
            # (allocatable too: a node's extended resources decide what is left to DRA)
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE)
            ),
            ClusterEventWithHint(
                ClusterEvent(RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE), self._after_claim_change
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), self._after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent(DEVICE_CLASS, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(RESOURCE_SLICE, ActionType.ADD | ActionType.UPDATE)),
        ]


def _request_with_class(claim: Mapping[str, Any], class_name: str) -> str:
    for r in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if (r.get("exactly") or {}).get("deviceClassName") == class_name:
            return str(r.get("name"))
        for sub in r.get("firstAvailable") or []:
            if sub.get("deviceClassName") == class_name:
                return f"{r.get('name')}/{sub.get('name')}"
    return "?"


FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


def _first_available(claim: Mapping[str, Any]) -> bool:
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ()
    return any(isinstance(r, Mapping) and r.get("firstAvailable") for r in requests)


def _rank_score(claim: Mapping[str, Any], allocation: Mapping[str, Any]) -> int:
    """A claim's part of the score: 8 − i for each firstAvailable request its allocation
    satisfies with the i-th subrequest."""
    chosen = {
        str(r.get("request"))
        for r in (allocation.get("devices") or {}).get("results") or ()
        if "/" in str(r.get("request"))
    }
    score = 0
    for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        for i, sub in enumerate(req.get("firstAvailable") or ()):
            if f"{req.get('name')}/{sub.get('name')}" in chosen:
                score += FIRST_AVAILABLE_MAX - i
    return score
