"""Services as kube-apiserver's service registry makes them: API defaults (``SetDefaults_Service``),
a cluster IP from the service range (``--service-cluster-ip-range``) and node ports from 30000–32767
allocated on create and kept on update, and the ``kubernetes`` Service of the default namespace
that points at the API server itself. Nothing routes to these addresses: no kube-proxy runs."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from kubesched.api.errors import Invalid
from kubesched.cluster.store import Store

SERVICE_RANGE = ipaddress.IPv4Network("10.0.0.0/16")  # kube-apiserver's default is 10.0.0.0/24
KUBERNETES_IP = str(SERVICE_RANGE.network_address + 1)  # the range's first address, as upstream reserves it
NODE_PORTS = range(30000, 32768)


Key = tuple[str, str]  # a Service's namespace and name


class Allocations:
    """kube-apiserver's service IP and node port allocators (``pkg/registry/core/service/
    ipallocator``, ``portallocator``): which cluster IPs and node ports are taken and by which
    Service, kept current from the store's Service events (a create costs what it allocates, not a
    scan of every Service). A create reserves what it takes before it is stored; a reservation
    whose Service never appears (refused later, a dry run) is released when a later request meets
    it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._watch: Any = None
        self._owned: dict[Key, tuple[frozenset[int], frozenset[int]]] = {}
        self.ips: dict[int, Key] = {}
        self.ports: dict[int, Key] = {}
        self._pending: set[Key] = set()
        first = int(SERVICE_RANGE.network_address) + 1
        self._ip_range = range(first, int(SERVICE_RANGE.broadcast_address))
        self._ip_next = 0
        self._port_next = 0

    def sync(self) -> None:
        """Catch up with the Services stored since the last request (all of them, the first time)."""
        if self._watch is None:
            self._watch = self.store.watch(["Service"])
            for svc in self.store.list("Service")[0]:
                self._set(_key(svc), svc)
            return
        for ev in self._watch.drain():
            self._set(_key(ev.obj), None if ev.type == "DELETED" else ev.obj)

    def _set(self, key: Key, svc: dict[str, Any] | None) -> None:
        self._pending.discard(key)
        ips, ports = self._owned.pop(key, (frozenset(), frozenset()))
        for ip in ips:
            if self.ips.get(ip) == key:
                del self.ips[ip]
        for port in ports:
            if self.ports.get(port) == key:
                del self.ports[port]
        if svc is not None:
            self.reserve(key, *_taken(svc))
            self._pending.discard(key)

    def reserve(self, key: Key, ips: frozenset[int], ports: frozenset[int]) -> None:
        """What a Service about to be stored takes (confirmed by its event)."""
        self._owned[key] = (ips, ports)
        self._pending.add(key)
        for ip in ips:
            self.ips[ip] = key
        for port in ports:
            self.ports[port] = key

    def _holder(self, table: dict[int, Key], value: int, key: Key) -> Key | None:
        """Who holds ``value`` other than ``key`` (a stale reservation is released here)."""
        owner = table.get(value)
        if owner is None or owner == key:
            return None
        if owner in self._pending and self.store.try_get("Service", *owner) is None:
            self._set(owner, None)
            return None
        return owner

    def ip_taken(self, key: Key, ip: int) -> bool:
        return self._holder(self.ips, ip, key) is not None

    def port_taken(self, key: Key, port: int) -> bool:
        return self._holder(self.ports, port, key) is not None

    def free_ip(self, key: Key) -> int | None:
        """The next free address after the last one handed out (the range's first is the
        ``kubernetes`` Service's), None when the range is full."""
        span = self._ip_range
        for step in range(len(span)):
            i = (self._ip_next + step) % len(span)
            ip = span[i]
            if ip != _KUBERNETES and not self.ip_taken(key, ip):
                self._ip_next = i + 1
                return ip
        return None

    def free_port(self, key: Key, also: set[int]) -> int | None:
        """The next free node port (not in ``also``, those this request already took)."""
        for step in range(len(NODE_PORTS)):
            i = (self._port_next + step) % len(NODE_PORTS)
            port = NODE_PORTS[i]
            if port not in also and not self.port_taken(key, port):
                self._port_next = i + 1
                return port
        return None


_KUBERNETES = int(ipaddress.IPv4Address(KUBERNETES_IP))


def _key(svc: dict[str, Any]) -> Key:
    meta = svc.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _taken(svc: dict[str, Any]) -> tuple[frozenset[int], frozenset[int]]:
    spec = svc.get("spec") or {}
    ips = set()
    for ip in spec.get("clusterIPs") or [spec.get("clusterIP")]:
        try:
            ips.add(int(ipaddress.IPv4Address(ip)))
        except (ValueError, TypeError):
            continue  # None, "None", or not an address
    ports = {
        p["nodePort"] for p in spec.get("ports") or [] if isinstance(p, dict) and isinstance(p.get("nodePort"), int)
    }
    return frozenset(ips), frozenset(ports)


def allocations(store: Store) -> Allocations:
    """The store's allocators (one per store, made on first use)."""
    found = store.derived.get("service-allocations")
    if not isinstance(found, Allocations):
        found = store.derived["service-allocations"] = Allocations(store)
    return found


def _invalid(name: str, field: str, value: Any, message: str, reason: str = "FieldValueInvalid") -> Invalid:
    if reason == "FieldValueForbidden":
        shown = f"Forbidden: {message}"
    else:
        shown = f"Invalid value: {json.dumps(value)}: {message}"
    return Invalid(
        f'Service "{name}" is invalid: {field}: {shown}',
        details={
            "name": name,
            "kind": "Service",
            "causes": [{"reason": reason, "message": shown, "field": field}],
        },
    )


