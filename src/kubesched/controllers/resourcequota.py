"""The resource quota controller (``pkg/controller/resourcequota``): every ResourceQuota's status,
``hard`` as specified and ``used`` summed over the objects of its namespace it covers, recomputed
when an object it counts or the quota itself changes (the replenishment the controller's monitors
trigger). Admission charges creates against the store as it stands (``cluster.quota``); this keeps
what ``kubectl get quota`` and ``describe`` show."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.cluster import quota
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe


class ResourceQuotaController:
    """A loop of the controller manager: namespaces touched since the last run are recounted."""

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self._dirty: set[str] = {
            (q.get("metadata") or {}).get("namespace") or "default" for q in client.list("ResourceQuota")
        }
        self._retries = Retries(client, "resourcequota-controller", self._dirty.add, wake or (lambda: None), health)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in quota.COUNTED:
            if ev.kind == "ResourceQuota" and ev.old is not None and ev.old.get("spec") == ev.obj.get("spec"):
                return  # a status write (ours) needs no recount
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for namespace in sorted(dirty):  # a namespace that fails is retried with backoff, the others go on
            self._retries.attempt(namespace, describe("Namespace", namespace), self._sync)

    def _sync(self, namespace: str) -> None:
        quotas = self.client.list("ResourceQuota", namespace)
        if not quotas:
            return
        kinds = quota.kinds_for(quotas)
        objects = [(kind, o) for kind in sorted(kinds) for o in self.client.list(kind, namespace)]
        for q in quotas:
            status = quota.status(q, objects)
            if status != q.get("status"):
                name = q["metadata"]["name"]
                self.client.patch("ResourceQuota", namespace, name, functools.partial(_with_status, status=status))


def _with_status(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": status}
