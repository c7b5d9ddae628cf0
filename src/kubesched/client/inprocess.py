"""``InProcessClient``: the ClusterClient over the embedded Store (no serialization, no network)."""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubesched.api.errors import AlreadyExists, ApiError, NotFound
from kubesched.api.fields import parse_field_selector, predicate
from kubesched.api.names import generate_name
from kubesched.api.watch import Selection, Watch
from kubesched.client.eventseries import EventSeriesCache
from kubesched.clock import rfc3339
from kubesched.cluster.disruption import evict
from kubesched.cluster.event_conversion import EventRecorder, to_core
from kubesched.cluster.store import StorageError, Store

log = logging.getLogger("kubesched.client")


class InProcessClient:
    """ClusterClient over the embedded Store (no serialization, no network)."""

    def __init__(
        self, store: Store, *, reporting_controller: str = "default-scheduler", reporting_instance: str = "kubesched"
    ) -> None:
        self.store = store
        self.recorder = EventRecorder(reporting_controller, reporting_instance)
        self.event_series = EventSeriesCache(store.clock.now())
        # the embedded cluster's controllers, run by ``settle`` when they share this thread
        # (simulate); without them ``settle`` waits for controllers running elsewhere
        self.settlers: list[Callable[[], bool]] = []

    def watch_custom(self, kind: str, group: str, version: str, plural: str) -> None:
        """Nothing to start: the Store keeps custom resources under their CRD's name."""

    def list_and_watch(
        self, kinds: Iterable[str], field_selectors: Mapping[str, str] | None = None
    ) -> tuple[dict[str, list[dict[str, Any]]], Watch]:
        kinds = list(kinds)
        selections: dict[str, Selection] = {}
        for kind, text in (field_selectors or {}).items():
            selections[kind] = predicate(parse_field_selector(text, kind))
        current: dict[str, list[dict[str, Any]]] = {}
        for kind in kinds:
            objs = self.store.list(kind)[0]
            selects = selections.get(kind)
            current[kind] = objs if selects is None else [o for o in objs if selects(o)]
        return current, self.store.watch(kinds, self.store.resource_version, selections=selections or None)

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return self.store.list(kind, namespace)

    def watch(self, kinds: Iterable[str], resource_version: int) -> Watch:
        return self.store.watch(kinds, resource_version)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return self.store.get(kind, namespace, name)

    def bind(
        self, namespace: str, name: str, uid: str, node_name: str, annotations: dict[str, str] | None = None
    ) -> None:
        self.store.bind(namespace, name, uid, node_name, annotations)

    def bind_later(self, namespace: str, name: str, uid: str, node_name: str) -> concurrent.futures.Future[None] | None:
        return None  # a binding here is a call on the store: nothing to wait for

    def patch_pod_status(
        self, namespace: str, name: str, condition: dict[str, Any] | None, nominated_node_name: str | None
    ) -> None:
        """Strategic-merge patch of status.conditions[type] and status.nominatedNodeName."""
        now = rfc3339(self.store.clock.now())
        self.store.mutate("Pod", namespace, name, functools.partial(_patch_status, now, condition, nominated_node_name))

    def annotate_pod(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        self.store.mutate("Pod", namespace, name, functools.partial(_annotate, annotations))

    def delete(
        self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None, *, uid: str | None = None
    ) -> None:
        self.store.delete(kind, namespace, name, grace_period_seconds, uid=uid)

    def update_claim_status(self, claim: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """resourceclaims/status: the store's optimistic concurrency decides (409 if ``claim`` is stale)."""
        return self.store.update("ResourceClaim", {**claim, "status": status})

    def update_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        return self.store.update("ResourceClaim", claim)

    def settle(self, seconds: float) -> bool:
        if not self.settlers:
            time.sleep(seconds)
            return True
        changed = False
        for sync in self.settlers:
            changed = bool(sync()) or changed
        if not changed and self.store.pending():
            # the controllers' watches show committed writes only, and the group commit waits for
            # this loop iteration to end: commit what this cycle wrote (its claims' selected
            # node) now, and look again, or a WaitForFirstConsumer claim's first PreBind times out
            try:
                self.store.commit()
            except StorageError:
                return False
            for sync in self.settlers:
                changed = bool(sync()) or changed
        return changed

    def update_volume(self, pv: dict[str, Any]) -> dict[str, Any]:
        return self.store.update("PersistentVolume", pv)

    def update_volume_claim(self, pvc: dict[str, Any]) -> dict[str, Any]:
        return self.store.update("PersistentVolumeClaim", pvc)

    def create_claim(self, claim: dict[str, Any]) -> dict[str, Any]:
        """As kube-apiserver creates it: a ``generateName`` gets five random characters (seeded by
        the owner, so that a simulation gives the same names again)."""
        meta = dict(claim.get("metadata") or {})
        if meta.get("name") or not meta.get("generateName"):
            return self.store.create("ResourceClaim", claim)
        owner = next((r.get("uid") for r in meta.get("ownerReferences") or []), "")
        rng = random.Random(f"{owner}/{meta['generateName']}")
        for _ in range(8):
            name = generate_name(str(meta["generateName"]), rng)
            try:
                return self.store.create("ResourceClaim", {**claim, "metadata": {**meta, "name": name}})
            except AlreadyExists:
                continue
        raise AlreadyExists(f'resourceclaims "{meta["generateName"]}" could not be given a unique name')

    def delete_claim(self, namespace: str, name: str) -> None:
        self.store.delete("ResourceClaim", namespace, name)

    def patch_pod_group_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        self.store.mutate("PodGroup", namespace, name, functools.partial(_merge_status, status))

    def patch_pod_status_fields(self, namespace: str, name: str, fields: dict[str, Any]) -> None:
        self.store.mutate("Pod", namespace, name, functools.partial(_merge_status, fields))

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> None:
        """pods/eviction: raises TooManyRequests (429) when a PodDisruptionBudget forbids it."""
        evict(self.store, namespace, name, grace_period_seconds)

    def record_event(
        self,
        type_: str,
        reason: str,
        action: str,
        regarding: dict[str, Any],
        message: str,
        related: dict[str, Any] | None = None,
    ) -> None:
        """events.k8s.io/v1 recorder, stored in the core v1 form; repeats become a series. The
        broadcaster's periodic rounds run here when due, on the store's clock (a simulation has
        no timers of its own for them) and from ``flush_events``."""
        now = self.store.clock.now()
        if now >= self.event_series.next_due():
            self.flush_events()
        ev = self.recorder.event(now, type_, reason, action, regarding, message, related)
        write = self.event_series.observe(ev, now)
        if write is not None:
            self._write_event(write)

    def flush_events(self, final: bool = False) -> None:
        """The broadcaster's rounds that are due: series refreshed every 30 minutes, finished
        after 6 quiet minutes. ``final``: every series is written now (the end of a simulation,
        so that the stored counts are the whole story)."""
        es = self.event_series
        for due in es.drain() if final else es.due(self.store.clock.now()):
            self._write_event(due.event)

    def _write_event(self, ev: dict[str, Any]) -> None:
        """``recordEvent``: a series is PATCHed onto the stored event (created when it is gone). The
        recorder never fails its caller: an event the server refuses (its namespace is terminating,
        a quota) is logged and dropped, as client-go's broadcaster drops it."""
        meta = ev["metadata"]
        try:
            if ev.get("series") is not None:
                series = ev["series"]
                try:
                    self.store.mutate("Event", meta["namespace"], meta["name"], lambda o: {**o, "series": series})
                    return
                except NotFound:
                    pass
            self.store.create("Event", to_core(ev))
        except ApiError as exc:  # tools/events recordEvent: "Server rejected event (will not retry!)"
            log.error(
                '"Server rejected event (will not retry!)" event="%s/%s" reason="%s" err="%s"',
                meta.get("namespace"),
                meta.get("name"),
                ev.get("reason"),
                exc.message,
            )


# The patches above as functions of the module with their arguments bound (functools.partial), not
# closures: compiled, a closure and its environment hold each other, a cycle left for the collector
# by every pod whose status or annotations are written.


def _patch_status(
    now: str, condition: dict[str, Any] | None, nominated_node_name: str | None, o: dict[str, Any]
) -> dict[str, Any]:
    status = dict(o.get("status") or {})
    if condition is not None:
        conds = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
        conds.append({**condition, "lastTransitionTime": condition.get("lastTransitionTime") or now})
        status["conditions"] = conds
    if nominated_node_name is not None:
        if nominated_node_name:
            status["nominatedNodeName"] = nominated_node_name
        else:
            status.pop("nominatedNodeName", None)
    return {**o, "status": status}


def _annotate(annotations: dict[str, str], o: dict[str, Any]) -> dict[str, Any]:
    meta = dict(o["metadata"])
    meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
    return {**o, "metadata": meta}


def _merge_status(fields: dict[str, Any], o: dict[str, Any]) -> dict[str, Any]:
    return {**o, "status": {**(o.get("status") or {}), **fields}}
