"""The volume binder (``volumebinding/binder.go``): a pod's claims sorted into bound, unbound
WaitForFirstConsumer and unbound Immediate ones; for every node at once, whether its bound
volumes' node affinity admits it, which free volume each waiting claim would take there and
whether the others can be provisioned there; the choice assumed at Reserve and written at
PreBind, then waited for.

``find`` is FindPodVolumes over the node table in one pass per claim and candidate volume: a
volume's node affinity is a mask over the rows (kept while the volume and the nodes stay the
same), each claim takes on each row the smallest free volume whose mask admits it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.errors import NotFound
from kubesched.api.quantity import value as quantity_value
from kubesched.api.selectors import Requirement, parse_label_selector
from kubesched.api.volumes import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    bind_volume_to_claim,
    claim_class,
    ephemeral_claim_error,
    is_bound_to,
    is_delay_binding,
    is_fully_bound,
    matching_volume_order,
    name_of,
    namespace_of,
    node_affinity_allows,
    node_affinity_mask,
    pod_claim_names,
    requested_storage,
    volume_fits_claim,
)
from kubesched.client.interface import ClusterClient
from kubesched.errors import InputError
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.plugins.volumebinding.assume_cache import AssumeCache, PVAssumeCache

# ConflictReasons, in the order FindPodVolumes appends them
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NODE_CONFLICT, BIND_CONFLICT, NOT_ENOUGH_SPACE, PV_NOT_EXIST = 1, 2, 4, 8
REASONS = (
    (NODE_CONFLICT, ERR_REASON_NODE_CONFLICT),
    (BIND_CONFLICT, ERR_REASON_BIND_CONFLICT),
    (NOT_ENOUGH_SPACE, ERR_REASON_NOT_ENOUGH_SPACE),
    (PV_NOT_EXIST, ERR_REASON_PV_NOT_EXIST),
)


class BindingError(RuntimeError):
    """A failure FindPodVolumes or BindPodVolumes returns as an error (an Error status)."""


@dataclass(slots=True)
class PodVolumeClaims:
    """``PodVolumeClaims``: the pod's claims by state, and the free volumes of the waiting ones'
    classes (smallest first)."""

    bound: list[dict[str, Any]] = field(default_factory=list)
    delay: list[dict[str, Any]] = field(default_factory=list)
    immediate: list[dict[str, Any]] = field(default_factory=list)
    volumes_by_class: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass(slots=True)
class Found:
    """FindPodVolumes for every row: the reason bits, and for each waiting claim the volume it
    takes on each row (its index in ``candidates[claim]``, -1: provisioned there)."""

    reasons: np.ndarray  # uint8 per row
    error: str | None  # a row-independent error (an Error status)
    error_rows: np.ndarray | None  # where that error happens
    matching: list[tuple[dict[str, Any], list[dict[str, Any]], np.ndarray]]  # (claim, candidates, choice)
    provision_first: list[dict[str, Any]]  # claims with a selected node, provisioned first


@dataclass(slots=True)
class PodVolumes:
    """``PodVolumes`` on the chosen node."""

    static_bindings: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)  # (pvc, pv)
    dynamic_provisions: list[dict[str, Any]] = field(default_factory=list)


class VolumeBinder:
    """``volumeBinder`` over the scheduler's listers."""

    def __init__(self, listers: Listers, node_labels: Callable[[str], Mapping[str, str]]) -> None:
        self.listers = listers
        self.node_labels = node_labels
        self.pv_cache = PVAssumeCache(listers)
        self.pvc_cache = AssumeCache(listers, "PersistentVolumeClaim", True)
        # a volume's node-affinity mask: (volume name) → (resourceVersion, table id, epoch, mask)
        self._masks: dict[str, tuple[str, int, int, np.ndarray]] = {}

    # -- claims --------------------------------------------------------------------------------------
    def classes(self) -> dict[str, dict[str, Any]]:
        return {name_of(c): c for c in self.listers.all("StorageClass")}

    def pod_volume_claims(self, pod: Mapping[str, Any]) -> PodVolumeClaims:
        """``GetPodVolumeClaims``: a claim is bound when fully bound; an unbound one waits for the
        first consumer when its class says so and it names no volume yet, else it is Immediate."""
        out = PodVolumeClaims()
        classes = self.classes()
        for name, ephemeral in pod_claim_names(pod):
            pvc = self.pvc_cache.get(namespace_of(pod), name)
            if pvc is None:
                raise BindingError(f'error getting PVC "{namespace_of(pod)}/{name}": not found')
            if ephemeral and (err := ephemeral_claim_error(pod, pvc)):
                raise BindingError(err)
            if is_fully_bound(pvc):
                out.bound.append(pvc)
            elif is_delay_binding(pvc, classes) and not (pvc.get("spec") or {}).get("volumeName"):
                out.delay.append(pvc)
            else:
                out.immediate.append(pvc)
        for pvc in out.delay:
            cls = claim_class(pvc)
            if cls not in out.volumes_by_class:
                out.volumes_by_class[cls] = matching_volume_order(self.pv_cache.list_pvs(cls))
        return out

    def all_bound(self, pod: Mapping[str, Any]) -> bool:
        """``arePodVolumesBound``."""
        for name, _ in pod_claim_names(pod):
            pvc = self.pvc_cache.get(namespace_of(pod), name)
            if pvc is None or not is_fully_bound(pvc):
                return False
        return True

    # -- FindPodVolumes ----------------------------------------------------------------------------
    def affinity_mask(self, pv: Mapping[str, Any], nodes: NodeTableView) -> np.ndarray:
        meta = pv.get("metadata") or {}
        name, rv = str(meta.get("name") or ""), str(meta.get("resourceVersion") or "")
        epoch = int(getattr(nodes, "epoch", -1))
        cached = self._masks.get(name)
        if cached is not None and cached[:3] == (rv, id(nodes), epoch) and epoch >= 0:
            return cached[3]
        try:
            mask = node_affinity_mask(pv, nodes.match_requirement, nodes.n)
        except InputError:
            mask = np.zeros(nodes.n, bool)  # an invalid affinity admits no node
        if epoch >= 0:
            self._masks[name] = (rv, id(nodes), epoch, mask)
        return mask

    def find(self, pod: Mapping[str, Any], claims: PodVolumeClaims, nodes: NodeTableView) -> Found:
        n = nodes.n
        reasons = np.zeros(n, np.uint8)
        # checkBoundClaims: the first claim (in order) whose volume is missing or whose affinity
        # rejects the row decides it
        decided = np.zeros(n, bool)
        for pvc in claims.bound:
            pv = self.pv_cache.get("", str((pvc.get("spec") or {}).get("volumeName") or ""))
            if pv is None:
                reasons[~decided] |= PV_NOT_EXIST
                break
            conflict = ~decided & ~self.affinity_mask(pv, nodes)
            reasons[conflict] |= NODE_CONFLICT
            decided |= conflict
        found = Found(reasons, None, None, [], [])
        if not claims.delay:
            return found
        # the fast path: a claim provisioned for another node (its selected-node annotation)
        open_rows = np.ones(n, bool)
        to_match = []
        for pvc in claims.delay:
            selected = ((pvc.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(pvc)
                continue
            row = nodes.index.get(str(selected))
            keep = np.zeros(n, bool)
            if row is not None:
                keep[row] = True
            open_rows &= keep
            found.provision_first.append(pvc)
        reasons[~open_rows] |= BIND_CONFLICT
        # findMatchingVolumes: smallest claims first, each takes the smallest free volume whose
        # affinity admits the row; one volume serves one claim of the pod
        to_match.sort(key=requested_storage)
        taken: dict[str, np.ndarray] = {}
        for pvc in to_match:
            candidates, choice = self._match(pvc, claims.volumes_by_class.get(claim_class(pvc), []), nodes, taken)
            found.matching.append((pvc, candidates, choice))
        # checkVolumeProvisions: on each row, the selected-node claims and those left without a
        # volume, in that order; the first that cannot be provisioned there decides the row
        provisioning = [(pvc, np.ones(n, bool)) for pvc in found.provision_first]
        provisioning += [(pvc, choice < 0) for pvc, _, choice in found.matching]
        undecided = open_rows.copy()
        for pvc, needs in provisioning:
            rows = undecided & needs
            if not rows.any():
                continue
            ok, space, error = self._provisionable(pvc, nodes)
            if error is not None:
                found.error, found.error_rows = error, rows
                reasons[rows] = 0
                return found
            reasons[rows & ~ok] |= BIND_CONFLICT
            reasons[rows & ok & ~space] |= NOT_ENOUGH_SPACE
            undecided &= ~(rows & ~(ok & space))
        return found

    def _match(
        self, pvc: dict[str, Any], volumes: list[dict[str, Any]], nodes: NodeTableView, taken: dict[str, np.ndarray]
    ) -> tuple[list[dict[str, Any]], np.ndarray]:
        """``FindMatchingVolume`` on every row: the index in the returned candidates of the volume
        the claim takes (-1: none). A volume pre-bound to the claim is the only candidate."""
        n = nodes.n
        fitting = [pv for pv in volumes if _fits(pvc, pv)]
        prebound = [pv for pv in fitting if is_bound_to(pv, pvc)]
        candidates = prebound[:1] if prebound else fitting
        choice = np.full(n, -1, np.int64)
        open_rows = np.ones(n, bool)
        for i, pv in enumerate(candidates):
            name = name_of(pv)
            admits = self.affinity_mask(pv, nodes) & open_rows
            if name in taken:
                admits &= ~taken[name]
            if not admits.any():
                continue
            choice[admits] = i
            open_rows &= ~admits
            taken[name] = taken.get(name, np.zeros(n, bool)) | admits
            if not open_rows.any():
                break
        return candidates, choice

    def _provisionable(self, pvc: Mapping[str, Any], nodes: NodeTableView) -> tuple[np.ndarray, np.ndarray, str | None]:
        """For one claim on every row: whether its class provisions there (a provisioner, the
        allowed topologies) and whether there is space (CSIStorageCapacity); or an error."""
        n = nodes.n
        class_name = claim_class(pvc)
        if not class_name:
            return np.zeros(n, bool), np.ones(n, bool), f'no class for claim "{namespace_of(pvc)}/{name_of(pvc)}"'
        cls = self.listers.get("StorageClass", "", class_name)
        if cls is None:
            return np.zeros(n, bool), np.ones(n, bool), f'failed to find storage class "{class_name}"'
        provisioner = str(cls.get("provisioner") or "")
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return np.zeros(n, bool), np.ones(n, bool), None
        ok = self._topology_mask(cls.get("allowedTopologies"), nodes)
        return ok, self._capacity_mask(provisioner, pvc, class_name, nodes), None

    @staticmethod
    def _topology_mask(terms: Any, nodes: NodeTableView) -> np.ndarray:
        """``MatchTopologySelectorTerms`` on every row."""
        if not terms:
            return np.ones(nodes.n, bool)
        out = np.zeros(nodes.n, bool)
        for term in terms:
            mask = np.ones(nodes.n, bool)
            for expr in term.get("matchLabelExpressions") or []:
                values = tuple(str(v) for v in expr.get("values") or [])
                mask &= nodes.match_requirement(Requirement(str(expr.get("key")), "In", values))
            out |= mask
        return out

    def _capacity_mask(
        self, provisioner: str, pvc: Mapping[str, Any], class_name: str, nodes: NodeTableView
    ) -> np.ndarray:
        """``hasEnoughCapacity``: only for a CSI driver that asks for capacity tracking; then some
        CSIStorageCapacity of the class, large enough, must be reachable from the row."""
        n = nodes.n
        size = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
        driver = self.listers.get("CSIDriver", "", provisioner)
        if size is None or driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
            return np.ones(n, bool)
        need = requested_storage(pvc)
        out = np.zeros(n, bool)
        for cap in self.listers.all("CSIStorageCapacity"):
            if cap.get("storageClassName") != class_name or not _capacity_sufficient(cap, need):
                continue
            out |= self._reachable(cap, nodes)
        return out

    def node_capacity(self, pvc: Mapping[str, Any], nodes: NodeTableView) -> np.ndarray:
        """The ``capacity`` of the CSIStorageCapacity ``hasEnoughCapacity`` finds for the claim on
        each row (the first of its class, large enough, reachable; -1: none or not tracked)."""
        out = np.full(nodes.n, -1, np.int64)
        class_name = claim_class(pvc)
        cls = self.listers.get("StorageClass", "", class_name) if class_name else None
        size = ((pvc.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
        driver = self.listers.get("CSIDriver", "", str((cls or {}).get("provisioner") or ""))
        if size is None or driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
            return out
        need = requested_storage(pvc)
        for cap in self.listers.all("CSIStorageCapacity"):
            if cap.get("storageClassName") != class_name or not _capacity_sufficient(cap, need):
                continue
            mask = self._reachable(cap, nodes) & (out < 0)
            try:
                out[mask] = quantity_value(cap["capacity"]) if cap.get("capacity") is not None else 0
            except (InputError, ValueError):
                out[mask] = 0
        return out

    def _reachable(self, cap: Mapping[str, Any], nodes: NodeTableView) -> np.ndarray:
        """``nodeHasAccess``: the rows the capacity's node topology selects."""
        selector_raw = cap.get("nodeTopology")
        if selector_raw is None:
            return np.zeros(nodes.n, bool)
        try:
            selector = parse_label_selector(selector_raw, "nodeTopology")
        except InputError:
            return np.zeros(nodes.n, bool)
        if selector is None:
            return np.zeros(nodes.n, bool)
        mask = np.ones(nodes.n, bool)
        for key, value in selector.match_labels:
            mask &= nodes.match_requirement(Requirement(key, "In", (value,)))
        for req in selector.expressions:
            mask &= nodes.match_requirement(req)
        return mask

    def pod_volumes(self, found: Found, row: int) -> PodVolumes:
        """The PodVolumes FindPodVolumes gave the chosen row."""
        out = PodVolumes()
        out.dynamic_provisions.extend(found.provision_first)
        for pvc, candidates, choice in found.matching:
            i = int(choice[row])
            if i >= 0:
                out.static_bindings.append((pvc, candidates[i]))
            else:
                out.dynamic_provisions.append(pvc)
        return out

    # -- Reserve / Unreserve -----------------------------------------------------------------------
    def assume(self, pod: Mapping[str, Any], node: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: True when every claim is bound already (nothing to do)."""
        if self.all_bound(pod):
            return True
        bindings: list[tuple[dict[str, Any], dict[str, Any]]] = []
        provisions: list[dict[str, Any]] = []
        try:
            for pvc, pv in volumes.static_bindings:
                new_pv, dirty = bind_volume_to_claim(pv, pvc)
                if dirty:
                    self.pv_cache.assume(new_pv)
                bindings.append((pvc, new_pv))
            for pvc in volumes.dynamic_provisions:
                meta = dict(pvc.get("metadata") or {})
                meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node}
                clone = {**pvc, "metadata": meta}
                self.pvc_cache.assume(clone)
                provisions.append(clone)
        except LookupError as exc:
            self.revert(PodVolumes(bindings, provisions))
            raise BindingError(str(exc)) from None
        volumes.static_bindings, volumes.dynamic_provisions = bindings, provisions
        return False

    def revert(self, volumes: PodVolumes) -> None:
        """``RevertAssumedPodVolumes``."""
        for _, pv in volumes.static_bindings:
            self.pv_cache.restore(pv)
        for pvc in volumes.dynamic_provisions:
            self.pvc_cache.restore(pvc)

    # -- PreBind --------------------------------------------------------------------------------------
    def check_bindings(self, client: ClusterClient, pod: Mapping[str, Any], node: str, volumes: PodVolumes) -> bool:
        """``checkBindings``: True when the PV controller finished every binding and
        provisioning; False to wait; BindingError when one of them was undone."""
        labels = self.node_labels(node)
        if _get(client, "Pod", namespace_of(pod), name_of(pod)) is None:
            raise BindingError("pod does not exist any more")
        for pvc, pv in volumes.static_bindings:
            api_pv = _get(client, "PersistentVolume", "", name_of(pv))
            api_pvc = _get(client, "PersistentVolumeClaim", namespace_of(pvc), name_of(pvc))
            if api_pv is None or api_pvc is None:
                raise BindingError(f"failed to check binding: {'PV' if api_pv is None else 'PVC'} not found")
            if _rv_int(api_pv) < _rv_int(pv):
                return False
            if not node_affinity_allows(api_pv, labels):
                raise BindingError(
                    f'pv "{name_of(api_pv)}" node affinity doesn\'t match node "{node}": no matching NodeSelectorTerms'
                )
            ref = (api_pv.get("spec") or {}).get("claimRef") or {}
            if not ref.get("uid"):
                raise BindingError(f'ClaimRef got reset for pv "{name_of(api_pv)}"')
            if not is_fully_bound(api_pvc):
                return False
        for claim in volumes.dynamic_provisions:
            api_pvc = _get(client, "PersistentVolumeClaim", namespace_of(claim), name_of(claim))
            if api_pvc is None:
                raise BindingError("failed to check provisioning pvc: not found")
            if _rv_int(api_pvc) < _rv_int(claim):
                return False
            annotations = (api_pvc.get("metadata") or {}).get("annotations")
            if annotations is None:
                raise BindingError(f'selectedNode annotation reset for PVC "{name_of(api_pvc)}"')
            if annotations.get(ANN_SELECTED_NODE) != node:
                raise BindingError(f'provisioning failed for PVC "{name_of(api_pvc)}"')
            volume_name = (api_pvc.get("spec") or {}).get("volumeName")
            if volume_name:
                api_pv = _get(client, "PersistentVolume", "", str(volume_name))
                if api_pv is None:
                    return False
                if not node_affinity_allows(api_pv, labels):
                    raise BindingError(
                        f'pv "{name_of(api_pv)}" node affinity doesn\'t match node "{node}": '
                        "no matching NodeSelectorTerms"
                    )
            if not is_fully_bound(api_pvc):
                return False
        return True


def _fits(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    try:
        return volume_fits_claim(pvc, pv, scheduler=True)
    except InputError:  # the claim's selector is invalid: it matches no volume
        return False


def _capacity_sufficient(cap: Mapping[str, Any], need: int) -> bool:
    """``capacitySufficient``: ``maximumVolumeSize`` when set, else ``capacity``, at least ``need``."""
    raw = cap.get("maximumVolumeSize") if cap.get("maximumVolumeSize") is not None else cap.get("capacity")
    if raw is None:
        return False
    try:
        return quantity_value(raw) >= need
    except InputError:
        return False


def _get(client: ClusterClient, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The object as the API server has it now (upstream reads the assume caches' informer
    objects, ``GetAPIObj``); None when it is gone."""
    try:
        return client.get(kind, namespace, name)
    except NotFound:
        return None


def _rv_int(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
