"""What every workload controller shares (client-go's shared informers and workqueue, and
``pkg/controller/controller_utils.go``): an index of dependents by their controller's UID, a
queue of keys to reconcile, pods made from a template with a controller reference, and the
pod predicates (active, ready, available) the controllers count by."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.names import SAFE_ALPHABET
from kubesched.api.watch import DELETED, WatchEvent
from kubesched.api.workloads import default_pod_template, pruned
from kubesched.client.object_client import ObjectClient
from kubesched.clock import parse_rfc3339
from kubesched.controllers.recorder import Recorder
from kubesched.controllers.workqueue import Later, Retries
from kubesched.health import LoopHealth, describe

Key = tuple[str, str]  # (namespace, name)
# apimachinery's util/rand alphabet (no vowels, no confusable digits): SafeEncodeString's letters


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """``metav1.GetControllerOf``: the ownerReference with controller true."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def owner_reference(owner: Mapping[str, Any], *, block: bool = True) -> dict[str, Any]:
    """``metav1.NewControllerRef``: controller and blockOwnerDeletion set."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": block,
    }


class OwnerIndex:
    """Dependents of each kind by their controller's UID, kept from watch events (the informers'
    ``controllerUID`` indexers upstream controllers add)."""

    def __init__(self, client: ObjectClient, kinds: Iterable[str]) -> None:
        self.client = client
        self.kinds = tuple(kinds)
        self._by_owner: dict[tuple[str, str], dict[Key, None]] = {}
        for kind in self.kinds:
            for obj in client.list(kind):
                self._add(kind, obj)

    def _add(self, kind: str, obj: Mapping[str, Any]) -> None:
        ref = controller_of(obj)
        if ref is not None:
            self._by_owner.setdefault((kind, str(ref.get("uid") or "")), {})[key_of(obj)] = None

    def _remove(self, kind: str, obj: Mapping[str, Any]) -> None:
        ref = controller_of(obj)
        if ref is not None:
            bucket = self._by_owner.get((kind, str(ref.get("uid") or "")))
            if bucket is not None:
                bucket.pop(key_of(obj), None)
                if not bucket:
                    del self._by_owner[(kind, str(ref.get("uid") or ""))]

    def apply_created(self, kind: str, obj: Mapping[str, Any]) -> None:
        """Index an object this process just wrote, before its watch event arrives (what
        upstream's expectations guard against: counting it twice or not at all)."""
        self._add(kind, obj)

    def apply(self, ev: WatchEvent) -> None:
        if ev.kind not in self.kinds:
            return
        if ev.old is not None:
            self._remove(ev.kind, ev.old)
        if ev.type != DELETED:
            self._add(ev.kind, ev.obj)

    def owned(self, kind: str, owner_uid: str) -> list[dict[str, Any]]:
        """The current objects of ``kind`` whose controller is ``owner_uid``."""
        out = []
        for ns, name in self._by_owner.get((kind, owner_uid), {}):
            obj = self.client.get(kind, ns, name)
            if obj is not None:
                ref = controller_of(obj)
                if ref is not None and ref.get("uid") == owner_uid:
                    out.append(obj)
        return out


class Controller:
    """A reconcile loop over keys of one kind: events mark keys dirty, ``run`` reconciles each
    once (the workqueue), and ``requeue_after`` brings a key back when time alone changes its
    answer (minReadySeconds, a pod's run time). A key whose reconcile raises is logged with its
    object, counted in ``health`` and retried with the workqueue's per-item backoff, as upstream's
    ``processNextWorkItem`` does; every other key goes on."""

    name = ""
    kind = ""
    # the kinds whose events this controller reacts to (besides its own kind)
    watches: tuple[str, ...] = ()

    def __init__(
        self, client: ObjectClient, index: OwnerIndex, wake: Callable[[], None], health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self.index = index
        self.wake = wake
        self.dirty: dict[Key, None] = {}
        self._later = Later(client, self._due, wake)
        self._retries = Retries(client, f"{self.name}-controller", self._due, wake, health)
        self.recorder = Recorder(client, f"{self.name}-controller")
        for obj in client.list(self.kind):
            self.dirty[key_of(obj)] = None

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind == self.kind:
            self.dirty[key_of(ev.obj)] = None
            return
        for obj in (ev.old, ev.obj):
            if obj is None:
                continue
            ref = controller_of(obj)
            if ref is not None and ref.get("kind") == self.kind:
                self.dirty[((obj.get("metadata") or {}).get("namespace") or "", str(ref.get("name")))] = None

    def run(self) -> None:
        keys, self.dirty = list(self.dirty), {}
        for key in keys:
            self._retries.attempt(key, describe(self.kind, key), self._sync)

    def _sync(self, key: Key) -> None:
        obj = self.client.get(self.kind, *key)
        if obj is not None:
            self.reconcile(obj)

    def reconcile(self, obj: dict[str, Any]) -> None:
        raise NotImplementedError

    def requeue_after(self, key: Key, seconds: float) -> None:
        self._later.at(key, self.client.clock.now() + max(seconds, 0.0))

    def _due(self, key: Key) -> None:
        self.dirty[key] = None

    def create_pod(self, owner: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
        """Create a pod the owner controls (indexed at once) with the controllers' events
        (``SuccessfulCreate`` / ``FailedCreate``); None when the API refused it."""
        try:
            created = self.client.create("Pod", pod)
        except ApiError as err:
            self.recorder.event(owner, "Warning", "FailedCreate", f"Error creating: {err}")
            return None
        self.index.apply_created("Pod", created)
        self.recorder.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return created

    def sync_revision(self, owner: dict[str, Any], name: str) -> None:
        """``ControllerRevision`` history of a StatefulSet or DaemonSet (``pkg/controller/history``):
        the owner's current template as revision ``name`` (its data a strategic merge patch that
        restores the template, what ``kubectl rollout undo`` applies), numbered after the newest;
        a template seen before takes the next number again; the oldest unused ones past
        revisionHistoryLimit go."""
        spec = owner.get("spec") or {}
        template = spec.get("template") or {}
        revisions = self.index.owned("ControllerRevision", owner["metadata"]["uid"])
        newest = max((int(r.get("revision") or 0) for r in revisions), default=0)
        mine = next((r for r in revisions if r["metadata"]["name"] == name), None)
        ns = owner["metadata"].get("namespace") or "default"
        if mine is None:
            data = {"spec": {"template": {**template, "$patch": "replace"}}}
            revision = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                    "ownerReferences": [owner_reference(owner)],
                },
                "data": data,
                "revision": newest + 1,
            }
            with contextlib.suppress(ApiError):
                self.index.apply_created("ControllerRevision", self.client.create("ControllerRevision", revision))
        elif int(mine.get("revision") or 0) < newest:
            with contextlib.suppress(ApiError):
                self.client.patch("ControllerRevision", ns, name, lambda o: {**o, "revision": newest + 1})
        limit = int(spec.get("revisionHistoryLimit", 10))
        old = sorted((r for r in revisions if r["metadata"]["name"] != name), key=lambda r: int(r.get("revision") or 0))
        for r in old[: max(0, len(old) - limit)]:
            with contextlib.suppress(ApiError):
                self.client.delete("ControllerRevision", ns, r["metadata"]["name"], uid=r["metadata"].get("uid"))

    def availability(self, key: Key, pods: list[dict[str, Any]], min_ready_seconds: int) -> tuple[int, int]:
        """(ready, available) among ``pods``; the key comes back when a ready pod will have been
        ready for minReadySeconds."""
        now = self.client.clock.now()
        ready = available = 0
        wait: float | None = None
        for p in pods:
            left = available_in(p, min_ready_seconds, now)
            if left is None:
                continue
            ready += 1
            if left == 0:
                available += 1
            else:
                wait = left if wait is None else min(wait, left)
        if wait is not None:
            self.requeue_after(key, wait)
        return ready, available


# -- pods ------------------------------------------------------------------------------------------
def pod_from_template(
    template: Mapping[str, Any], owner: Mapping[str, Any], *, name: str = "", generate_name: str = ""
) -> dict[str, Any]:
    """``GetPodFromTemplate``: the template's labels, annotations and spec, in the owner's
    namespace, controlled by it."""
    tmeta = template.get("metadata") or {}
    meta: dict[str, Any] = {
        "namespace": owner["metadata"].get("namespace") or "default",
        "labels": dict(tmeta.get("labels") or {}),
        "ownerReferences": [owner_reference(owner)],
    }
    if tmeta.get("annotations"):
        meta["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    if name:
        meta["name"] = name
    else:
        meta["generateName"] = generate_name or f"{owner['metadata']['name']}-"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": dict(template.get("spec") or {})}


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_finished(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_active(pod: Mapping[str, Any]) -> bool:
    """``IsPodActive``: not finished and not being deleted."""
    return not is_finished(pod) and not is_terminating(pod)


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod's Ready condition last became True, or None when it is not Ready."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            if c.get("status") != "True":
                return None
            when = c.get("lastTransitionTime")
            return parse_rfc3339(when) if when else 0.0
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    return ready_since(pod) is not None


def available_in(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> float | None:
    """``IsPodAvailable``: 0 when Ready for minReadySeconds, the seconds still to wait when Ready
    for less, None when not Ready."""
    since = ready_since(pod)
    if since is None:
        return None
    if min_ready_seconds <= 0:
        return 0.0
    return max(0.0, since + min_ready_seconds - now)


def template_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """``controller.ComputeHash``: a 32-bit hash of the pod template (and the collision count)
    written with SafeEncodeString's letters. Upstream hashes Go's printed struct; this hashes
    the template's canonical JSON, so names differ from a real cluster's but are as stable."""
    data = json.dumps(pruned(default_pod_template(dict(template))), sort_keys=True, separators=(",", ":"))
    if collision_count:
        data += str(collision_count)
    digits = str(int.from_bytes(hashlib.blake2b(data.encode(), digest_size=4).digest(), "big"))
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in digits)


def omit_zero(status: dict[str, Any], *keys: str) -> dict[str, Any]:
    """Go's ``omitempty``: these counters are left out when zero, as the API returns them."""
    for k in keys:
        if not status.get(k):
            status.pop(k, None)
    return status


def status_changed(obj: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    return dict(obj.get("status") or {}) != dict(status)


def write_status(client: ObjectClient, kind: str, obj: Mapping[str, Any], status: dict[str, Any]) -> None:
    """``UpdateStatus`` when the status differs from what is stored (a patch, no conflict)."""
    if not status_changed(obj, status):
        return
    ns, name = key_of(obj)
    uid = obj["metadata"].get("uid")

    def put(o: dict[str, Any]) -> dict[str, Any]:
        if o["metadata"].get("uid") != uid:
            return o
        return {**o, "status": status}

    client.patch(kind, ns, name, put)
