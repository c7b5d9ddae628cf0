"""Services as kube-apiserver's service registry makes them: API defaults (``SetDefaults_Service``),
a cluster IP from the service range (``--service-cluster-ip-range``) and node ports from 30000–32767
allocated on create and kept on update, and the ``kubernetes`` Service of the default namespace
that points at the API server itself. Nothing routes to these addresses: no kube-proxy runs."""

from __future__ import annotations

import ipaddress
from typing import Any

from kubesched.api.errors import Invalid
from kubesched.cluster.store import Store

SERVICE_RANGE = ipaddress.IPv4Network("10.0.0.0/16")  # kube-apiserver's default is 10.0.0.0/24
KUBERNETES_IP = str(SERVICE_RANGE.network_address + 1)  # the range's first address, as upstream reserves it
NODE_PORTS = range(30000, 32768)


def _used(store: Store) -> tuple[set[str], set[int]]:
    ips: set[str] = set()
    ports: set[int] = set()
    for svc in store.list("Service")[0]:
        spec = svc.get("spec") or {}
        ips.update(str(ip) for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None")
        ports.update(int(p["nodePort"]) for p in spec.get("ports") or [] if isinstance(p.get("nodePort"), int))
    return ips, ports


def _invalid(name: str, field: str, value: Any, message: str) -> Invalid:
    shown = f'Invalid value: "{value}": {message}'
    return Invalid(
        f'Service "{name}" is invalid: {field}: {shown}',
        details={
            "name": name,
            "kind": "Service",
            "causes": [{"reason": "FieldValueInvalid", "message": shown, "field": field}],
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
    ips, node_ports = _used(store)
    wanted = spec.get("clusterIP") or ((spec.get("clusterIPs") or [None])[0])
    if wanted == "None":
        spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
    elif wanted:
        try:
            inside = ipaddress.IPv4Address(wanted) in SERVICE_RANGE
        except ValueError:
            raise _invalid(name, "spec.clusterIPs[0]", wanted, "must be a valid IP address") from None
        if not inside:
            why = f"the provided IP ({wanted}) is not in the valid range. The range of valid IPs is {SERVICE_RANGE}"
            raise _invalid(name, "spec.clusterIPs", wanted, f"failed to allocate IP {wanted}: {why}")
        if wanted in ips:
            raise _invalid(
                name, "spec.clusterIPs", wanted, f"failed to allocate IP {wanted}: provided IP is already allocated"
            )
        spec["clusterIP"], spec["clusterIPs"] = wanted, [wanted]
    else:
        free = next(
            (str(ip) for ip in SERVICE_RANGE.hosts() if str(ip) not in ips and str(ip) != KUBERNETES_IP),
            None,
        )
        if free is None:
            raise _invalid(
                name, "spec.clusterIPs", "", f"failed to allocate a serviceIP: range is full ({SERVICE_RANGE})"
            )
        spec["clusterIP"], spec["clusterIPs"] = free, [free]
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
        if kind == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        free_ports = (p for p in NODE_PORTS if p not in node_ports)
        ports = []
        for port in spec["ports"]:
            if not port.get("nodePort"):
                port = {**port, "nodePort": next(free_ports)}
            ports.append(port)
        spec["ports"] = ports
    return {**obj, "spec": spec}


def keep_allocated(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """An update that leaves out the cluster IP or a port's node port keeps the allocated ones, as
    the registry's ``patchAllocatedValues`` does (``kubectl apply`` sends neither)."""
    spec, before = dict(new.get("spec") or {}), old.get("spec") or {}
    for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if key in before and not spec.get(key):
            spec[key] = before[key]
    by_port = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in before.get("ports") or []}
    spec["ports"] = [
        {**p, "nodePort": by_port[(p.get("port"), p.get("protocol", "TCP"))]}
        if not p.get("nodePort")
        and by_port.get((p.get("port"), p.get("protocol", "TCP")))
        and spec.get("type", before.get("type")) in ("NodePort", "LoadBalancer")
        else p
        for p in default_ports(spec.get("ports") or [])
    ]
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
