"""The disruption controller (``pkg/controller/disruption``): every PodDisruptionBudget's status
recomputed whenever a pod or budget of its namespace changes, with expectedPods from the scale of
the pods' controllers (a ReplicaSet's Deployment, a StatefulSet, a ReplicaSet or
ReplicationController); the status itself is ``cluster.disruption.budget_status``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.client.object_client import ObjectClient
from kubesched.cluster.disruption import budget_status


class DisruptionController:
    """Keeps every budget's status current; ``sync`` handles the changes seen since the last call."""

    def __init__(self, client: ObjectClient, notify: Callable[[], None] | None = None) -> None:
        self.client = client
        self._watch = client.watch(["Pod", "PodDisruptionBudget"], notify)
        for ns in sorted(
            {(p.get("metadata") or {}).get("namespace") or "default" for p in client.list("PodDisruptionBudget")}
        ):
            self.sync_namespace(ns)

    def sync(self) -> None:
        namespaces = set()
        for ev in self._watch.drain():
            own_write = ev.kind == "PodDisruptionBudget" and ev.type == "MODIFIED" and ev.old is not None
            if own_write and ev.old.get("spec") == ev.obj.get("spec"):  # type: ignore[union-attr]
                continue  # a status write (ours, or an eviction's) needs no recount
            namespaces.add((ev.obj.get("metadata") or {}).get("namespace") or "default")
        for ns in sorted(namespaces):
            self.sync_namespace(ns)

    def sync_namespace(self, namespace: str) -> None:
        pdbs = self.client.list("PodDisruptionBudget", namespace)
        if not pdbs:
            return
        pods = self.client.list("Pod", namespace)
        now = self.client.clock.now()
        for pdb in pdbs:
            status = budget_status(pdb, pods, now, self._scale)
            if {k: v for k, v in status.items() if k != "conditions"} == {
                k: v for k, v in (pdb.get("status") or {}).items() if k != "conditions"
            }:
                continue
            name = pdb["metadata"]["name"]
            try:
                self.client.patch(
                    "PodDisruptionBudget", namespace, name, functools.partial(_with_status, status=status)
                )
            except ApiError:
                continue

    def _scale(self, pod: dict[str, Any]) -> int | None:
        """The replicas of the pod's controller, as the disruption controller's finders read the
        scale subresource: a ReplicaSet's Deployment when it has one."""
        meta = pod.get("metadata") or {}
        ref = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
        if ref is None:
            return None
        ns = meta.get("namespace") or "default"
        owner = self.client.get(str(ref.get("kind")), ns, str(ref.get("name")))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        if ref.get("kind") == "ReplicaSet":
            top = next((r for r in owner["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if top is not None and top.get("kind") == "Deployment":
                deployment = self.client.get("Deployment", ns, str(top.get("name")))
                if deployment is not None:
                    owner = deployment
        replicas = (owner.get("spec") or {}).get("replicas")
        return int(replicas) if isinstance(replicas, int) else None


def _with_status(obj: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "status": status}
