"""PersistentVolume and claim helpers as kube-scheduler and the PV controller share them
(``k8s.io/component-helpers/storage/volume`` and ``.../storage/ephemeral``): classes, binding
modes, the matching of a claim to a volume, a volume's node affinity, generic ephemeral claims.

Objects are the API's JSON (dicts); nothing here keeps state.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import numpy as np

from kubesched.api.quantity import value as quantity_value
from kubesched.api.selectors import NodeSelectorTerm, Requirement, parse_label_selector, parse_node_selector_term
from kubesched.errors import InputError

# annotations (storage/volume/helpers.go, pkg/controller/volume/persistentvolume)
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_MIGRATED_PLUGINS = "storage.alpha.kubernetes.io/migrated-plugins"  # on CSINode
_V = TypeVar("_V", bound=Mapping[str, Any])
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def name_of(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def namespace_of(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("namespace") or "default")


def has_volumes(pod: Mapping[str, Any]) -> bool:
    """Whether the pod lists any volume (the volume plugins' quick way out)."""
    return bool(_spec(pod).get("volumes"))


def claim_class(pvc: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``."""
    ann = _meta(pvc).get("annotations") or {}
    if ANN_BETA_CLASS in ann:
        return str(ann[ANN_BETA_CLASS])
    return str(_spec(pvc).get("storageClassName") or "")


def volume_class(pv: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClass``: the beta annotation first, then ``spec.storageClassName``."""
    ann = _meta(pv).get("annotations") or {}
    if ANN_BETA_CLASS in ann:
        return str(ann[ANN_BETA_CLASS])
    return str(_spec(pv).get("storageClassName") or "")


def is_delay_binding(pvc: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and binds WaitForFirstConsumer (a missing
    class is treated as Immediate, as upstream does)."""
    name = claim_class(pvc)
    if not name:
        return False
    cls = classes.get(name)
    return cls is not None and cls.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER


def requested_storage(pvc: Mapping[str, Any]) -> int:
    """The claim's ``resources.requests.storage`` in bytes (0 when absent or malformed)."""
    raw = ((_spec(pvc).get("resources") or {}).get("requests") or {}).get("storage")
    try:
        return quantity_value(raw) if raw is not None else 0
    except InputError:
        return 0


def volume_capacity(pv: Mapping[str, Any]) -> int:
    raw = (_spec(pv).get("capacity") or {}).get("storage")
    try:
        return quantity_value(raw) if raw is not None else 0
    except InputError:
        return 0


def access_modes(obj: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(m) for m in _spec(obj).get("accessModes") or [])


def check_access_modes(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    """``CheckAccessModes``: every mode the claim asks for is one the volume offers."""
    offered = set(access_modes(pv))
    return all(m in offered for m in access_modes(pvc))


def _volume_mode(obj: Mapping[str, Any]) -> str:
    return str(_spec(obj).get("volumeMode") or "Filesystem")


def is_bound_to(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """``IsVolumeBoundToClaim``: the volume's claimRef names this claim (and its UID, when set)."""
    ref = _spec(pv).get("claimRef")
    if not ref:
        return False
    if ref.get("name") != name_of(pvc) or (ref.get("namespace") or "") != namespace_of(pvc):
        return False
    uid = ref.get("uid")
    return not uid or uid == _meta(pvc).get("uid")


def node_affinity_terms(pv: Mapping[str, Any]) -> tuple[NodeSelectorTerm, ...] | None:
    """The PV's ``nodeAffinity.required`` terms; None when it has none (every node)."""
    required = (_spec(pv).get("nodeAffinity") or {}).get("required")
    if required is None:
        return None
    return tuple(
        parse_node_selector_term(t, f"spec.nodeAffinity.required.nodeSelectorTerms[{i}]")
        for i, t in enumerate(required.get("nodeSelectorTerms") or [])
    )


def _matches_no_name(req: Requirement) -> bool:
    """Upstream's ``CheckNodeAffinity`` matches a node built from its labels alone, whose name is
    empty: a ``metadata.name`` field requirement holds only as it does for the empty name."""
    return req.matches({"metadata.name": ""})


def node_affinity_mask(pv: Mapping[str, Any], labels_match: Any, n: int) -> np.ndarray:
    """``CheckNodeAffinity`` for every row: ``labels_match(requirement)`` gives a requirement's
    mask over the rows (a node table's ``match_requirement``)."""
    terms = node_affinity_terms(pv)
    if terms is None:
        return np.ones(n, bool)
    out = np.zeros(n, bool)
    for term in terms:
        if not term.expressions and not term.fields:
            continue
        mask = np.ones(n, bool)
        for req in term.expressions:
            mask &= labels_match(req)
        if not all(_matches_no_name(req) for req in term.fields):
            mask[:] = False
        out |= mask
    return out


def node_affinity_allows(pv: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``CheckNodeAffinity`` against one node's labels."""
    terms = node_affinity_terms(pv)
    if terms is None:
        return True
    for term in terms:
        if not term.expressions and not term.fields:
            continue
        if all(r.matches(labels) for r in term.expressions) and all(_matches_no_name(r) for r in term.fields):
            return True
    return False


def claim_selector_matches(pvc: Mapping[str, Any], pv: Mapping[str, Any]) -> bool:
    selector = parse_label_selector(_spec(pvc).get("selector"), "spec.selector")
    return selector is None or selector.matches(_meta(pv).get("labels") or {})


def matching_volume_order(pvs: Iterable[_V]) -> list[_V]:
    """Volumes smallest first (then by name): ``FindMatchingVolume`` keeps the smallest volume that
    fits, and the first seen among equal ones; the informer's order is a map's, so kubesched fixes
    one."""
    return sorted(pvs, key=lambda pv: (volume_capacity(pv), name_of(pv)))


def volume_fits_claim(pvc: Mapping[str, Any], pv: Mapping[str, Any], *, scheduler: bool) -> bool:
    """The node-independent checks of ``FindMatchingVolume`` for an unbound candidate volume:
    not being deleted, large enough, the same volume mode, not bound to another claim, selected
    by the claim's selector, of the claim's class and (the scheduler's path) offering its access
    modes."""
    if _meta(pv).get("deletionTimestamp"):
        return False
    if volume_capacity(pv) < requested_storage(pvc):
        return False
    if _volume_mode(pv) != _volume_mode(pvc):
        return False
    if is_bound_to(pv, pvc):
        return True
    if _spec(pv).get("claimRef"):
        return False
    if not claim_selector_matches(pvc, pv):
        return False
    if volume_class(pv) != claim_class(pvc):
        return False
    return not scheduler or check_access_modes(pvc, pv)


def bind_volume_to_claim(pv: Mapping[str, Any], pvc: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``GetBindVolumeToClaim``: the volume with its claimRef set to the claim (and the
    bound-by-controller annotation when the ref was empty); ``dirty`` when anything changed."""
    if is_bound_to(pv, pvc) and (_spec(pv).get("claimRef") or {}).get("uid"):
        return dict(pv), False
    meta = dict(_meta(pv))
    spec = dict(_spec(pv))
    pvc_meta = _meta(pvc)
    if not spec.get("claimRef"):
        meta["annotations"] = {**(meta.get("annotations") or {}), ANN_BOUND_BY_CONTROLLER: "yes"}
    spec["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "namespace": namespace_of(pvc),
        "name": name_of(pvc),
        "uid": pvc_meta.get("uid"),
        "apiVersion": "v1",
        "resourceVersion": pvc_meta.get("resourceVersion"),
    }
    return {**pv, "metadata": meta, "spec": spec}, True


def is_fully_bound(pvc: Mapping[str, Any]) -> bool:
    """``isPVCFullyBound``: a volume name and the bind-completed annotation."""
    return bool(_spec(pvc).get("volumeName")) and ANN_BIND_COMPLETED in (_meta(pvc).get("annotations") or {})


# -- generic ephemeral volumes (component-helpers/storage/ephemeral) ----------------------------
def ephemeral_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """``VolumeClaimName``: ``<pod name>-<volume name>``."""
    return f"{name_of(pod)}-{volume.get('name', '')}"


def ephemeral_claim_error(pod: Mapping[str, Any], pvc: Mapping[str, Any]) -> str | None:
    """``VolumeIsForPod``: the claim must be controlled by the pod; the error text otherwise."""
    uid = _meta(pod).get("uid")
    for ref in _meta(pvc).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid") == uid:
            return None
    return (
        f"PVC {namespace_of(pvc)}/{name_of(pvc)} was not created for pod "
        f"{namespace_of(pod)}/{name_of(pod)} (pod is not owner)"
    )


def pod_claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The claims a pod's volumes use, in order: (name, from an ephemeral volume)."""
    out: list[tuple[str, bool]] = []
    for vol in _spec(pod).get("volumes") or []:
        if not isinstance(vol, Mapping):
            continue
        if vol.get("persistentVolumeClaim"):
            out.append((str(vol["persistentVolumeClaim"].get("claimName") or ""), False))
        elif vol.get("ephemeral"):
            out.append((ephemeral_claim_name(pod, vol), True))
    return out


def volumes_signature(pod: Mapping[str, Any]) -> tuple[str, ...]:
    """``fwk.VolumesSigner``: the pod's volume sources but ConfigMaps and Secrets (which do not
    bear on scheduling and differ pod by pod), each as JSON, sorted."""
    out = []
    for vol in _spec(pod).get("volumes") or []:
        if not isinstance(vol, Mapping):
            continue
        source = {k: v for k, v in vol.items() if k != "name"}
        if "configMap" in source or "secret" in source:
            continue
        out.append(json.dumps(source, sort_keys=True, separators=(",", ":")))
    return tuple(sorted(out))
