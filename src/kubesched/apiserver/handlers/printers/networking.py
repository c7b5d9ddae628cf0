"""The Table columns of networking.k8s.io and discovery.k8s.io (Ingresses, NetworkPolicies,
EndpointSlices), as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.api.selectors import format_label_selector
from kubesched.apiserver.handlers.printers.common import (
    Printer,
    Row,
    age,
    col,
    name_col,
)


def _ingress_hosts(rules: list[Any]) -> str:
    """``formatHosts``: the first three hosts, and how many rules more."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == 3:
            more = True
        if not more and (rule or {}).get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    return ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")


def _ingress_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    points = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    address = ",".join(
        sorted({str(i.get("ip") or i.get("hostname")) for i in points if i.get("ip") or i.get("hostname")})
    )
    if len(address) > 16:  # loadBalancerWidth, clipped unless wide
        address = address[:13] + "..."
    return [
        meta.get("name"),
        spec.get("ingressClassName") or "<none>",
        _ingress_hosts(spec.get("rules") or []),
        address,
        "80, 443" if spec.get("tls") else "80",
        age(now, meta.get("creationTimestamp")),
    ]


def _ingress_class_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    name = meta.get("name")
    if ((meta.get("annotations") or {}).get("ingressclass.kubernetes.io/is-default-class") or "").lower() == "true":
        name = f"{name} (default)"
    params = spec.get("parameters")
    shown = "<none>"
    if params:
        shown = str(params.get("kind", "")) + (f".{params['apiGroup']}" if params.get("apiGroup") else "")
        shown += f"/{params.get('name', '')}"
    return [name, spec.get("controller", ""), shown, age(now, meta.get("creationTimestamp"))]


def _endpointslice_row(o: dict[str, Any], now: float) -> Row:
    """``printEndpointSlice``: address type, ports, up to three addresses, then how many more."""
    meta = o.get("metadata") or {}
    ports = ",".join(str(p.get("port")) for p in o.get("ports") or []) or "<unset>"
    addresses = [a for e in o.get("endpoints") or [] for a in e.get("addresses") or []]
    shown = ",".join(addresses[:3]) + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")
    return [
        meta.get("name"),
        o.get("addressType") or "",
        ports,
        shown or "<unset>",
        age(now, meta.get("creationTimestamp")),
    ]


PRINTERS: dict[str, Printer] = {
    "Ingress": (
        [name_col(), col("Class"), col("Hosts"), col("Address"), col("Ports"), col("Age")],
        _ingress_row,
    ),
    "IngressClass": ([name_col(), col("Controller"), col("Parameters"), col("Age")], _ingress_class_row),
    "NetworkPolicy": (
        [name_col(), col("Pod-Selector"), col("Age")],
        lambda o, now: [
            (o.get("metadata") or {}).get("name"),
            format_label_selector((o.get("spec") or {}).get("podSelector") or {}) or "<none>",
            age(now, (o.get("metadata") or {}).get("creationTimestamp")),
        ],
    ),
    "EndpointSlice": (
        [name_col(), col("AddressType"), col("Ports"), col("Endpoints"), col("Age")],
        _endpointslice_row,
    ),
}
