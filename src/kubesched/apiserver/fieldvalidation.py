"""Server-side field validation (``?fieldValidation=Strict|Warn|Ignore``, kube-apiserver's default
Warn, kubectl's Strict): fields the kind's schema does not declare are a 400 ``strict decoding
error`` under Strict, a ``Warning: 299`` header each under Warn, and dropped from what is stored
either way, as decoding into the Go types drops them.

The schema is the API's own, as the generated models of kubernetes_asyncio carry it
(``openapi_types`` / ``attribute_map`` of each model), so it follows the client library's API
version rather than a table kept here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kubernetes_asyncio.client import models

from kubesched.cluster.errors import BadRequest

MODES = ("Ignore", "Warn", "Strict")
DEFAULT_MODE = "Warn"

# (group, kind) -> model; what each endpoint decodes its body into
MODEL_OF = {
    ("", "Pod"): "V1Pod",
    ("", "Node"): "V1Node",
    ("", "Namespace"): "V1Namespace",
    ("", "Event"): "CoreV1Event",
    ("", "Service"): "V1Service",
    ("", "ReplicationController"): "V1ReplicationController",
    ("", "ConfigMap"): "V1ConfigMap",
    ("", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("", "Binding"): "V1Binding",
    ("apps", "ReplicaSet"): "V1ReplicaSet",
    ("apps", "StatefulSet"): "V1StatefulSet",
    ("events.k8s.io", "Event"): "EventsV1Event",
    ("coordination.k8s.io", "Lease"): "V1Lease",
    ("scheduling.k8s.io", "PriorityClass"): "V1PriorityClass",
    ("policy", "PodDisruptionBudget"): "V1PodDisruptionBudget",
    ("policy", "Eviction"): "V1Eviction",
}
_LEAVES = {"str", "int", "float", "bool", "object", "datetime", "date", "bytearray"}


def mode_of(query: Any) -> str:
    mode = query.get("fieldValidation") or DEFAULT_MODE
    if mode not in MODES:
        raise BadRequest(f'fieldValidation must be one of Ignore, Warn or Strict, not "{mode}"')
    return mode


@cache
def _fields(model: str) -> dict[str, str]:
    """JSON field name -> type text of a generated model."""
    cls = getattr(models, model)
    return {cls.attribute_map[attr]: typ for attr, typ in cls.openapi_types.items()}


def _walk(typ: str, value: Any, path: str, unknown: list[str]) -> Any:
    """``value`` without the fields ``typ`` does not declare; their paths go to ``unknown``."""
    if typ in _LEAVES or value is None:
        return value
    if typ.startswith("list[") and isinstance(value, list):
        inner = typ[5:-1]
        return [_walk(inner, v, f"{path}[{i}]", unknown) for i, v in enumerate(value)]
    if typ.startswith("dict(") and isinstance(value, dict):
        inner = typ[typ.index(",") + 1 : -1].strip()
        if inner in _LEAVES:
            return value
        return {k: _walk(inner, v, f"{path}.{k}", unknown) for k, v in value.items()}
    if not isinstance(value, dict) or not hasattr(models, typ):
        return value  # a wrong type is validation's business, not this
    fields = _fields(typ)
    out = {}
    for key, v in value.items():
        where = f"{path}.{key}" if path else key
        if key.startswith("$"):  # strategic-merge-patch directives
            out[key] = v
        elif key in fields:
            out[key] = _walk(fields[key], v, where, unknown)
        else:
            unknown.append(where)
    return out


def check(group: str, kind: str, obj: dict[str, Any], mode: str) -> tuple[dict[str, Any], list[str]]:
    """The object as stored (unknown fields dropped) and the warnings to send; Strict raises."""
    model = MODEL_OF.get((group, kind))
    if model is None:
        return obj, []
    unknown: list[str] = []
    pruned = _walk(model, obj, "", unknown)
    if not unknown:
        return obj, []
    if mode == "Strict":
        raise BadRequest("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown))
    return pruned, [] if mode == "Ignore" else [f'unknown field "{p}"' for p in unknown]
