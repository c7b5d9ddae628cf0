"""The garbage collector (``pkg/controller/garbagecollector``): objects whose owners are all gone
are deleted (background cascading), dangling references beside a live owner are dropped, an
owner being deleted in the foreground waits for its dependents (``foregroundDeletion``), and
an orphaning delete strips the owner's references from its dependents (``orphan``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import DELETED, WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.cluster.store import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, is_namespaced
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe

Ref = tuple[str, str, str]  # (kind, namespace, name)


def _ref(kind: str, obj: Mapping[str, Any]) -> Ref:
    meta = obj.get("metadata") or {}
    return kind, meta.get("namespace") or "", meta.get("name") or ""


def _owner_refs(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r for r in (obj.get("metadata") or {}).get("ownerReferences") or [] if isinstance(r, dict)]


class GarbageCollector:
    name = "garbage-collector"

    def __init__(
        self,
        client: ObjectClient,
        kinds: list[str],
        wake: Callable[[], None] | None = None,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.kinds = kinds
        self._retries = Retries(client, "garbage-collector-controller", self._mark, wake or (lambda: None), health)
        self._dependents: dict[str, dict[Ref, None]] = {}  # owner uid → dependents
        self._dirty: dict[Ref, None] = {}  # dependents to check for absent owners
        self._owners: dict[Ref, None] = {}  # owners being deleted with a GC finalizer
        for kind in kinds:
            for obj in client.list(kind):
                self._index(kind, obj, None)
                if _owner_refs(obj):
                    self._dirty[_ref(kind, obj)] = None
                if self._finalizing(obj):
                    self._owners[_ref(kind, obj)] = None

    @staticmethod
    def _finalizing(obj: Mapping[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        fins = meta.get("finalizers") or []
        return bool(meta.get("deletionTimestamp")) and (ORPHAN_FINALIZER in fins or FOREGROUND_FINALIZER in fins)

    def _index(self, kind: str, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None) -> None:
        if old is not None:
            for r in _owner_refs(old):
                bucket = self._dependents.get(str(r.get("uid")))
                if bucket is not None:
                    bucket.pop(_ref(kind, old), None)
                    if not bucket:
                        self._dependents.pop(str(r.get("uid")), None)
        if obj is not None:
            for r in _owner_refs(obj):
                self._dependents.setdefault(str(r.get("uid")), {})[_ref(kind, obj)] = None

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind not in self.kinds:
            return
        gone = ev.type == DELETED
        self._index(ev.kind, None if gone else ev.obj, ev.old)
        uid = (ev.obj.get("metadata") or {}).get("uid")
        if gone:
            for dep in list(self._dependents.get(str(uid), {})):
                self._dirty[dep] = None
            self._owners.pop(_ref(ev.kind, ev.obj), None)
            for r in _owner_refs(ev.obj):  # an owner deleted in the foreground may be done now
                owner = self._owner(_ref(ev.kind, ev.obj), r)
                if owner is not None and self._finalizing(owner):
                    self._owners[_ref(str(r.get("kind")), owner)] = None
            return
        if _owner_refs(ev.obj):
            self._dirty[_ref(ev.kind, ev.obj)] = None
        if self._finalizing(ev.obj):
            self._owners[_ref(ev.kind, ev.obj)] = None

    # -- the work ------------------------------------------------------------------------------
    def run(self) -> None:
        owners, self._owners = list(self._owners), {}
        for ref in owners:
            self._retries.attempt(("owner", ref), describe(ref[0], ref[1:]), self._sync_owner)
        dirty, self._dirty = list(self._dirty), {}
        for ref in dirty:
            self._retries.attempt(("dependent", ref), describe(ref[0], ref[1:]), self._sync_dependent)

    def _mark(self, key: tuple[str, Ref]) -> None:
        (self._owners if key[0] == "owner" else self._dirty)[key[1]] = None

    def _sync_owner(self, key: tuple[str, Ref]) -> None:
        obj = self.client.get(*key[1])
        if obj is not None and self._finalizing(obj):
            self._finish_owner(key[1], obj)

    def _sync_dependent(self, key: tuple[str, Ref]) -> None:
        obj = self.client.get(*key[1])
        if obj is not None:
            self._check_dependent(key[1], obj)

    def _owner(self, dependent: Ref, r: Mapping[str, Any]) -> dict[str, Any] | None:
        kind = str(r.get("kind") or "")
        ns = dependent[1] if is_namespaced(kind) else ""
        owner = self.client.get(kind, ns, str(r.get("name") or ""))
        if owner is None or owner["metadata"].get("uid") != r.get("uid"):
            return None
        return owner

    def _check_dependent(self, ref: Ref, obj: dict[str, Any]) -> None:
        """``attemptToDeleteItem``: delete when every owner is gone (in the foreground when an
        owner waits for it), else drop the references to the owners that are gone."""
        refs = _owner_refs(obj)
        if not refs or (obj.get("metadata") or {}).get("deletionTimestamp"):
            return
        owners = [(r, self._owner(ref, r)) for r in refs]
        dangling = [r for r, o in owners if o is None]
        live = [o for _, o in owners if o is not None]
        waiting = [
            o
            for o in live
            if FOREGROUND_FINALIZER in (o["metadata"].get("finalizers") or [])
            and o["metadata"].get("deletionTimestamp")
        ]
        if not dangling and not waiting:
            return
        if len(live) == len(waiting):  # no owner left that wants to keep it
            policy = "Foreground" if waiting else "Background"
            with contextlib.suppress(ApiError):
                self.client.delete(*ref, uid=obj["metadata"]["uid"], propagation=policy)
            return
        if dangling:
            gone = {str(r.get("uid")) for r in dangling}
            self._strip(ref, gone)

    def _strip(self, ref: Ref, uids: set[str]) -> None:
        def put(o: dict[str, Any]) -> dict[str, Any]:
            kept = [r for r in _owner_refs(o) if str(r.get("uid")) not in uids]
            meta = {**o["metadata"], "ownerReferences": kept}
            if not kept:
                meta.pop("ownerReferences")
            return {**o, "metadata": meta}

        with contextlib.suppress(ApiError):
            self.client.patch(*ref, put)

    def _finish_owner(self, ref: Ref, obj: dict[str, Any]) -> None:
        """An owner deleted with Orphan or Foreground propagation."""
        uid = str(obj["metadata"].get("uid"))
        fins = obj["metadata"].get("finalizers") or []
        dependents = [d for d in self._dependents.get(uid, {}) if self.client.get(*d) is not None]
        if ORPHAN_FINALIZER in fins:
            for dep in dependents:
                self._strip(dep, {uid})
            self._remove_finalizer(ref, ORPHAN_FINALIZER)
            return
        blocking = []
        for dep in dependents:
            d = self.client.get(*dep)
            if d is None:
                continue
            blocking.append(dep)
            if not (d.get("metadata") or {}).get("deletionTimestamp"):
                self._check_dependent(dep, d)
        if not blocking:
            self._remove_finalizer(ref, FOREGROUND_FINALIZER)

    def _remove_finalizer(self, ref: Ref, finalizer: str) -> None:
        def put(o: dict[str, Any]) -> dict[str, Any]:
            fins = [f for f in o["metadata"].get("finalizers") or [] if f != finalizer]
            return {**o, "metadata": {**o["metadata"], "finalizers": fins}}

        with contextlib.suppress(ApiError):
            self.client.patch(*ref, put)