def default_ports(ports: list[Any]) -> list[Any]:
    """Each port's protocol TCP and targetPort its port when unset."""
    out = []
    for p in ports:
        port = dict(p or {})
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
        out.append(port)
    return out


def _node_ports(
    book: Allocations, key: Key, name: str, spec: dict[str, Any], kept: dict[tuple[Any, Any], int]
) -> set[int]:
    """Each port's node port: the one given (in the range and not another Service's), else the
    one it had (``kept``, by port and protocol), else a free one; the ports taken."""
    kind = spec.get("type")
    taken: set[int] = set()
    if kind not in ("NodePort", "LoadBalancer"):
        for i, port in enumerate(spec["ports"]):
            if port.get("nodePort"):
                raise _invalid(
                    name,
                    f"spec.ports[{i}].nodePort",
                    port["nodePort"],
                    f"may not be used when `type` is '{kind}'",
                    "FieldValueForbidden",
                )
        return taken
    ports = []
    for i, port in enumerate(spec["ports"]):
        wanted = port.get("nodePort") or kept.get((port.get("port"), port.get("protocol", "TCP")))
        at = f"spec.ports[{i}].nodePort"
        if wanted:
            if not isinstance(wanted, int) or wanted not in NODE_PORTS:
                first, last = NODE_PORTS[0], NODE_PORTS[-1]
                why = f"provided port is not in the valid range. The range of valid ports is {first}-{last}"
                raise _invalid(name, at, wanted, why)
            if wanted in taken or book.port_taken(key, wanted):
                raise _invalid(name, at, wanted, "provided port is already allocated")
        else:
            wanted = book.free_port(key, taken)
            if wanted is None:
                raise _invalid(
                    name, at, 0, f"failed to allocate a nodePort: range is full ({NODE_PORTS[0]}-{NODE_PORTS[-1]})"
                )
        taken.add(wanted)
        ports.append({**port, "nodePort": wanted})
    spec["ports"] = ports
    return taken


def create(store: Store, obj: dict[str, Any]) -> dict[str, Any]:
    """A new Service with its defaults, cluster IP and node ports."""
    spec = dict(obj.get("spec") or {})
    name = str((obj.get("metadata") or {}).get("name") or "")
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec["ports"] = default_ports(spec.get("ports") or [])
    if kind == "ExternalName":
        return {**obj, "spec": spec}
    spec.setdefault("internalTrafficPolicy", "Cluster")
    book = allocations(store)
    book.sync()
    key = (str((obj.get("metadata") or {}).get("namespace") or "default"), name)
    wanted = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
    ips: set[int] = set()
    if wanted == "None":
        spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
    elif wanted:
        try:
            address = ipaddress.IPv4Address(wanted)
        except ValueError:
            raise _invalid(name, "spec.clusterIPs[0]", wanted, "must be a valid IP address") from None
        if address not in SERVICE_RANGE:
            why = f"the provided IP ({wanted}) is not in the valid range. The range of valid IPs is {SERVICE_RANGE}"
            raise _invalid(name, "spec.clusterIPs", wanted, f"failed to allocate IP {wanted}: {why}")
        if book.ip_taken(key, int(address)):
            raise _invalid(
                name, "spec.clusterIPs", wanted, f"failed to allocate IP {wanted}: provided IP is already allocated"
            )
        spec["clusterIP"], spec["clusterIPs"] = wanted, [wanted]
        ips.add(int(address))
    else:
        free = book.free_ip(key)
        if free is None:
            raise _invalid(
                name, "spec.clusterIPs", "", f"failed to allocate a serviceIP: range is full ({SERVICE_RANGE})"
            )
        shown = str(ipaddress.IPv4Address(free))
        spec["clusterIP"], spec["clusterIPs"] = shown, [shown]
        ips.add(free)
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
        if kind == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
    ports = _node_ports(book, key, name, spec, {})
    book.reserve(key, frozenset(ips), frozenset(ports))
    return {**obj, "spec": spec}


def update(store: Store, new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """An update keeps the allocated cluster IP and the node ports a port leaves out, as the
    registry's ``patchAllocatedValues`` does (``kubectl apply`` sends neither); a change of type
    drops the node ports that no longer apply (``dropTypeDependentFields``) and allocates those a
    NodePort or LoadBalancer now needs; a node port given is checked as on create."""
    spec, before = dict(new.get("spec") or {}), old.get("spec") or {}
    for field in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if field in before and not spec.get(field):
            spec[field] = before[field]
    kind = spec.setdefault("type", before.get("type", "ClusterIP"))
    spec["ports"] = default_ports(spec.get("ports") or [])
    had_node_ports = before.get("type") in ("NodePort", "LoadBalancer")
    kept = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in before.get("ports") or []}
    if had_node_ports and kind not in ("NodePort", "LoadBalancer"):
        # ``sameNodePorts``: no node port that was not there before
        given = {p["nodePort"] for p in spec["ports"] if p.get("nodePort")}
        if given <= {p["nodePort"] for p in before.get("ports") or [] if p.get("nodePort")}:
            spec["ports"] = [{k: v for k, v in p.items() if k != "nodePort"} for p in spec["ports"]]
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    book = allocations(store)
    book.sync()
    name = str((old.get("metadata") or {}).get("name") or "")
    key = (str((old.get("metadata") or {}).get("namespace") or ""), name)
    _node_ports(book, key, name, spec, kept if had_node_ports else {})
    return {**new, "spec": spec}


def kubernetes_service(port: int) -> dict[str, Any]:
    """The ``default/kubernetes`` Service kube-apiserver keeps: HTTPS on 443 to its own port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_IP,
            "clusterIPs": [KUBERNETES_IP],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
        },
    }
