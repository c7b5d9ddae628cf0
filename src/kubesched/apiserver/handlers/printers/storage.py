"""The Table columns of storage.k8s.io (StorageClasses, CSI objects, VolumeAttachments,
VolumeAttributesClasses), as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers.printers.common import (
    Printer,
    Row,
    age,
    col,
    name_col,
)

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _sc_row(o: dict[str, Any], now: float) -> Row:
    """``printStorageClass``: the default class's name says so."""
    meta = o.get("metadata") or {}
    name = str(meta.get("name"))
    if any((meta.get("annotations") or {}).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS):
        name += " (default)"
    return [
        name,
        o.get("provisioner") or "",
        o.get("reclaimPolicy") or "Delete",
        o.get("volumeBindingMode") or "Immediate",
        bool(o.get("allowVolumeExpansion")),
        age(now, meta.get("creationTimestamp")),
    ]


def _csinode_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), len((o.get("spec") or {}).get("drivers") or []), age(now, meta.get("creationTimestamp"))]


def _csidriver_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    requests = spec.get("tokenRequests") or []
    return [
        meta.get("name"),
        spec.get("attachRequired", True),
        spec.get("podInfoOnMount", False),
        spec.get("storageCapacity", False),
        ",".join(str(r.get("audience", "")) for r in requests) if requests else "<unset>",
        spec.get("requiresRepublish", False),
        ",".join(spec.get("volumeLifecycleModes") or ["Persistent"]),
        age(now, meta.get("creationTimestamp")),
    ]


def _capacity_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        o.get("storageClassName") or "",
        str(o.get("capacity") or ""),
        age(now, meta.get("creationTimestamp")),
    ]


def _attachment_row(o: dict[str, Any], now: float) -> Row:
    meta, spec, status = o.get("metadata") or {}, o.get("spec") or {}, o.get("status") or {}
    return [
        meta.get("name"),
        spec.get("attacher") or "",
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName") or "",
        bool(status.get("attached")),
        age(now, meta.get("creationTimestamp")),
    ]


PRINTERS: dict[str, Printer] = {
    "VolumeAttributesClass": (
        [name_col(), col("DriverName"), col("Age")],
        lambda o, now: [
            (o.get("metadata") or {}).get("name"),
            o.get("driverName", ""),
            age(now, (o.get("metadata") or {}).get("creationTimestamp")),
        ],
    ),
    "StorageClass": (
        [
            name_col(),
            col("Provisioner"),
            col("ReclaimPolicy"),
            col("VolumeBindingMode"),
            col("AllowVolumeExpansion", type_="boolean"),
            col("Age"),
        ],
        _sc_row,
    ),
    "CSINode": ([name_col(), col("Drivers", type_="integer"), col("Age")], _csinode_row),
    "CSIDriver": (
        [
            name_col(),
            col("AttachRequired", type_="boolean"),
            col("PodInfoOnMount", type_="boolean"),
            col("StorageCapacity", type_="boolean"),
            col("TokenRequests"),
            col("RequiresRepublish", type_="boolean"),
            col("Modes"),
            col("Age"),
        ],
        _csidriver_row,
    ),
    "CSIStorageCapacity": (
        [name_col(), col("StorageClassName"), col("Capacity"), col("Age")],
        _capacity_row,
    ),
    "VolumeAttachment": (
        [name_col(), col("Attacher"), col("PV"), col("Node"), col("Attached", type_="boolean"), col("Age")],
        _attachment_row,
    ),
}
