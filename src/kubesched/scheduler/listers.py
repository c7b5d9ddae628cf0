"""Informer caches of the objects plugins read besides nodes and pods: Namespaces (for
``namespaceSelector`` in pod affinity terms) and the Services and workload controllers that
select a pod (PodTopologySpread's system default constraints, ``helper.DefaultSelector`` in
``framework/plugins/helper/spread.go``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kubesched.api.selectors import LabelSelector, Requirement, parse_label_selector
from kubesched.errors import InputError

# the storage kinds the volume plugins read (framework/types.go's EventResources)
STORAGE_KINDS = (
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
)
KINDS = (
    "Namespace",
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "ResourceClaim",
    "DeviceClass",
    "ResourceSlice",
    "DeviceTaintRule",
    *STORAGE_KINDS,
)

# the controller kinds DefaultSelector follows through a pod's controller ownerReference
_CONTROLLERS = {
    ("v1", "ReplicationController"): "ReplicationController",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
}


# the kinds DefaultSelector reads
_SELECTOR_KINDS = frozenset({"Service", *_CONTROLLERS.values()})


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Listers:
    def __init__(self) -> None:
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {k: {} for k in KINDS}
        self._services_by_ns: dict[str, list[dict[str, Any]]] | None = None
        self.versions: dict[str, int] = dict.fromkeys(KINDS, 0)  # bumped on every change of a kind
        self._subscribers: dict[str, list[Callable[[Any, Any], None]]] = {k: [] for k in KINDS}
        # bumped when a Service or controller changes; the last DefaultSelector answer is kept
        # for the next pod of the same namespace, labels and controller while it holds
        self._selector_epoch = 0
        self._last_selector: tuple[int, str, Mapping[str, str], Any, LabelSelector] | None = None

    def add_kind(self, kind: str) -> None:
        """Keep objects of one more kind (a custom resource a plugin registers events for)."""
        self._objects.setdefault(kind, {})
        self.versions.setdefault(kind, 0)
        self._subscribers.setdefault(kind, [])

    def subscribe(self, kind: str, fn: Callable[[Any, Any], None]) -> None:
        """Call ``fn(old, new)`` on every change of ``kind`` (``new`` None: deleted), as an
        informer's event handler would be."""
        self._subscribers[kind].append(fn)

    def set(self, kind: str, obj: dict[str, Any]) -> None:
        key = _key(obj)
        old = self._objects[kind].get(key)
        self._objects[kind][key] = obj
        self.versions[kind] += 1
        if kind == "Service":
            self._services_by_ns = None
        if kind in _SELECTOR_KINDS:
            self._selector_epoch += 1
        for fn in self._subscribers[kind]:
            fn(old, obj)

    def delete(self, kind: str, obj: Mapping[str, Any]) -> None:
        old = self._objects[kind].pop(_key(obj), None)
        self.versions[kind] += 1
        if kind == "Service":
            self._services_by_ns = None
        if kind in _SELECTOR_KINDS:
            self._selector_epoch += 1
        for fn in self._subscribers[kind]:
            fn(old, None)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(kind, {}).get((namespace, name))

    def all(self, kind: str) -> list[dict[str, Any]]:
        return list(self._objects.get(kind, {}).values())

    # -- namespaces ---------------------------------------------------------------------------
    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        obj = self._objects["Namespace"].get(("", name))
        return None if obj is None else ((obj.get("metadata") or {}).get("labels") or {})

    def namespaces_matching(self, selector: LabelSelector) -> Iterator[str]:
        for (_, name), obj in self._objects["Namespace"].items():
            if selector.matches((obj.get("metadata") or {}).get("labels") or {}):
                yield name

    # -- DefaultSelector ----------------------------------------------------------------------
    def _services(self, namespace: str) -> list[dict[str, Any]]:
        if self._services_by_ns is None:
            by_ns: dict[str, list[dict[str, Any]]] = {}
            for (ns, _), obj in self._objects["Service"].items():
                by_ns.setdefault(ns, []).append(obj)
            self._services_by_ns = by_ns
        return self._services_by_ns.get(namespace, [])

    @property
    def selector_epoch(self) -> int:
        """Bumped on every change to the objects default spreading selects by (Services and
        workload controllers)."""
        return self._selector_epoch

    def default_selector(
        self, namespace: str, labels: Mapping[str, str], controller: tuple[str, str, str] | None
    ) -> LabelSelector:
        """The labels of every Service selecting the pod, and its controller's selector, ANDed."""
        last = self._last_selector
        if (
            last is not None
            and last[0] == self._selector_epoch
            and last[1] == namespace
            and last[3] == controller
            and last[2] == labels
        ):
            return last[4]
        found = self._default_selector(namespace, labels, controller)
        self._last_selector = (self._selector_epoch, namespace, dict(labels), controller, found)
        return found

    def _default_selector(
        self, namespace: str, labels: Mapping[str, str], controller: tuple[str, str, str] | None
    ) -> LabelSelector:
        label_set: dict[str, str] = {}
        for svc in self._services(namespace):
            selector = (svc.get("spec") or {}).get("selector")
            if selector is None:  # a Service without a selector selects nothing
                continue
            if all(labels.get(k) == v for k, v in selector.items()):
                label_set.update({str(k): str(v) for k, v in selector.items()})
        expressions: tuple[Requirement, ...] = ()
        kind = _CONTROLLERS.get(controller[:2]) if controller else None
        owner = self._objects[kind].get((namespace, controller[2])) if kind and controller else None
        selector = (owner.get("spec") or {}).get("selector") if owner else None
        if kind == "ReplicationController" and isinstance(selector, Mapping):
            label_set.update({str(k): str(v) for k, v in selector.items()})
        elif selector is not None:
            try:
                parsed = parse_label_selector(selector, "spec.selector")
            except InputError:
                parsed = None  # upstream skips a controller whose selector does not parse
            if parsed is not None:
                expressions = tuple(Requirement(k, "In", (v,)) for k, v in parsed.match_labels) + parsed.expressions
        return LabelSelector(tuple(sorted(label_set.items())), expressions)
