"""The resource quota controller (``pkg/controller/resourcequota``): every ResourceQuota's status,
``hard`` as specified and ``used`` summed over the objects of its namespace it covers, recomputed
when an object it counts or the quota itself changes (the replenishment the controller's monitors
trigger). Admission charges creates against the store as it stands (``cluster.quota``); this keeps
what ``kubectl get quota`` and ``describe`` show."""

from __future__ import annotations

import functools
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.watch import WatchEvent
from kubesched.client.objects import ObjectClient
from kubesched.cluster import quota


class ResourceQuotaController:
    """A loop of the controller manager: namespaces touched since the last run are recounted."""

    def __init__(self, client: ObjectClient) -> None:
        self.client = client
        self._dirty: set[str] = {
            (q.get("metadata") or {}).get("namespace") or "default" for q in client.list("ResourceQuota")
        }

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in quota.COUNTED:
            if ev.kind == "ResourceQuota" and ev.old is not None and ev.old.get("spec") == ev.obj.get("spec"):
                return  # a status write (ours) needs no recount
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for namespace in sorted(dirty):
            quotas = self.client.list("ResourceQuota", namespace)
            if not quotas:
                continue
            kinds = quota.kinds_for(quotas)
            objects = [(kind, o) for kind in sorted(kinds) for o in self.client.list(kind, namespace)]
            for q in quotas:
                status = quota.status(q, objects)
                if status == q.get("status"):
                    continue
                try:
                    self.client.patch(
                        "ResourceQuota",
                        namespace,
                        q["metadata"]["name"],
                        functools.partial(_with_status, status=status),
                    )
                except ApiError:
                    self._dirty.add(namespace)  # the next run tries again


def _with_status(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": status}
