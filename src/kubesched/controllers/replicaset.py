"""The ReplicaSet controller (``pkg/controller/replicaset``): keeps ``spec.replicas`` active pods
made from the template, deletes the surplus in upstream's order, and reports replicas,
fullyLabeledReplicas, readyReplicas and availableReplicas."""

from __future__ import annotations

import contextlib
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.clock import parse_rfc3339
from kubesched.controllers.base import (
    Controller,
    is_active,
    is_ready,
    key_of,
    omit_zero,
    pod_from_template,
    ready_since,
    write_status,
)

BURST_REPLICAS = 500  # replicaset.BurstReplicas: creations or deletions per sync


def _phase_rank(pod: dict[str, Any]) -> int:
    return {"Pending": 0, "Unknown": 1, "Running": 2}.get((pod.get("status") or {}).get("phase") or "Pending", 0)


def _restarts(pod: dict[str, Any]) -> int:
    return max(
        (c.get("restartCount") or 0 for c in (pod.get("status") or {}).get("containerStatuses") or []), default=0
    )


def _created(pod: dict[str, Any]) -> float:
    when = (pod.get("metadata") or {}).get("creationTimestamp")
    return parse_rfc3339(when) if when else 0.0


def deletion_order(pods: list[dict[str, Any]], related: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``getPodsToDelete`` / ``ActivePodsWithRanks``: the pods a scale-down removes first:
    unscheduled before scheduled, Pending before Unknown before Running, not ready before ready,
    those sharing a node with more related pods first, then the most recently ready, the most
    restarted and the newest."""
    per_node: dict[str, int] = {}
    for p in related:
        node = (p.get("spec") or {}).get("nodeName") or ""
        if node and is_active(p):
            per_node[node] = per_node.get(node, 0) + 1

    def rank(p: dict[str, Any]) -> tuple[Any, ...]:
        node = (p.get("spec") or {}).get("nodeName") or ""
        since = ready_since(p)
        return (
            bool(node),
            _phase_rank(p),
            is_ready(p),
            -per_node.get(node, 0),
            -(since or 0.0),
            -_restarts(p),
            -_created(p),
        )

    return sorted(pods, key=rank)


class ReplicaSetController(Controller):
    name = "replicaset"
    kind = "ReplicaSet"
    watches = ("Pod",)
    api_version = "apps/v1"

    def reconcile(self, rs: dict[str, Any]) -> None:
        meta, spec = rs["metadata"], rs.get("spec") or {}
        owned = self.index.owned("Pod", meta["uid"])
        active = [p for p in owned if is_active(p)]
        if not meta.get("deletionTimestamp"):
            self._manage(rs, active, int(spec.get("replicas", 1)))
            owned = self.index.owned("Pod", meta["uid"])
            active = [p for p in owned if is_active(p)]
        self._status(rs, active)

    def _manage(self, rs: dict[str, Any], active: list[dict[str, Any]], replicas: int) -> None:
        diff = len(active) - replicas
        if diff < 0:
            template = (rs.get("spec") or {}).get("template") or {}
            for _ in range(min(-diff, BURST_REPLICAS)):
                if self.create_pod(rs, pod_from_template(template, rs)) is None:
                    return
        elif diff > 0:
            for pod in deletion_order(active, active)[: min(diff, BURST_REPLICAS)]:
                ns, name = key_of(pod)
                with contextlib.suppress(ApiError):
                    self.client.delete("Pod", ns, name, uid=pod["metadata"]["uid"])
                    self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    def _status(self, rs: dict[str, Any], active: list[dict[str, Any]]) -> None:
        spec = rs.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        labeled = 0
        for p in active:
            labels = (p.get("metadata") or {}).get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                labeled += 1
        ready, available = self.availability(key_of(rs), active, int(spec.get("minReadySeconds") or 0))
        status = dict(rs.get("status") or {})
        status.update(
            replicas=len(active),
            fullyLabeledReplicas=labeled,
            readyReplicas=ready,
            availableReplicas=available,
            observedGeneration=rs["metadata"].get("generation", 1),
        )
        omit_zero(status, "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        write_status(self.client, self.kind, rs, status)
