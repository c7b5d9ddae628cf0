"""The PV and PVC assume caches (``volumebinding/assume_cache.go`` over
``component-helpers/storage/volume/assumecache``): the informer's objects, with the versions a
scheduling cycle assumed (a PV pre-bound to a claim, a claim with its selected node) in front
of them until the informer delivers a newer object or the assumption is restored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.volumes import volume_class
from kubesched.scheduler.listers import Listers


def _rv(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


def _key(obj: Mapping[str, Any], namespaced: bool) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default") if namespaced else "", str(meta.get("name") or ""))


class AssumeCache:
    """One kind's assume cache over the scheduler's listers."""

    def __init__(self, listers: Listers, kind: str, namespaced: bool) -> None:
        self.listers, self.kind, self.namespaced = listers, kind, namespaced
        # key → (assumed object, resourceVersion of the informer's object it was assumed over)
        self._assumed: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}

    def get_api(self, namespace: str, name: str) -> dict[str, Any] | None:
        """``GetAPIObj``: the informer's object, assumptions aside."""
        return self.listers.get(self.kind, namespace if self.namespaced else "", name)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The assumed object while the informer still holds the version it was assumed over."""
        key = (namespace if self.namespaced else "", name)
        api = self.get_api(namespace, name)
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is not None and _rv(api) == assumed[1]:
            return assumed[0]
        del self._assumed[key]  # the informer moved on (or the object is gone)
        return api

    def assume(self, obj: dict[str, Any]) -> None:
        """``Assume``: ``obj`` stands for the informer's object of the same version."""
        key = _key(obj, self.namespaced)
        api = self.get_api(*key)
        if api is None:
            raise LookupError(f"{self.kind} {key[1]!r} is not in the cache")
        if _rv(obj) != _rv(api):
            raise LookupError(f"{self.kind} {key[1]!r} is out of sync (stored: {_rv(api)}, assume: {_rv(obj)})")
        self._assumed[key] = (obj, _rv(api))

    def restore(self, obj: Mapping[str, Any]) -> None:
        """``Restore``: drop the assumption; the informer's object shows again."""
        self._assumed.pop(_key(obj, self.namespaced), None)


class PVAssumeCache(AssumeCache):
    """PersistentVolumes, indexed by class (``pvStorageClassIndexFunc``)."""

    def __init__(self, listers: Listers) -> None:
        super().__init__(listers, "PersistentVolume", False)
        self._by_class: dict[str, set[str]] = {}
        self._class_of: dict[str, str] = {}
        for pv in listers.all("PersistentVolume"):
            self._index(None, pv)
        listers.subscribe("PersistentVolume", self._index)

    def _index(self, old: Any, new: Any) -> None:
        obj = new if new is not None else old
        name = str(((obj or {}).get("metadata") or {}).get("name") or "")
        previous = self._class_of.pop(name, None)
        if previous is not None:
            self._by_class.get(previous, set()).discard(name)
        if new is not None:
            cls = volume_class(new)
            self._class_of[name] = cls
            self._by_class.setdefault(cls, set()).add(name)

    def list_pvs(self, storage_class: str) -> list[dict[str, Any]]:
        """``ListPVs``: the class's volumes, assumed versions in front."""
        out = []
        for name in self._by_class.get(storage_class, ()):
            pv = self.get("", name)
            if pv is not None:
                out.append(pv)
        return out
