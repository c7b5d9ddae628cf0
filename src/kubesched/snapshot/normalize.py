"""Each listed object as a manifest a create accepts and a planning command reads as the cluster
had it: what only the server may set and a create refuses (``resourceVersion``) or no planning
reads (``managedFields``, ``selfLink``) is dropped; uids, creation times, statuses, bindings and
deletions in progress are kept (``populate.create_as_given`` keeps them, so owner references,
claim reservations and terminating pods stay true); a Service keeps what the scheduler reads of it
(its selector and ports), not the cluster's addresses, which another cluster's allocator would
refuse or take."""

from __future__ import annotations

from typing import Any

_SERVER_FIELDS = ("resourceVersion", "managedFields", "selfLink")
_SERVICE_PORT_FIELDS = ("name", "port", "targetPort", "protocol", "appProtocol")


def for_create(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a manifest of the snapshot."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_FIELDS}
    out = {**obj, "metadata": meta}
    if obj.get("kind") == "Service":
        out = _service(out)
    return out


def _service(svc: dict[str, Any]) -> dict[str, Any]:
    spec = svc.get("spec") or {}
    kept: dict[str, Any] = {"type": "ClusterIP"}
    if spec.get("type") == "ExternalName":
        kept = {"type": "ExternalName", "externalName": spec.get("externalName")}
    elif spec.get("clusterIP") == "None":
        kept["clusterIP"] = "None"  # headless: no address to allocate
    if spec.get("selector"):
        kept["selector"] = spec["selector"]
    ports = [{k: v for k, v in p.items() if k in _SERVICE_PORT_FIELDS} for p in spec.get("ports") or []]
    if ports:
        kept["ports"] = ports
    return {"apiVersion": svc.get("apiVersion"), "kind": "Service", "metadata": svc["metadata"], "spec": kept}
