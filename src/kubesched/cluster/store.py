"""An in-process object store with Kubernetes API semantics (the embedded cluster's apiserver).

resourceVersion per write, list + watch, create (AlreadyExists), update with optimistic
concurrency (Conflict on a stale resourceVersion), delete with a grace period for pods, the
``pods/binding`` subresource and Events. Stored objects are never mutated in place: every write
stores a new top-level dict, so readers may keep references without copying.
"""

from __future__ import annotations

import random
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubesched.clock import Clock, VirtualClock, rfc3339
from kubesched.cluster.errors import AlreadyExists, Conflict, NotFound

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

# kind → (apiVersion, namespaced, plural resource name)
KNOWN_KINDS: dict[str, tuple[str, bool, str]] = {
    "Pod": ("v1", True, "pods"),
    "Node": ("v1", False, "nodes"),
    "Namespace": ("v1", False, "namespaces"),
    "Event": ("v1", True, "events"),
    "Service": ("v1", True, "services"),
    "ReplicationController": ("v1", True, "replicationcontrollers"),
    "PersistentVolumeClaim": ("v1", True, "persistentvolumeclaims"),
    "PriorityClass": ("scheduling.k8s.io/v1", False, "priorityclasses"),
    "PodDisruptionBudget": ("policy/v1", True, "poddisruptionbudgets"),
    "ReplicaSet": ("apps/v1", True, "replicasets"),
    "StatefulSet": ("apps/v1", True, "statefulsets"),
    "Lease": ("coordination.k8s.io/v1", True, "leases"),
}

Key = tuple[str, str]  # (namespace or "", name)
Admission = Callable[[str, dict[str, Any]], dict[str, Any]]


def is_namespaced(kind: str) -> bool:
    info = KNOWN_KINDS.get(kind)
    return True if info is None else info[1]


@dataclass(slots=True)
class WatchEvent:
    type: str
    kind: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    resource_version: int


class Watch:
    """Events delivered after ``resource_version``; the consumer drains them like an informer."""

    def __init__(self, kinds: frozenset[str] | None) -> None:
        self.kinds = kinds
        self._buffer: deque[WatchEvent] = deque()

    def _offer(self, ev: WatchEvent) -> None:
        if self.kinds is None or ev.kind in self.kinds:
            self._buffer.append(ev)

    def __bool__(self) -> bool:
        return bool(self._buffer)

    def drain(self) -> list[WatchEvent]:
        out = list(self._buffer)
        self._buffer.clear()
        return out

    def pop(self) -> WatchEvent | None:
        return self._buffer.popleft() if self._buffer else None


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    return meta


