"""The EndpointSlice controller (``pkg/controller/endpointslice``): every Service with a selector
has EndpointSlices (``discovery.k8s.io/v1``, IPv4) owned by it, labelled with its name and the
controller's, holding at most 100 endpoints each: a pod's IP, its ready/serving/terminating
conditions, its node and zone, with the ports the Service resolves on it (pods that resolve the
ports alike share slices). Slices are named from the Service's name as ``generateName`` does."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from kubesched.api.errors import AlreadyExists, Forbidden, NotFound
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.controllers.base import owner_reference
from kubesched.controllers.endpoints import ready, resolve_port, selected_pods, target_ref
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
MAX_PER_SLICE = 100  # --max-endpoints-per-slice
ZONE = "topology.kubernetes.io/zone"


def desired(service: dict[str, Any], pods: list[dict[str, Any]], zones: dict[str, str]) -> list[dict[str, Any]]:
    """The slices' ``ports`` and ``endpoints``, one group per port set, at most 100 endpoints each."""
    spec = service.get("spec") or {}
    groups: dict[tuple[tuple[str, int, str], ...], list[dict[str, Any]]] = {}
    for pod in pods:
        key = tuple(
            (str(p.get("name") or ""), number, str(p.get("protocol") or "TCP"))
            for p in spec.get("ports") or []
            if (number := resolve_port(pod, p)) is not None
        )
        node = (pod.get("spec") or {}).get("nodeName")
        endpoint: dict[str, Any] = {
            "addresses": [pod["status"]["podIP"]],
            "conditions": {"ready": ready(pod), "serving": ready(pod), "terminating": False},
            "targetRef": target_ref(pod),
        }
        if node:
            endpoint["nodeName"] = node
            if zones.get(node):
                endpoint["zone"] = zones[node]
        groups.setdefault(key, []).append(endpoint)
    out = []
    for key, endpoints in groups.items():
        ports = [{"name": n, "port": number, "protocol": proto} for n, number, proto in key]
        for i in range(0, len(endpoints), MAX_PER_SLICE):
            out.append({"ports": ports, "endpoints": endpoints[i : i + MAX_PER_SLICE]})
    return out or [{"ports": [], "endpoints": []}]


class EndpointSliceController:
    """A loop of the controller manager: the Services of namespaces touched since the last run
    get their slices made, updated or deleted (a Service's slices go with it, as its dependents)."""

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self._dirty: set[str] = {
            (s.get("metadata") or {}).get("namespace") or "default" for s in client.list("Service")
        }
        self._retries = Retries(client, "endpointslice-controller", self._dirty.add, wake or (lambda: None), health)
        self._zones: dict[str, str] = {}

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in ("Service", "Pod", "EndpointSlice", "Node"):
            if ev.kind == "Node":
                if _zone(ev.obj) == _zone(ev.old) and ev.type == "MODIFIED":
                    return  # only a node's zone shows in the slices
                self._dirty |= {
                    (s.get("metadata") or {}).get("namespace") or "default" for s in self.client.list("Service")
                }
                return
            self._dirty.add((ev.obj.get("metadata") or {}).get("namespace") or "default")

    def run(self) -> None:
        dirty, self._dirty = self._dirty, set()
        if not dirty:
            return
        self._zones = {n["metadata"]["name"]: _zone(n) for n in self.client.list("Node")}
        for ns in sorted(dirty):  # a namespace that fails is retried with backoff, the others go on
            self._retries.attempt(ns, describe("Namespace", ns), self._sync_namespace)

    def _sync_namespace(self, ns: str) -> None:
        services = [s for s in self.client.list("Service", ns) if (s.get("spec") or {}).get("selector")]
        slices = [
            s
            for s in self.client.list("EndpointSlice", ns)
            if (s["metadata"].get("labels") or {}).get(MANAGED_BY) == CONTROLLER
        ]
        if not services and not slices:
            return
        pods = self.client.list("Pod", ns)
        for svc in services:
            mine = [
                s for s in slices if (s["metadata"].get("labels") or {}).get(SERVICE_NAME) == svc["metadata"]["name"]
            ]
            self._sync(svc, selected_pods(svc, pods), self._zones, mine)
        names = {s["metadata"]["name"] for s in services}
        for orphan in slices:  # a Service gone, or its selector removed
            if (orphan["metadata"].get("labels") or {}).get(SERVICE_NAME) not in names:
                with contextlib.suppress(NotFound):
                    self.client.delete("EndpointSlice", ns, orphan["metadata"]["name"])

    def _sync(
        self, svc: dict[str, Any], pods: list[dict[str, Any]], zones: dict[str, str], mine: list[dict[str, Any]]
    ) -> None:
        meta = svc["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        labels = {**(meta.get("labels") or {}), SERVICE_NAME: name, MANAGED_BY: CONTROLLER}
        want = desired(svc, pods, zones)
        existing = sorted(mine, key=lambda s: s["metadata"]["name"])
        for i, body in enumerate(want):
            with contextlib.suppress(AlreadyExists, Forbidden):  # made meanwhile; a terminating namespace
                if i < len(existing):
                    current = existing[i]
                    if (
                        (current.get("endpoints") or []) == body["endpoints"]
                        and (current.get("ports") or []) == body["ports"]
                        and (current["metadata"].get("labels") or {}) == labels
                    ):
                        continue
                    self.client.patch(
                        "EndpointSlice",
                        ns,
                        current["metadata"]["name"],
                        functools.partial(_with, labels=labels, body=body),
                    )
                else:
                    self.client.create(
                        "EndpointSlice",
                        {
                            "apiVersion": "discovery.k8s.io/v1",
                            "kind": "EndpointSlice",
                            "metadata": {
                                "generateName": f"{name}-",
                                "namespace": ns,
                                "labels": labels,
                                "ownerReferences": [owner_reference(svc)],
                            },
                            "addressType": "IPv4",
                            **body,
                        },
                    )
        for extra in existing[len(want) :]:
            with contextlib.suppress(NotFound):
                self.client.delete("EndpointSlice", ns, extra["metadata"]["name"])


def _with(obj: dict[str, Any], labels: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}, **body}


def _zone(node: dict[str, Any] | None) -> str:
    return str((((node or {}).get("metadata") or {}).get("labels") or {}).get(ZONE) or "")
