"""The scheduler's only way to the cluster: a small client interface, and its in-process implementation.

A client of a real API server implements the same ``ClusterClient`` protocol (lightkube's
synchronous ``Client`` maps onto it one call per method) without touching the scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from kubesched.clock import rfc3339
from kubesched.cluster.disruption import evict
from kubesched.cluster.store import Store, Watch


class ClusterClient(Protocol):
    """What kube-scheduler asks of the apiserver: informers (list/watch) and a handful of writes."""

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]: ...

    def watch(self, kinds: Iterable[str], resource_version: int) -> Watch: ...

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]: ...

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None: ...

    def patch_pod_status(
        self, namespace: str, name: str, condition: dict[str, Any] | None, nominated_node_name: str | None
    ) -> None: ...

    def delete(self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None) -> None: ...

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> None: ...

    def record_event(self, type_: str, reason: str, action: str, regarding: dict[str, Any], message: str) -> None: ...


class InProcessClient:
    """ClusterClient over the embedded Store (no serialization, no network)."""

    def __init__(self, store: Store, *, reporting_controller: str = "default-scheduler") -> None:
        self.store = store
        self.reporting_controller = reporting_controller
        self._event_seq = 0

    def list(self, kind: str, namespace: str | None = None) -> tuple[list[dict[str, Any]], int]:
        return self.store.list(kind, namespace)

    def watch(self, kinds: Iterable[str], resource_version: int) -> Watch:
        return self.store.watch(kinds, resource_version)

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return self.store.get(kind, namespace, name)

    def bind(self, namespace: str, name: str, uid: str, node_name: str) -> None:
        self.store.bind(namespace, name, uid, node_name)

    def patch_pod_status(
        self, namespace: str, name: str, condition: dict[str, Any] | None, nominated_node_name: str | None
    ) -> None:
        """Strategic-merge patch of status.conditions[type] and status.nominatedNodeName."""
        now = rfc3339(self.store.clock.now())

        def patch(o: dict[str, Any]) -> dict[str, Any]:
            status = dict(o.get("status") or {})
            if condition is not None:
                conds = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
                conds.append({**condition, "lastTransitionTime": now})
                status["conditions"] = conds
            if nominated_node_name is not None:
                if nominated_node_name:
                    status["nominatedNodeName"] = nominated_node_name
                else:
                    status.pop("nominatedNodeName", None)
            return {**o, "status": status}

        self.store.mutate("Pod", namespace, name, patch)

    def delete(self, kind: str, namespace: str, name: str, grace_period_seconds: int | None = None) -> None:
        self.store.delete(kind, namespace, name, grace_period_seconds)

    def evict(self, namespace: str, name: str, grace_period_seconds: int | None = None) -> None:
        """pods/eviction: raises TooManyRequests (429) when a PodDisruptionBudget forbids it."""
        evict(self.store, namespace, name, grace_period_seconds)

    def record_event(self, type_: str, reason: str, action: str, regarding: dict[str, Any], message: str) -> None:
        """events.k8s.io/v1 recorder: one Event object per call, stored like any other object."""
        meta = regarding.get("metadata") or {}
        self._event_seq += 1
        self.store.create(
            "Event",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{meta.get('name')}.{self._event_seq:x}", "namespace": meta.get("namespace")},
                "type": type_,
                "reason": reason,
                "action": action,
                "reportingController": self.reporting_controller,
                "regarding": {
                    "kind": regarding.get("kind", "Pod"),
                    "namespace": meta.get("namespace"),
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                },
                "note": message[: 1024 - 4] + " ..." if len(message) > 1024 else message,
            },
        )
