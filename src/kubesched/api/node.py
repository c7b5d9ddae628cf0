"""A v1 Node parsed into what the scheduler's node table stores."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubesched.api.resources import Resources, parse_resource_list
from kubesched.api.selectors import Taint, parse_taints
from kubesched.errors import InputError


@dataclass(frozen=True, slots=True)
class NodeSpecInfo:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    unschedulable: bool
    allocatable: Resources
    images: tuple[tuple[tuple[str, ...], int], ...]
    declared_features: tuple[str, ...] = ()  # status.declaredFeatures, as the node lists them


def node_info_from(obj: Mapping[str, Any]) -> NodeSpecInfo:
    """Parse a Node; ``status.allocatable`` falls back to ``status.capacity`` as the kubelet reports it."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    alloc_raw = status.get("allocatable")
    field = "status.allocatable"
    if alloc_raw is None:
        alloc_raw, field = status.get("capacity"), "status.capacity"
    allocatable = parse_resource_list(alloc_raw, field)
    images = []
    for i, img in enumerate(status.get("images") or []):
        names = tuple(str(n) for n in img.get("names") or [])
        size = img.get("sizeBytes") or 0
        if not isinstance(size, int) or size < 0:
            raise InputError(f"invalid size {size!r}", field=f"status.images[{i}].sizeBytes")
        if names:
            images.append((names, size))
    labels = dict(meta.get("labels") or {})
    return NodeSpecInfo(
        name=meta.get("name") or "",
        labels=labels,
        taints=parse_taints(spec.get("taints"), "spec.taints"),
        unschedulable=bool(spec.get("unschedulable")),
        allocatable=allocatable,
        images=tuple(images),
        declared_features=tuple(str(f) for f in status.get("declaredFeatures") or ()),
    )
