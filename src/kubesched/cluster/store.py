"""An object store with Kubernetes API semantics: the embedded cluster's storage layer.

One global resourceVersion bumped per write, list + watch from a resourceVersion (replayed from
a bounded revision log; older ones are compacted and answer 410 Expired, as etcd and the watch
cache do), create (AlreadyExists), update with optimistic concurrency (Conflict on a stale
resourceVersion), delete with preconditions and a grace period for bound pods, and the
``pods/binding`` subresource. Objects live in memory; a ``Backend`` (SQLite for the API server)
makes each write durable before it returns. Stored objects are never mutated in place: every
write stores a new top-level dict, so readers may keep references without copying.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kubesched.api.errors import AlreadyExists, ApiError, Conflict, Expired, NotFound
from kubesched.api.kinds import RESOURCES, is_custom
from kubesched.api.watch import ADDED, DELETED, MODIFIED, Selection, Watch, WatchEvent
from kubesched.clock import Clock, VirtualClock, parse_rfc3339, rfc3339

# kind → (apiVersion, namespaced, plural resource name): the stored kinds of ``api.kinds``
KNOWN_KINDS: dict[str, tuple[str, bool, str]] = {
    r.kind: (r.group_version, r.namespaced, r.plural) for r in RESOURCES if not r.virtual and not r.storage_kind
}

Key = tuple[str, str]  # (namespace or "", name)
Admission = Callable[[str, dict[str, Any]], dict[str, Any]]


def is_namespaced(kind: str) -> bool:
    info = KNOWN_KINDS.get(kind)
    return True if info is None else info[1]


def resource_name(kind: str) -> str:
    """The plural resource qualified by its group, as apiserver messages name it
    (``pods``, ``leases.coordination.k8s.io``; a custom resource's kind is that name)."""
    if is_custom(kind):
        return kind
    api_version, _, plural = KNOWN_KINDS.get(kind, ("v1", True, kind.lower() + "s"))
    group = api_version.rpartition("/")[0]
    return f"{plural}.{group}" if group else plural


def conflict(kind: str, name: str, why: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {resource_name(kind)} "{name}": {why}', details=_details(kind, name)
    )


def _details(kind: str, name: str) -> dict[str, Any]:
    if is_custom(kind):
        plural, _, group = kind.partition(".")
        return {"name": name, "group": group, "kind": plural}
    api_version, _, plural = KNOWN_KINDS.get(kind, ("v1", True, kind.lower() + "s"))
    group = api_version.rpartition("/")[0]
    return {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural}


def not_found(kind: str, name: str) -> NotFound:
    return NotFound(f'{resource_name(kind)} "{name}" not found', details=_details(kind, name))


STALE = "the object has been modified; please apply your changes to the latest version and try again"


# kinds whose kube-apiserver strategy sets metadata.generation (1 on create, +1 per spec change):
# the workload controllers' objects, PodDisruptionBudget, and Pod (PodObservedGenerationTracking,
# on by default since v1.34); Lease, Node, Namespace, Service, ConfigMap, Event... have none
GENERATION_KINDS = frozenset(
    {
        "Pod",
        "CustomResourceDefinition",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "ReplicationController",
        "Job",
        "CronJob",
        "PodDisruptionBudget",
        "DeviceClass",
        "ResourceClaimTemplate",
        "FlowSchema",
        "PriorityLevelConfiguration",
    }
)


ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
# kinds whose registry strategy orphans dependents when a delete names no propagationPolicy
# (DefaultGarbageCollectionPolicy: batch/v1 Jobs, for compatibility); the rest delete them
ORPHAN_BY_DEFAULT = frozenset({"Job"})


CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def gc_finalizers(kind: str, finalizers: list[str], propagation: str | None) -> list[str]:
    """``deletionFinalizersForGarbageCollection`` (apiserver ``registry/generic/registry``): the
    object's finalizers after a delete with this propagationPolicy; a CustomResourceDefinition
    also gets the cleanup finalizer, which holds it while its custom resources are deleted
    (``customresourcedefinition/etcd.go``'s Delete, ``apiextensions/cleanup.py``)."""
    if kind == "CustomResourceDefinition" and CRD_CLEANUP_FINALIZER not in finalizers:
        finalizers = [*finalizers, CRD_CLEANUP_FINALIZER]
    if propagation is None:
        if kind not in ORPHAN_BY_DEFAULT:
            return finalizers
        propagation = "Orphan"
    out = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if propagation == "Orphan":
        out.append(ORPHAN_FINALIZER)
    elif propagation == "Foreground":
        out.append(FOREGROUND_FINALIZER)
    return out


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    return meta


class StorageError(ApiError):
    """A commit to the backend failed (disk full, read-only file, I/O error): the writes it held
    were rolled back in memory, and nobody saw them. kube-apiserver answers an etcd failure
    with 500 InternalError."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"Internal error occurred: the write could not be stored: {cause}")


class Backend(Protocol):
    """Durable storage under the Store: records the Store's writes and commits them together."""

    def load(self) -> Loaded: ...

    def append(self, ev: WatchEvent) -> None: ...

    def compact(self, rev: int) -> None: ...

    def pending(self) -> bool:
        """Writes recorded but not yet durable."""
        ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class Loaded:
    """What a Backend holds: current objects by kind, the last revision, and the revision log
    from just after ``compacted`` on."""

    objects: list[tuple[str, dict[str, Any]]]
    revision: int
    compacted: int
    log: list[WatchEvent]


def key_of(kind: str, obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    if is_custom(kind):  # the API server has set (or cleared) the namespace by the CRD's scope
        return meta.get("namespace") or "", meta.get("name") or ""
    ns = (meta.get("namespace") or "default") if is_namespaced(kind) else ""
    return ns, meta.get("name") or ""


# the node labels kube-apiserver's PodTopologyLabelsAdmission copies onto pods bound to the node
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")
# ``rest.BeforeUpdate``: what an update cannot change (a deletion under way included)
SYSTEM_META = ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds")


def system_meta_kept(meta: Mapping[str, Any], old_meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` with the stored object's system fields in place of its own."""
    out = dict(meta)
    for key in SYSTEM_META:
        if key in old_meta:
            out[key] = old_meta[key]
        else:
            out.pop(key, None)
    return out


def _uuid4_text(raw: bytes) -> str:
    """RFC 4122 text of a random (version 4) UUID made from 16 bytes: what ``str(uuid.UUID(int=...,
    version=4))`` gives, at a third of its cost (one is made for every object and Event)."""
    b = bytearray(raw)
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _desired(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


# watch events kept for watches that resume from a resourceVersion; a backend's compaction runs
# once this many revisions have been compacted since the last one
HISTORY = 100_000
COMPACT_EVERY = 1_000


class Store:
    """Objects by kind and (namespace, name); the single source of truth for the embedded cluster."""

    HISTORY: ClassVar[int] = HISTORY

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        seed: int | None = 0,
        backend: Backend | None = None,
        history: int = HISTORY,
    ) -> None:
        """``seed`` None draws UIDs from the OS (a server)."""
        self.compact_every = COMPACT_EVERY
        self.clock: Clock = clock or VirtualClock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {}
        self._rv = 0
        self._watches: list[Watch] = []
        self._history: deque[WatchEvent] = deque()
        self._history_limit = history
        self.compacted_rev = 0
        self._backend_compacted = 0
        self._rng = random.Random(seed) if seed is not None else None
        self.admission: list[Admission] = []
        self.backend = backend
        # writes made but not yet committed (a backend only); watchers see them once committed
        self._uncommitted: list[WatchEvent] = []
        # set by an event loop to commit the writes of one loop iteration together (group
        # commit); None commits each write before it returns
        self.commit_soon: Callable[[], None] | None = None
        # the node's start of a pod, in the binding's own write, where no kubelet runs to start it
        # (``kubelet.instant``, set by simulations): (status, now) -> the started status
        self.on_bind: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
        # where no kubelet runs (simulations), a bound pod's graceful deletion ends when its grace
        # period has passed, as a kubelet would end it; an API server (``workloads``) keeps
        # kube-apiserver's rule: the pod stays Terminating until a kubelet deletes it with grace 0
        self.ends_graceful_deletions = True
        # what other layers derive from the objects and keep with them, by name (the API server's
        # Service IP and node port allocators): a compiled Store takes no attribute it does not declare
        self.derived: dict[str, Any] = {}
        # creates of a cluster's state (``embedded.objects.create_as_given``): admission keeps the
        # identity, status and priority each object is given
        self.as_given = False
        if backend is not None:
            self._load(backend.load())

    def _load(self, loaded: Loaded) -> None:
        for kind, obj in loaded.objects:
            self._objects.setdefault(kind, {})[key_of(kind, obj)] = obj
        self._rv = loaded.revision
        self.compacted_rev = self._backend_compacted = loaded.compacted
        self._history.extend(loaded.log)
        for (ns, name), pod in list(self._objects.get("Pod", {}).items()):
            when = (pod.get("metadata") or {}).get("deletionTimestamp")
            if when:  # a graceful delete under way when the server stopped
                uid = pod["metadata"]["uid"]
                at = parse_rfc3339(when)
                self.clock.call_at(at, functools.partial(self._finalize, "Pod", ns, name, uid))

    # -- helpers ---------------------------------------------------------------------------
    def new_uid(self) -> str:
        """A version 4 UUID, from the OS's random source or, when seeded, the store's RNG."""
        raw = os.urandom(16) if self._rng is None else self._rng.getrandbits(128).to_bytes(16, "big")
        return _uuid4_text(raw)

    @property
    def resource_version(self) -> int:
        return self._rv

    def _emit(self, type_: str, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        ev = WatchEvent(type_, kind, obj, old, self._rv)
        history = self._history
        history.append(ev)
        while len(history) > self._history_limit:
            self.compacted_rev = history.popleft().resource_version
        if self.backend is None:
            for w in self._watches:
                w._offer(ev)
            return
        self.backend.append(ev)
        self._uncommitted.append(ev)
        if self.commit_soon is None:
            self.commit()
        elif len(self._uncommitted) == 1:
            self.commit_soon()

    def pending(self) -> bool:
        """Writes made but not yet committed."""
        return bool(self._uncommitted)

    def commit(self) -> None:
        """Commit every write made since the last commit in one transaction, then show them to
        the watchers. When the backend fails, memory goes back to what it was before those
        writes (no watcher saw them; the revision counter does not go back, so no revision ever
        names two states) and StorageError is raised."""
        events, self._uncommitted = self._uncommitted, []
        if not events:
            return
        assert self.backend is not None
        try:
            self.backend.flush()
        except Exception as exc:
            self._roll_back(events)
            raise StorageError(exc) from exc
        for ev in events:
            for w in self._watches:
                w._offer(ev)
        if self.compacted_rev - self._backend_compacted >= self.compact_every:
            with contextlib.suppress(Exception):  # compaction is housekeeping: retried next time
                self.backend.compact(self.compacted_rev)
                self._backend_compacted = self.compacted_rev

    def _roll_back(self, events: list[WatchEvent]) -> None:
        for ev in reversed(events):
            bucket = self._objects.setdefault(ev.kind, {})
            key = key_of(ev.kind, ev.old if ev.old is not None else ev.obj)
            if ev.old is None:
                bucket.pop(key, None)
            else:
                bucket[key] = ev.old
        failed = {id(ev) for ev in events}
        while self._history and id(self._history[-1]) in failed:
            self._history.pop()

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()

    def _bump(self, obj: dict[str, Any]) -> None:
        self._rv += 1
        obj["metadata"] = {**(obj.get("metadata") or {}), "resourceVersion": str(self._rv)}

    # -- reads -----------------------------------------------------------------------------
    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        obj = self._objects.get(kind, {}).get((namespace if is_namespaced(kind) else "", name))
        if obj is None:
            raise not_found(kind, name)
        return obj

    def try_get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self._objects.get(kind, {}).get((namespace if is_namespaced(kind) else "", name))

    def list_at(self, kind: str, namespace: str | None, revision: int) -> list[dict[str, Any]]:
        """The objects of ``kind`` as they were at ``revision`` (a list with
        ``resourceVersionMatch=Exact``, which kube-apiserver reads from etcd at that revision):
        the current ones with every later write of that kind undone from the log, newest first.
        A revision the log no longer reaches is ``Expired``."""
        if revision < self.compacted_rev:
            raise Expired(f"too old resource version: {revision} ({self.compacted_rev + 1})")
        objs = dict(self._objects.get(kind, {}))
        for ev in reversed(self._history):
            if ev.resource_version <= revision:
                break
            if ev.kind != kind:
                continue
            key = key_of(kind, ev.obj)
            if ev.type == ADDED:
                objs.pop(key, None)
            elif ev.type == MODIFIED and ev.old is not None:
                objs[key] = ev.old
            elif ev.type == DELETED:
                objs[key] = ev.old if ev.old is not None else ev.obj
        if namespace is None:
            return list(objs.values())
        return [o for (ns, _), o in objs.items() if ns == namespace]

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        objs = self._objects.get(kind, {})
        if namespace is None:
            return list(objs.values()), self._rv
        return [o for (ns, _), o in objs.items() if ns == namespace], self._rv

    def kinds(self) -> Iterable[str]:
        return self._objects.keys()

    def watch(
        self,
        kinds: Iterable[str] | None = None,
        resource_version: int | None = None,
        notify: Callable[[], None] | None = None,
        *,
        selections: dict[str, Selection] | None = None,
    ) -> Watch:
        """Subscribe to changes after ``resource_version`` (default: from now), narrowed by
        ``selections`` (``Watch``); a revision older than the log keeps is Expired (410)."""
        if resource_version is not None and resource_version < self.compacted_rev:
            raise Expired(f"too old resource version: {resource_version} ({self.compacted_rev + 1})")
        after = self._rv if resource_version is None else resource_version
        w = Watch(frozenset(kinds) if kinds is not None else None, notify, after, selections)
        if resource_version is not None:
            # the committed log only: the writes still waiting for the group commit (the log's
            # tail) reach this watch when they commit, as they reach every other. The log is in
            # revision order and a watch usually resumes near its end: it is read backwards from
            # the last committed event to the first at or before the revision
            skip = len(self._uncommitted)
            newer: list[WatchEvent] = []
            for ev in reversed(self._history):
                if skip:
                    skip -= 1
                    continue
                if ev.resource_version <= resource_version:
                    break
                newer.append(ev)
            for ev in reversed(newer):
                w._offer(ev)
        self._watches.append(w)
        return w

    def stop_watch(self, w: Watch) -> None:
        if w in self._watches:
            self._watches.remove(w)

    # -- writes ----------------------------------------------------------------------------
    def create(self, kind: str, obj: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """Admit and store a new object; ``dry_run`` admits and checks it without storing."""
        obj = {**obj, "metadata": dict(obj.get("metadata") or {})}
        meta = obj["metadata"]
        if is_namespaced(kind) and not is_custom(kind):
            meta.setdefault("namespace", "default")
        for admit in self.admission:
            obj = admit(kind, obj)
            meta = obj["metadata"]
        key = key_of(kind, obj)
        bucket = self._objects.setdefault(kind, {})
        if key in bucket:
            message = f'{resource_name(kind)} "{key[1]}" already exists'
            if bucket[key]["metadata"].get("deletionTimestamp"):  # genericregistry's Create
                message = f"object is being deleted: {message}"
            raise AlreadyExists(message, details=_details(kind, key[1]))
        if dry_run:
            return obj
        meta.setdefault("uid", self.new_uid())
        meta.setdefault("creationTimestamp", rfc3339(self.clock.now()))
        if kind in GENERATION_KINDS or is_custom(kind):
            meta.setdefault("generation", 1)
        if not self.as_given:  # a cluster's state keeps its terminating pods terminating
            meta.pop("deletionTimestamp", None)
            meta.pop("deletionGracePeriodSeconds", None)
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
            raise conflict(kind, key[1], STALE)
        # the object replaces the stored one, metadata included (labels, annotations, finalizers
        # left out are gone), but for the fields an update cannot change
        meta = system_meta_kept(obj.get("metadata") or {}, old["metadata"])
        meta["name"] = old["metadata"]["name"]
        if "namespace" in old["metadata"]:
            meta["namespace"] = old["metadata"]["namespace"]
        new = {**obj, "metadata": meta}
        self._bump_generation(kind, old, new)
        self._bump(new)
        self._objects[kind][key] = new
        self._emit(MODIFIED, kind, new, old)
        return self._finished(kind, new)

    def mutate(
        self,
        kind: str,
        namespace: str,
        name: str,
        fn: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        generation: bool = True,
    ) -> dict[str, Any]:
        """Read-modify-write without a conflict window (what a PATCH does server side): ``fn``
        returns the whole new object, metadata included. ``generation`` False: a write that
        skips the registry strategy (a binding) leaves metadata.generation as it is."""
        old = self.get(kind, namespace, name)
        new = fn(old)
        new["metadata"] = dict(new["metadata"])  # _bump writes the resourceVersion into it
        if generation:
            self._bump_generation(kind, old, new)
        self._bump(new)
        self._objects[kind][key_of(kind, old)] = new
        self._emit(MODIFIED, kind, new, old)
        return self._finished(kind, new)

    def _finished(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """An object being deleted goes once its last finalizer is removed (kube-apiserver's
        graceful deletion with finalizers); a pod also waits out its grace period, a namespace
        its ``spec.finalizers`` (the namespace controller's)."""
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return obj
        if kind == "Namespace" and (obj.get("spec") or {}).get("finalizers"):
            return obj
        if kind == "Pod" and meta.get("deletionGracePeriodSeconds") and (obj.get("spec") or {}).get("nodeName"):
            return obj  # the grace period's timer removes it
        return self._remove(kind, meta.get("namespace") or "", meta["name"])

    @staticmethod
    def _bump_generation(kind: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        """metadata.generation counts changes of the desired state (spec), for the kinds whose
        registry strategy keeps one (a custom resource's: everything but metadata and status)."""
        spec_changed = kind in GENERATION_KINDS and "spec" in old and old.get("spec") != new.get("spec")
        if spec_changed or (is_custom(kind) and _desired(old) != _desired(new)):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        grace_period_seconds: int | None = None,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation: str | None = None,
    ) -> dict[str, Any]:
        """Delete (with optional UID / resourceVersion preconditions); a bound pod with a grace
        period is marked terminating (and removed when it elapses, ``ends_graceful_deletions``). ``propagation`` is
        DeleteOptions' propagationPolicy: Orphan and Foreground leave the object with the
        garbage collector's finalizer (``orphan``, ``foregroundDeletion``) for it to finish."""
        obj = self.get(kind, namespace, name)
        meta = obj["metadata"]
        if uid and meta.get("uid") != uid:
            raise conflict(
                kind, name, f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}"
            )
        if resource_version and meta.get("resourceVersion") != resource_version:
            raise conflict(
                kind,
                name,
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        finalizers = gc_finalizers(kind, meta.get("finalizers") or [], propagation)
        if finalizers != (meta.get("finalizers") or []) and not meta.get("deletionTimestamp"):
            obj = self.mutate(
                kind, namespace, name, lambda o: {**o, "metadata": {**o["metadata"], "finalizers": finalizers}}
            )
            meta = obj["metadata"]
        if kind == "Namespace" and (obj.get("spec") or {}).get("finalizers"):
            # pkg/registry/core/namespace/storage: Terminating until the namespace controller has
            # deleted the contents and emptied spec.finalizers
            if meta.get("deletionTimestamp"):
                return obj
            now = self.clock.now()
            return self.mutate(
                kind,
                namespace,
                name,
                lambda o: {
                    **o,
                    "metadata": {**o["metadata"], "deletionTimestamp": rfc3339(now), "deletionGracePeriodSeconds": 0},
                    "status": {**(o.get("status") or {}), "phase": "Terminating"},
                },
            )
        if meta.get("finalizers"):  # marked, and kept until the finalizers are removed
            if meta.get("deletionTimestamp"):
                return obj
            return self.mutate(kind, namespace, name, functools.partial(_mark_deleted, self.clock.now(), 0))
        if kind == "Pod":
            grace = grace_period_seconds
            if grace is None:
                grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            running = bool((obj.get("spec") or {}).get("nodeName"))
            if running and grace and grace > 0:
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    return obj
                now = self.clock.now()
                marked = self.mutate(kind, namespace, name, functools.partial(_mark_deleted, now + grace, grace))
                if self.ends_graceful_deletions:
                    marked_uid: str = marked["metadata"]["uid"]
                    ending = functools.partial(self._finalize, kind, namespace, name, marked_uid)
                    self.clock.call_at(now + grace, ending)
                return marked
        return self._remove(kind, namespace, name)

    def _finalize(self, kind: str, namespace: str, name: str, uid: str) -> None:
        obj = self.try_get(kind, namespace, name)
        meta = obj["metadata"] if obj is not None else {}
        # still the object marked then (a rolled-back mark leaves no deletionTimestamp)
        if meta.get("uid") == uid and meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(kind, namespace, name)

    def _remove(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        key = (namespace if is_namespaced(kind) else "", name)
        old = self._objects[kind].pop(key)
        self._rv += 1
        # the DELETED event carries the object's last state at the deletion revision
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self._rv)}}
        self._emit(DELETED, kind, gone, old)
        return gone

    # -- subresources ----------------------------------------------------------------------
    def topology_labels(self, node_name: str) -> dict[str, str]:
        """The node's labels the PodTopologyLabelsAdmission plugin copies onto a pod bound to it
        (``plugin/pkg/admission/podtopologylabels``: zone and region; none for a missing node)."""
        node = self.try_get("Node", "", node_name) if node_name else None
        labels = ((node or {}).get("metadata") or {}).get("labels") or {}
        return {k: labels[k] for k in TOPOLOGY_LABELS if k in labels}

    def bind(
        self,
        namespace: str,
        name: str,
        uid: str,
        node_name: str,
        annotations: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """POST pods/{name}/binding: set spec.nodeName once, with the Binding's annotations and
        labels (``setPodNodeAndMetadata``) in the same write; the embedded kubelet starts the pod.
        The node's zone and region labels join the Binding's, as the PodTopologyLabelsAdmission
        plugin (beta, on in v1.37) adds them to every binding to a node."""
        labels = {**(labels or {}), **self.topology_labels(node_name)}
        pod = self.get("Pod", namespace, name)
        # messages of pkg/registry/core/pod/storage/storage.go (assignPod / setPodNodeAndMetadata)
        if uid and pod["metadata"]["uid"] != uid:
            # the storage layer's precondition error, wrapped as a conflict on the pod (etcd3 store)
            raise Conflict(
                f'Operation cannot be fulfilled on pods "{name}": StorageError: invalid object, Code: 4, '
                f"Key: /registry/pods/{namespace}/{name}, ResourceVersion: 0, AdditionalErrorMsg: "
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {pod['metadata']['uid']}",
                details={"name": name, "kind": "pods"},
            )
        if pod["metadata"].get("deletionTimestamp"):
            raise Conflict(
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is being deleted, '
                "cannot be assigned to a host",
                details={"name": name, "kind": "pods/binding"},
            )
        if (pod.get("spec") or {}).get("nodeName"):
            raise Conflict(
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned '
                f'to node "{pod["spec"]["nodeName"]}"',
                details={"name": name, "kind": "pods/binding"},
            )
        if (pod.get("spec") or {}).get("schedulingGates"):  # no binding of a pod not ready to schedule
            raise Conflict(
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} has non-empty '
                ".spec.schedulingGates",
                details={"name": name, "kind": "pods/binding"},
            )
        assign = functools.partial(_assign, node_name, rfc3339(self.clock.now()), self.on_bind, annotations, labels)
        # the binding storage sets spec.nodeName without the pod strategy: no new generation
        return self.mutate("Pod", namespace, name, assign, generation=False)


# What a write does to the stored object, as functions of the module given to ``mutate`` with their
# arguments bound (functools.partial), not closures: compiled, a closure and its environment hold
# each other, and every pod bound or deleted would leave a cycle for the collector.


def _mark_deleted(when: float, grace: int, o: dict[str, Any]) -> dict[str, Any]:
    """A graceful deletion begun: deletionTimestamp (when it ends) and its grace period."""
    meta = {**o["metadata"], "deletionTimestamp": rfc3339(when), "deletionGracePeriodSeconds": grace}
    return {**o, "metadata": meta}


def _assign(
    node_name: str,
    now: str,
    start: Callable[[dict[str, Any], str], dict[str, Any]] | None,
    annotations: dict[str, str] | None,
    labels: dict[str, str] | None,
    o: dict[str, Any],
) -> dict[str, Any]:
    """pods/binding: the node, PodScheduled True, no nomination (ClearingNominatedNodeNameAfterBinding,
    beta, on: it was only a hint), the binding's annotations and labels."""
    status = dict(o.get("status") or {})
    conds = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now})
    status["conditions"] = conds
    status.pop("nominatedNodeName", None)
    if start is not None:
        status = start(status, now)
    out = {**o, "spec": {**o["spec"], "nodeName": node_name}, "status": status}
    if annotations or labels:
        meta = dict(o["metadata"])
        if annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
        if labels:
            meta["labels"] = {**(meta.get("labels") or {}), **labels}
        out["metadata"] = meta
    return out
