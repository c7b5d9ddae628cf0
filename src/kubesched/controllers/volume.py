"""The volume controllers a real cluster runs around the scheduler, for the embedded cluster and
``simulate``:

- kube-controller-manager's PV controller (``pkg/controller/volume/persistentvolume``): an
  Immediate claim takes the smallest free volume that fits, or is handed to its class's
  provisioner; a WaitForFirstConsumer claim waits for the scheduler, which pre-binds a volume
  (``claimRef``) or sets ``volume.kubernetes.io/selected-node``; a volume pre-bound to a claim is
  bound both ways (``pv.kubernetes.io/bind-completed``), phases Bound; a volume whose claim is
  gone is Released, and deleted under the Delete reclaim policy when it was provisioned.
- A hollow external provisioner per StorageClass provisioner name (what a CSI driver's
  external-provisioner sidecar does): a claim handed to it gets a volume ``pvc-<claim uid>`` of
  the size asked for, confined to the selected node's topology (the driver's topology keys from
  the node's CSINode, else its zone, else the node itself), or for an Immediate claim to the
  first zone the class allows.
- The ephemeral volume controller (``pkg/controller/volume/ephemeral``): a pod's
  ``ephemeral.volumeClaimTemplate`` becomes the claim ``<pod>-<volume>``, owned by the pod; the
  garbage collector's part is done too: the claim goes with its pod.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    NOT_SUPPORTED_PROVISIONER,
    WAIT_FOR_FIRST_CONSUMER,
    access_modes,
    bind_volume_to_claim,
    check_access_modes,
    claim_class,
    ephemeral_claim_name,
    is_bound_to,
    matching_volume_order,
    name_of,
    namespace_of,
    volume_fits_claim,
)
from kubesched.api.watch import DELETED
from kubesched.client.object_client import ObjectClient
from kubesched.errors import InputError

ZONE_LABEL = "topology.kubernetes.io/zone"
HOSTNAME_LABEL = "kubernetes.io/hostname"


class VolumeController:
    """``sync`` handles the claim, volume and pod changes seen since the last call."""

    def __init__(self, client: ObjectClient, notify: Callable[[], None] | None = None) -> None:
        self.client = client
        self._watch = client.watch(["PersistentVolumeClaim", "PersistentVolume", "Pod", "StorageClass"], notify)
        self._initial = True

    def sync(self) -> bool:
        """Act on what changed (and on what that wrote, until nothing more changes); True when
        anything was written."""
        start = self.client.revision
        if self._initial:
            self._initial = False
            self._watch.drain()
            for pod in self.client.list("Pod"):
                self._sync_pod(pod)
            self._sync(self.client.list("PersistentVolumeClaim"), self.client.list("PersistentVolume"))
        for _ in range(100):  # each round acts on the previous round's writes
            events = self._watch.drain()
            if not events:
                break
            claims: dict[tuple[str, str], dict[str, Any]] = {}
            volumes: dict[str, dict[str, Any]] = {}
            all_claims = False
            for ev in events:
                if ev.kind == "Pod":
                    if ev.type == DELETED:
                        self._pod_gone(ev.obj)
                    else:
                        self._sync_pod(ev.obj)
                elif ev.kind == "StorageClass":
                    all_claims = True
                elif ev.kind == "PersistentVolumeClaim" and ev.type != DELETED:
                    claims[(namespace_of(ev.obj), name_of(ev.obj))] = ev.obj
                elif ev.kind == "PersistentVolume" and ev.type != DELETED:
                    volumes[name_of(ev.obj)] = ev.obj
                    ref = (ev.obj.get("spec") or {}).get("claimRef") or {}
                    found = ref and self.client.get(
                        "PersistentVolumeClaim", str(ref.get("namespace") or "default"), str(ref.get("name"))
                    )
                    if found:
                        claims[(namespace_of(found), name_of(found))] = found
                elif ev.kind == "PersistentVolumeClaim":  # deleted: its volume is released
                    name = (ev.obj.get("spec") or {}).get("volumeName")
                    pv = self.client.get("PersistentVolume", "", str(name)) if name else None
                    if pv is not None:
                        volumes[name_of(pv)] = pv
            if all_claims or any(ev.kind == "PersistentVolume" and ev.type != DELETED for ev in events):
                # a new or freed volume may serve any waiting Immediate claim
                for pvc in self.client.list("PersistentVolumeClaim"):
                    if not (pvc.get("spec") or {}).get("volumeName"):
                        claims[(namespace_of(pvc), name_of(pvc))] = pvc
            self._sync(list(claims.values()), list(volumes.values()))
        return self.client.revision != start

    # -- claims and volumes --------------------------------------------------------------------------
    def _sync(self, claims: list[dict[str, Any]], volumes: list[dict[str, Any]]) -> None:
        for pvc in claims:
            current = self.client.get("PersistentVolumeClaim", namespace_of(pvc), name_of(pvc))
            if current is not None:
                with contextlib.suppress(ApiError, InputError):
                    self._sync_claim(current)
        for pv in volumes:
            current = self.client.get("PersistentVolume", "", name_of(pv))
            if current is not None:
                with contextlib.suppress(ApiError, InputError):
                    self._sync_volume(current)

    def _class(self, name: str) -> dict[str, Any] | None:
        return self.client.get("StorageClass", "", name) if name else None

    def _sync_claim(self, pvc: dict[str, Any]) -> None:
        """``syncClaim``."""
        if (pvc.get("metadata") or {}).get("deletionTimestamp"):
            return
        spec = pvc.get("spec") or {}
        annotations = (pvc.get("metadata") or {}).get("annotations") or {}
        volume_name = spec.get("volumeName")
        if volume_name:
            if ANN_BIND_COMPLETED in annotations:
                return
            pv = self.client.get("PersistentVolume", "", str(volume_name))
            if pv is not None and (not (pv.get("spec") or {}).get("claimRef") or is_bound_to(pv, pvc)):
                self._bind(pv, pvc)
            return
        volumes = self.client.list("PersistentVolume")
        prebound = [pv for pv in volumes if is_bound_to(pv, pvc)]
        if prebound:
            self._bind(prebound[0], pvc)
            return
        cls = self._class(claim_class(pvc))
        delayed = cls is not None and cls.get("volumeBindingMode") == WAIT_FOR_FIRST_CONSUMER
        if not delayed:
            for candidate in matching_volume_order(volumes):
                if volume_fits_claim(pvc, candidate, scheduler=False) and check_access_modes(pvc, candidate):
                    self._bind(candidate, pvc)
                    return
        if cls is None or (delayed and ANN_SELECTED_NODE not in annotations):
            return  # waits for a volume, a class, or the scheduler
        provisioner = str(cls.get("provisioner") or "")
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return
        if annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            self._set_claim_annotations(pvc, {ANN_STORAGE_PROVISIONER: provisioner})
            pvc = self.client.get("PersistentVolumeClaim", namespace_of(pvc), name_of(pvc)) or pvc
        self._provision(pvc, cls)

    def _sync_volume(self, pv: dict[str, Any]) -> None:
        """``syncVolume``: a free volume is Available; one whose claim is gone is Released (and
        deleted when it was provisioned under the Delete policy)."""
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef")
        phase = (pv.get("status") or {}).get("phase")
        if not ref:
            if phase != "Available":
                self._set_volume_phase(pv, "Available")
            return
        pvc = self.client.get("PersistentVolumeClaim", str(ref.get("namespace") or "default"), str(ref.get("name")))
        if pvc is None or (ref.get("uid") and (pvc.get("metadata") or {}).get("uid") != ref.get("uid")):
            if not ref.get("uid") and pvc is None:
                return  # pre-bound by name to a claim that does not exist yet
            provisioned = ANN_DYNAMICALLY_PROVISIONED in ((pv.get("metadata") or {}).get("annotations") or {})
            if provisioned and spec.get("persistentVolumeReclaimPolicy", "Delete") == "Delete":
                with contextlib.suppress(ApiError):
                    self.client.delete("PersistentVolume", "", name_of(pv))
            elif phase != "Released":
                self._set_volume_phase(pv, "Released")
            return
        if (pvc.get("spec") or {}).get("volumeName") in (None, "") or not is_bound_to(pv, pvc):
            if is_bound_to(pv, pvc):
                self._bind(pv, pvc)
        elif phase != "Bound":
            self._set_volume_phase(pv, "Bound")

    def _bind(self, pv: dict[str, Any], pvc: dict[str, Any]) -> None:
        """``bind``: the volume's claimRef, its phase, then the claim's volumeName, annotations,
        phase and capacity."""
        new_pv, dirty = bind_volume_to_claim(pv, pvc)
        if dirty:
            new_pv = self.client.update("PersistentVolume", new_pv)
        if (new_pv.get("status") or {}).get("phase") != "Bound":
            new_pv = self._set_volume_phase(new_pv, "Bound")
        by_controller = ANN_BOUND_BY_CONTROLLER in ((new_pv.get("metadata") or {}).get("annotations") or {})

        def bound(o: dict[str, Any]) -> dict[str, Any]:
            meta = dict(o.get("metadata") or {})
            ann = {**(meta.get("annotations") or {}), ANN_BIND_COMPLETED: "yes"}
            if by_controller or not (o.get("spec") or {}).get("volumeName"):
                ann[ANN_BOUND_BY_CONTROLLER] = "yes"
            meta["annotations"] = ann
            capacity = dict((new_pv.get("spec") or {}).get("capacity") or {})
            status = {
                **(o.get("status") or {}),
                "phase": "Bound",
                "accessModes": list(access_modes(new_pv)),
                "capacity": capacity,
            }
            return {
                **o,
                "metadata": meta,
                "spec": {**(o.get("spec") or {}), "volumeName": name_of(new_pv)},
                "status": status,
            }

        self.client.patch("PersistentVolumeClaim", namespace_of(pvc), name_of(pvc), bound)

    def _set_volume_phase(self, pv: dict[str, Any], phase: str) -> dict[str, Any]:
        def set_phase(o: dict[str, Any]) -> dict[str, Any]:
            return {**o, "status": {**(o.get("status") or {}), "phase": phase}}

        return self.client.patch("PersistentVolume", "", name_of(pv), set_phase)

    def _set_claim_annotations(self, pvc: dict[str, Any], annotations: Mapping[str, str]) -> None:
        def annotate(o: dict[str, Any]) -> dict[str, Any]:
            meta = dict(o.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            return {**o, "metadata": meta}

        self.client.patch("PersistentVolumeClaim", namespace_of(pvc), name_of(pvc), annotate)

    # -- the hollow provisioner ---------------------------------------------------------------------
    def _provision(self, pvc: dict[str, Any], cls: Mapping[str, Any]) -> None:
        meta = pvc.get("metadata") or {}
        name = f"pvc-{meta.get('uid')}"
        if self.client.get("PersistentVolume", "", name) is not None:
            return
        provisioner = str(cls.get("provisioner"))
        selected = (meta.get("annotations") or {}).get(ANN_SELECTED_NODE)
        affinity = self._topology(provisioner, str(selected), cls) if selected else self._immediate_topology(cls)
        spec = pvc.get("spec") or {}
        request = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")
        pv_spec: dict[str, Any] = {
            "capacity": {"storage": request},
            "accessModes": list(access_modes(pvc)) or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": cls.get("reclaimPolicy") or "Delete",
            "storageClassName": claim_class(pvc),
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "csi": {"driver": provisioner, "volumeHandle": name},
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": namespace_of(pvc),
                "name": name_of(pvc),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
        }
        if affinity is not None:
            pv_spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": affinity}]}}
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {ANN_DYNAMICALLY_PROVISIONED: provisioner}},
            "spec": pv_spec,
        }
        self.client.create("PersistentVolume", pv)

    def _topology(self, driver: str, node: str, cls: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """The selected node's topology as the driver reports it (CSINode topology keys), else
        its zone, else the node itself."""
        obj = self.client.get("Node", "", node)
        labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
        keys: list[str] = []
        csi_node = self.client.get("CSINode", "", node)
        for d in ((csi_node or {}).get("spec") or {}).get("drivers") or []:
            if d.get("name") == driver:
                keys = [k for k in d.get("topologyKeys") or [] if k in labels]
        if not keys:
            keys = [ZONE_LABEL] if ZONE_LABEL in labels else []
        if not keys:
            return [{"key": HOSTNAME_LABEL, "operator": "In", "values": [labels.get(HOSTNAME_LABEL, node)]}]
        return [{"key": k, "operator": "In", "values": [labels[k]]} for k in keys]

    def _immediate_topology(self, cls: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        """An Immediate claim's volume: the first zone the class allows, or the first zone of a
        node; none in a cluster without zones."""
        for term in cls.get("allowedTopologies") or []:
            exprs = term.get("matchLabelExpressions") or []
            if exprs:
                return [
                    {"key": e.get("key"), "operator": "In", "values": list(e.get("values") or [])[:1]} for e in exprs
                ]
        zones = sorted(
            {
                str(((n.get("metadata") or {}).get("labels") or {}).get(ZONE_LABEL))
                for n in self.client.list("Node")
                if ZONE_LABEL in ((n.get("metadata") or {}).get("labels") or {})
            }
        )
        return [{"key": ZONE_LABEL, "operator": "In", "values": zones[:1]}] if zones else None

    # -- ephemeral volumes ---------------------------------------------------------------------------
    def _sync_pod(self, pod: dict[str, Any]) -> None:
        """``syncHandler`` of the ephemeral volume controller."""
        meta = pod.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            template = (vol or {}).get("ephemeral", {}).get("volumeClaimTemplate") if isinstance(vol, Mapping) else None
            if not template:
                continue
            name = ephemeral_claim_name(pod, vol)
            if self.client.get("PersistentVolumeClaim", namespace_of(pod), name) is not None:
                continue
            tmeta = template.get("metadata") or {}
            claim = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": name,
                    "namespace": namespace_of(pod),
                    **({"labels": tmeta["labels"]} if tmeta.get("labels") else {}),
                    **({"annotations": tmeta["annotations"]} if tmeta.get("annotations") else {}),
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": name_of(pod),
                            "uid": meta.get("uid"),
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": dict(template.get("spec") or {}),
            }
            with contextlib.suppress(ApiError):
                self.client.create("PersistentVolumeClaim", claim)

    def _pod_gone(self, pod: Mapping[str, Any]) -> None:
        """The garbage collector: a pod's ephemeral claims go with it."""
        uid = (pod.get("metadata") or {}).get("uid")
        for pvc in self.client.list("PersistentVolumeClaim", namespace_of(pod)):
            refs = (pvc.get("metadata") or {}).get("ownerReferences") or []
            if any(r.get("uid") == uid and r.get("controller") for r in refs):
                with contextlib.suppress(ApiError):
                    self.client.delete("PersistentVolumeClaim", namespace_of(pvc), name_of(pvc))