def key_of(kind: str, obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    ns = (meta.get("namespace") or "default") if is_namespaced(kind) else ""
    return ns, meta.get("name") or ""


class Store:
    """Objects by kind and (namespace, name); the single source of truth for the embedded cluster."""

    HISTORY = 100_000

    def __init__(self, clock: Clock | None = None, *, seed: int = 0) -> None:
        self.clock: Clock = clock or VirtualClock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {}
        self._rv = 0
        self._watches: list[Watch] = []
        self._history: deque[WatchEvent] = deque(maxlen=self.HISTORY)
        self._rng = random.Random(seed)
        self.admission: list[Admission] = []

    # -- helpers ---------------------------------------------------------------------------
    def new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    @property
    def resource_version(self) -> int:
        return self._rv

    def _emit(self, type_: str, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        ev = WatchEvent(type_, kind, obj, old, self._rv)
        self._history.append(ev)
        for w in self._watches:
            w._offer(ev)

    def _bump(self, obj: dict[str, Any]) -> None:
        self._rv += 1
        obj["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(self._rv)}

    # -- reads -----------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self._objects.get(kind, {}).get((namespace if is_namespaced(kind) else "", name))
        if obj is None:
            plural = KNOWN_KINDS.get(kind, ("", True, kind.lower() + "s"))[2]
            raise NotFound(f'{plural} "{name}" not found')
        return obj

    def try_get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(kind, {}).get((namespace if is_namespaced(kind) else "", name))

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        objs = self._objects.get(kind, {})
        if namespace is None:
            return list(objs.values()), self._rv
        return [o for (ns, _), o in objs.items() if ns == namespace], self._rv

    def kinds(self) -> Iterable[str]:
        return self._objects.keys()

    def watch(self, kinds: Iterable[str] | None = None, resource_version: int | None = None) -> Watch:
        """Subscribe to changes after ``resource_version`` (default: from now)."""
        w = Watch(frozenset(kinds) if kinds is not None else None)
        if resource_version is not None:
            for ev in self._history:
                if ev.resource_version > resource_version:
                    w._offer(ev)
        self._watches.append(w)
        return w

    def stop_watch(self, w: Watch) -> None:
        if w in self._watches:
            self._watches.remove(w)

    # -- writes ----------------------------------------------------------------------------
    def create(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
        meta = obj["metadata"]
        if is_namespaced(kind):
            meta.setdefault("namespace", "default")
        for admit in self.admission:
            obj = admit(kind, obj)
            meta = obj["metadata"]
        key = key_of(kind, obj)
        bucket = self._objects.setdefault(kind, {})
        if key in bucket:
            plural = KNOWN_KINDS.get(kind, ("", True, kind.lower() + "s"))[2]
            raise AlreadyExists(f'{plural} "{key[1]}" already exists')
        meta.setdefault("uid", self.new_uid())
        meta.setdefault("creationTimestamp", rfc3339(self.clock.now()))
        meta.pop("deletionTimestamp", None)
        self._bump(obj)
        bucket[key] = obj
        self._emit(ADDED, kind, obj, None)
        return obj

    def update(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Replace an object; a non-empty metadata.resourceVersion must match the stored one."""
        key = key_of(kind, obj)
        old = self.get(kind, key[0], key[1])
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            plural = KNOWN_KINDS.get(kind, ("", True, kind.lower() + "s"))[2]
            raise Conflict(
                f'Operation cannot be fulfilled on {plural} "{key[1]}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
        new = {**obj, "metadata": {**old["metadata"], **(obj.get("metadata") or {})}}
        new["metadata"]["uid"] = old["metadata"]["uid"]
        new["metadata"]["creationTimestamp"] = old["metadata"]["creationTimestamp"]
        self._bump(new)
        self._objects[kind][key] = new
        self._emit(MODIFIED, kind, new, old)
        return new

    def mutate(
        self, kind: str, namespace: str, name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        """Read-modify-write without a conflict window (what a PATCH does server side)."""
        old = self.get(kind, namespace, name)
        new = fn(old)
        new["metadata"] = {**old["metadata"], **new.get("metadata", {})}
        self._bump(new)
        self._objects[kind][key_of(kind, old)] = new
        self._emit(MODIFIED, kind, new, old)
        return new

    def delete(self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None) -> dict[str, Any]:
        """Delete; a bound pod with a grace period is marked terminating and removed when it elapses."""
        obj = self.get(kind, namespace, name)
        if kind == "Pod":
            grace = grace_period_seconds
            if grace is None:
                grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            running = bool((obj.get("spec") or {}).get("nodeName"))
            if running and grace and grace > 0:
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    return obj
                now = self.clock.now()

                def mark(o: dict[str, Any]) -> dict[str, Any]:
                    meta = {
                        **o["metadata"],
                        "deletionTimestamp": rfc3339(now + grace),
                        "deletionGracePeriodSeconds": grace,
                    }
                    return {**o, "metadata": meta}

                marked = self.mutate(kind, namespace, name, mark)
                uid = marked["metadata"]["uid"]
                self.clock.call_at(now + grace, lambda: self._finalize(kind, namespace, name, uid))
                return marked
        return self._remove(kind, namespace, name)

    def _finalize(self, kind: str, namespace: str, name: str, uid: str) -> None:
        obj = self.try_get(kind, namespace, name)
        if obj is not None and obj["metadata"]["uid"] == uid:
            self._remove(kind, namespace, name)

    def _remove(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        key = (namespace if is_namespaced(kind) else "", name)
        old = self._objects[kind].pop(key)
        self._rv += 1
        self._emit(DELETED, kind, old, old)
        return old

    # -- subresources ----------------------------------------------------------------------
    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> dict[str, Any]:
        """POST pods/{name}/binding: set spec.nodeName once; the embedded kubelet starts the pod."""
        pod = self.get("Pod", namespace, name)
        if uid and pod["metadata"]["uid"] != uid:
            raise Conflict(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {pod['metadata']['uid']}"
            )
        if (pod.get("spec") or {}).get("nodeName"):
            raise Conflict(f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"')
        if pod["metadata"].get("deletionTimestamp"):
            raise Conflict(f"pod {name} is being deleted, cannot be assigned to a host")
        now = rfc3339(self.clock.now())

        def assign(o: dict[str, Any]) -> dict[str, Any]:
            status = dict(o.get("status") or {})
            conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now})
            status.update(conditions=conds, phase="Running", startTime=now)
            return {**o, "spec": {**o["spec"], "nodeName": node_name}, "status": status}

        return self.mutate("Pod", namespace, name, assign)
