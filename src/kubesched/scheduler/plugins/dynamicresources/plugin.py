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

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, cast

import numpy as np

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PostFilterPlugin,
    PostFilterResult,
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
from kubesched.scheduler.listers import Listers as SchedulerListers
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.plugins.dynamicresources import allocator
from kubesched.scheduler.plugins.dynamicresources.allocator import ClaimPlan
from kubesched.scheduler.plugins.dynamicresources.binding import ClaimBinding
from kubesched.scheduler.plugins.dynamicresources.claims import (
    ClaimMissing,
    add_shares,
    allocation_of,
    binding_failure,
    binding_ready,
    delete_claim,
    extended_names,
    first_available,
    rank_score,
    request_with_class,
    reserved_for,
    resource_claims,
    special_owner,
    uid_of,
)
from kubesched.scheduler.plugins.dynamicresources.devices import (
    AllocationError,
    DeviceTable,
    apply_taint_rules,
    node_selector_terms,
)
from kubesched.scheduler.plugins.dynamicresources.extended import (
    CLAIM_ANNOTATION,
    SPECIAL_CLAIM_NAME,
    is_dra_extended_resource_name,
    resolver_for,
)
from kubesched.scheduler.plugins.dynamicresources.fit import claims_fit, extended_patterns
from kubesched.scheduler.plugins.dynamicresources.queueing import ClaimQueueing
from kubesched.scheduler.plugins.dynamicresources.state import (
    _REASONS,
    API_UNSUPPORTED,
    CLAIM_NOT_CREATED,
    IN_USE,
    RESERVED_FOR_MAX,
    STATE_KEY,
    STATE_NOT_FOUND,
    DraState,
    ExtendedClaim,
)
from kubesched.scheduler.plugins.helper import default_normalize_score
from kubesched.scheduler.plugins.nodeaffinity import match_terms


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    ReservePlugin,
    ClaimBinding,
    ScorePlugin,
    ClaimQueueing,
    SignPlugin,
):
    name = "DynamicResources"
    # a pod without claims or extended resources skips; the empty state PreFilter writes for it
    # is replayed as a shallow copy, and no later point changes it (they all return early)
    pre_filter_memo = Memo(skip_only=True, when=lambda pod: not resource_claims(pod) and not extended_names(pod))

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): pods with resource claims are not signable (k/k#134986)."""
        if resource_claims(pod):
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
            self._table = DeviceTable(apply_taint_rules(slices, rules))
            self._table_version = version
        return self._table

    def _on_claim(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """The claim informer's handler: the tally of allocated devices follows every change,
        and a written allocation in flight is released once the informer shows it."""
        for claim in (old, new):
            ref = special_owner(claim)
            if ref is None or claim is None:
                continue
            owner = str(ref["uid"])
            if claim is new:
                self._special[owner] = claim
            elif uid_of(self._special.get(owner) or {}) == uid_of(claim):
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
        uid = uid_of(new if new is not None else old or {})
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
            add_shares(out, allocator.shared_capacity([c]), table)
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
            raise ClaimMissing(f'pod "{pod.namespace}/{pod.name}": {CLAIM_NOT_CREATED}')
        raise ClaimMissing(
            f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{entry.get("name")}": {API_UNSUPPORTED}'
        )

    def _pod_claims(self, pod: PodInfo) -> list[Mapping[str, Any]]:
        """``foreachPodResourceClaim``: every claim of the pod, or ClaimMissing saying which is not there."""
        out = []
        for entry in resource_claims(pod):
            if not isinstance(entry, Mapping):
                continue
            name = self._claim_name(pod, entry)
            if name is None:
                continue
            claim = self._lookup(pod.namespace, name)
            if claim is None:
                raise ClaimMissing(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            meta = claim.get("metadata") or {}
            if meta.get("deletionTimestamp"):
                raise ClaimMissing(f'resourceclaim "{name}" is being deleted')
            if entry.get("resourceClaimTemplateName") and not any(
                r.get("uid") == pod.uid and r.get("controller") for r in meta.get("ownerReferences") or []
            ):  # resourceclaim.IsForPod
                raise ClaimMissing(
                    f"ResourceClaim {pod.namespace}/{name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            out.append(claim)
        return out

    # -- PreEnqueue -------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not resource_claims(pod):
            return None
        try:
            self._pod_claims(pod)
        except ClaimMissing as exc:
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))  # statusUnschedulable
        return None

    # -- PreFilter --------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = DraState()
        state.write(STATE_KEY, s)  # written before anything can fail, for PostFilter
        extended = self._extended_requests(pod)
        if not resource_claims(pod) and not extended:
            return None, Status.of(Code.SKIP)
        try:
            claims = self._pod_claims(pod)
        except ClaimMissing as exc:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(exc))
        if not claims and not extended:
            return None, Status.of(Code.SKIP)
        classes = self._classes()
        for claim in claims:
            status = claim.get("status") or {}
            reserved = reserved_for(claim)
            mine = any(r.get("uid") == pod.uid for r in reserved)
            if status.get("allocation"):
                if not mine and len(reserved) >= RESERVED_FOR_MAX:  # !CanBeReserved && !IsReservedForPod
                    return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, IN_USE)
                terms = node_selector_terms((status["allocation"] or {}).get("nodeSelector"), "nodeSelector")
                s.allocated_on.append(terms if (status["allocation"] or {}).get("nodeSelector") else None)
                continue
            s.allocated_on.append(None)
            if uid_of(claim) in self.in_flight and uid_of(claim) not in self._written:
                meta = claim.get("metadata") or {}
                return None, Status.of(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    f"resource claim {meta.get('namespace')}/{meta.get('name')} is in the process of being allocated",
                )
            try:
                plan = allocator.plan_claim(claim, classes)
            except KeyError as missing:
                request = request_with_class(claim, str(missing.args[0]))
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
        if not extended_names(pod):
            return []
        resolver = resolver_for(self.handle)
        if not resolver:
            return []
        return sorted(
            (r, q)
            for r, q in pod.requests.items()
            if q > 0 and is_dra_extended_resource_name(r) and resolver.class_for(r) is not None
        )

    def _special_claim(self, pod: PodInfo, resources: list[tuple[str, int]]) -> ExtendedClaim:
        """The claim left by a prior cycle (``findExtendedResourceClaim``: annotated, controlled by
        the pod), or a new one in memory with no requests yet."""
        c = self._special.get(pod.uid)  # indexed by its controller's uid
        ref = special_owner(c)
        same_pod = ref is not None and ref.get("name") == pod.name
        if c is not None and same_pod and (c.get("metadata") or {}).get("namespace") == pod.namespace:
            return ExtendedClaim(dict(c), resources, prior=True, pod=pod.obj)
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
        return ExtendedClaim(claim, resources, prior=False, pod=pod.obj)

    # -- Filter ------------------------------------------------------------------------------------
    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s: DraState | None = state.get(STATE_KEY)
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
            if not allocation_of(claim):
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
        patterns = (
            extended_patterns(s.ext, nodes, self.handle, self._classes) if s.ext is not None else np.zeros(n, np.int64)
        )
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
        """For every row, whether all claims to allocate fit there (``fit.claims_fit``)."""
        table = self.devices()
        exclude = {uid_of(p.claim) for p in plans}
        taken = self._allocated_mask(table, exclude)
        return claims_fit(plans, nodes, table, taken, lambda: self._shared_use(table, exclude), self._fractional)

    # -- PostFilter -------------------------------------------------------------------------------
    def pod_group_post_filter(self, group: Any, reschedule: Any) -> tuple[None, Status]:
        """``PodGroupPostFilter``: the claims of the group's pods that could be deallocated to
        make room; kubesched deallocates none yet (its PostFilter does for single pods), and
        answers as upstream does once it is done."""
        return None, Status.of(Code.UNSCHEDULABLE, "deallocation and deletion of ResourceClaims completed")

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return None, Status.of(Code.ERROR, STATE_NOT_FOUND)
        if not s.claims and s.ext is None:
            return None, Status.of(Code.UNSCHEDULABLE)  # v1.37: the fast path adds no reason
        client = self.handle.client if self.handle is not None else None
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            reserved = reserved_for(claim)
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
                    delete_claim(client, s.ext.claim)
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
        s: DraState | None = state.get(STATE_KEY)
        if s is None or not s.plans or not any(first_available(c) for c in s.claims):
            return out
        table = self.devices()
        taken = self._allocated_mask(table, {uid_of(p.claim) for p in s.plans})
        shared = self._shared_use(table, {uid_of(p.claim) for p in s.plans})
        # claims allocated before this cycle count the same on every node
        fixed = sum(
            rank_score(c, ((c.get("status") or {}).get("allocation") or {}))
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
                rank_score(plan.claim, allocator.allocation_result(plan, devices, table, name, self._fractional))
                for plan, devices in zip(s.plans, chosen, strict=True)
            )
        return out

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray | None:
        return default_normalize_score(scores, False)

    # -- Reserve / Unreserve ------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return None
        plans = list(s.plans)
        if s.ext is not None and not s.ext.prior:
            nodes = self.handle.snapshot.table if self.handle is not None else None
            if nodes is not None and node_name in nodes.index:
                row = nodes.index[node_name]
                one = cast(NodeTable, nodes).take([row])
                s.ext.chosen = int(extended_patterns(s.ext, one, self.handle, self._classes)[0])
            if s.ext.chosen:  # the node leaves extended resources to DRA: its claim is allocated too
                plan = s.ext.variants[s.ext.chosen][2]
                if plan is not None:
                    plans.append(plan)
        if not plans:
            return None
        table = self.devices()
        taken = self._allocated_mask(table, {uid_of(p.claim) for p in plans})
        shared = self._shared_use(table, {uid_of(p.claim) for p in plans})
        labels = self._node_labels(node_name)
        try:
            chosen = allocator.allocate_node(plans, table, taken, node_name, labels, shared, self._fractional)
        except AllocationError as exc:
            return Status.of(Code.ERROR, str(exc))
        if chosen is None:
            return Status.of(Code.ERROR, "claim allocation not found for node")
        for plan, devices in zip(plans, chosen, strict=True):
            alloc = allocator.allocation_result(plan, devices, table, node_name, self._fractional)
            s.allocations[uid_of(plan.claim)] = alloc
            self.in_flight[uid_of(plan.claim)] = alloc  # SignalClaimPendingAllocation
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s: DraState | None = state.get(STATE_KEY)
        if s is None:
            return
        for uid in list(s.allocations):
            self.in_flight.pop(uid, None)  # RemoveClaimPendingAllocation
            self._written.discard(uid)
        if s.ext is not None and s.ext.created is not None:  # written already: deleted, not orphaned
            client = self.handle.client if self.handle is not None else None
            try:
                if client is not None:
                    delete_claim(client, s.ext.created)
            except ApiError:
                pass  # a later attempt's PostFilter finds and deletes it
            s.ext.created = None

    def _node_labels(self, node_name: str) -> Mapping[str, str]:
        nodes = self.handle.snapshot.table if self.handle is not None else None
        row = nodes.index.get(node_name) if nodes is not None else None
        return nodes.specs[row].labels if nodes is not None and row is not None else {}
