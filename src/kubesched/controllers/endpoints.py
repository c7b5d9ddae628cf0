"""The endpoints controller (``pkg/controller/endpoint``): every Service with a selector has an
Endpoints object of its name listing the pods it selects that have an IP, ready ones under
``addresses`` and the others under ``notReadyAddresses`` (all under ``addresses`` with
``publishNotReadyAddresses``), with the Service's ports resolved against each pod's container ports
(a named targetPort finds its port per pod; a pod without it is left out of that port's subset).
What it shares with the EndpointSlice controller (which pods, which ports) lives here too."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.api.errors import AlreadyExists, Forbidden, NotFound
from kubesched.api.watch import WatchEvent
from kubesched.client.object_client import ObjectClient
from kubesched.controllers.workqueue import Retries
from kubesched.health import LoopHealth, describe

FINISHED = ("Succeeded", "Failed")


def selected_pods(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods a Service's selector picks that can serve: an IP, not finished, not deleted
    (``ShouldPodBeInEndpoints``), in name order."""
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return []
    out = []
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in FINISHED or not status.get("podIP"):
            continue
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in selector.items()):
            out.append(pod)
    return sorted(out, key=lambda p: p["metadata"]["name"])


def ready(pod: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def resolve_port(pod: Mapping[str, Any], port: Mapping[str, Any]) -> int | None:
    """``podutil.FindPort``: a numeric targetPort as it is (the port when unset); a named one is the
    pod's container port of that name and protocol, or None when it has none."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = port.get("protocol") or "TCP"
    for c in (pod.get("spec") or {}).get("containers") or []:
        for cp in c.get("ports") or []:
            if cp.get("name") == target and (cp.get("protocol") or "TCP") == protocol:
                return int(cp.get("containerPort"))
    return None


def target_ref(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {
        "kind": "Pod",
        "namespace": meta.get("namespace") or "default",
        "name": meta["name"],
        "uid": meta.get("uid"),
    }


def subsets(service: Mapping[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Endpoints' subsets: pods grouped by the ports they resolve (``RepackSubsets``)."""
    spec = service.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[tuple[tuple[str, int, str], ...], dict[str, list[dict[str, Any]]]] = {}
    for pod in pods:
        ports = []
        for p in spec.get("ports") or []:
            number = resolve_port(pod, p)
            if number is not None:
                ports.append((str(p.get("name") or ""), number, str(p.get("protocol") or "TCP")))
        key = tuple(ports)
        if not key and spec.get("ports"):
            continue
        address = {"ip": pod["status"]["podIP"], "targetRef": target_ref(pod)}
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            address["nodeName"] = node
        where = "addresses" if publish or ready(pod) else "notReadyAddresses"
        groups.setdefault(key, {"addresses": [], "notReadyAddresses": []})[where].append(address)
    out = []
    for key, addresses in groups.items():
        # RepackSubsets: addresses by IP (then pod UID)
        subset: dict[str, Any] = {
            k: sorted(v, key=lambda a: (_ip_key(a["ip"]), str(a["targetRef"].get("uid"))))
            for k, v in addresses.items()
            if v
        }
        subset["ports"] = [
            {"name": n, "port": number, "protocol": proto} if n else {"port": number, "protocol": proto}
            for n, number, proto in key
        ]
        out.append(subset)
    return out


MAX_CAPACITY = 1000  # addresses an Endpoints object holds (endpoints_controller.go's maxCapacity)
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"


def truncate(subsets: list[dict[str, Any]]) -> bool:
    """``truncateEndpoints``: past 1,000 addresses, not-ready ones are cut first (ready ones too
    when they alone are over), each subset keeping its share rounded up; True when it cut."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_CAPACITY:
        return False
    cut_ready = ready > MAX_CAPACITY
    most, total = (MAX_CAPACITY, ready) if cut_ready else (MAX_CAPACITY - ready, not_ready)
    room = most
    for subset in subsets:
        key = "addresses" if cut_ready else "notReadyAddresses"
        share = min(math.ceil(len(subset.get(key) or []) / total * most), room)
        kept = (subset.get(key) or [])[:share]
        if kept:
            subset[key] = kept
        else:
            subset.pop(key, None)
        if cut_ready:
            subset.pop("notReadyAddresses", None)
        room -= len(kept)
    return True


def _ip_key(ip: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in ip.split("."))
    except ValueError:
        return (0,)


class EndpointsController:
    """A loop of the controller manager: the Services of namespaces touched since the last run
    are reconciled."""

    def __init__(
        self, client: ObjectClient, wake: Callable[[], None] | None = None, health: LoopHealth | None = None
    ) -> None:
        self.client = client
        self._dirty: set[str] = {
            (s.get("metadata") or {}).get("namespace") or "default" for s in client.list("Service")
        }
        self._gone: set[tuple[str, str]] = set()
        self._retries = Retries(client, "endpoints-controller", self._dirty.add, wake or (lambda: None), health)

    def on_event(self, ev: WatchEvent) -> None:
        if ev.kind in ("Service", "Pod", "Endpoints"):
            meta = ev.obj.get("metadata") or {}
            self._dirty.add(meta.get("namespace") or "default")
            if ev.kind == "Service" and ev.type == "DELETED":
                self._gone.add((meta.get("namespace") or "default", str(meta.get("name"))))

    def run(self) -> None:
        gone, self._gone = self._gone, set()
        for ns, name in sorted(gone):  # a Service's Endpoints go with it
            if self.client.get("Service", ns, name) is None and self.client.get("Endpoints", ns, name) is not None:
                with contextlib.suppress(NotFound):
                    self.client.delete("Endpoints", ns, name)
        dirty, self._dirty = self._dirty, set()
        for ns in sorted(dirty):  # a namespace that fails is retried with backoff, the others go on
            self._retries.attempt(ns, describe("Namespace", ns), self._sync_namespace)

    def _sync_namespace(self, ns: str) -> None:
        services = self.client.list("Service", ns)
        if not services:
            return
        pods = self.client.list("Pod", ns)
        for svc in services:
            if (svc.get("spec") or {}).get("selector"):
                self._sync(svc, pods)

    def _sync(self, svc: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        meta = svc["metadata"]
        ns, name = meta.get("namespace") or "default", meta["name"]
        want = subsets(svc, selected_pods(svc, pods))
        over = truncate(want)
        labels = dict(meta.get("labels") or {})
        current = self.client.get("Endpoints", ns, name)

        def annotated(annotations: dict[str, Any]) -> dict[str, Any]:
            rest = {k: v for k, v in annotations.items() if k != OVER_CAPACITY}
            return {**rest, OVER_CAPACITY: "truncated"} if over else rest

        with contextlib.suppress(AlreadyExists, Forbidden):  # made meanwhile; a terminating namespace
            if current is None:
                body: dict[str, Any] = {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                }
                if over:
                    body["metadata"]["annotations"] = annotated({})
                if want:
                    body["subsets"] = want
                self.client.create("Endpoints", body)
            elif (
                (current.get("subsets") or []) != want
                or (current["metadata"].get("labels") or {}) != labels
                or (current["metadata"].get("annotations") or {})
                != annotated(current["metadata"].get("annotations") or {})
            ):
                self.client.patch(
                    "Endpoints",
                    ns,
                    name,
                    lambda o: {
                        **{k: v for k, v in o.items() if k != "subsets"},
                        "metadata": {
                            **o["metadata"],
                            "labels": labels,
                            "annotations": annotated(o["metadata"].get("annotations") or {}),
                        },
                        **({"subsets": want} if want else {}),
                    },
                )
