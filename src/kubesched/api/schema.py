"""Decoding an object against the API's Go types, as kube-apiserver's JSON decoder does before any
validation: a value of the wrong JSON type is refused with encoding/json's ``UnmarshalTypeError``
text, and fields the type does not declare are reported (strict field validation, KEP-2885) and
dropped.

The shapes come from ``schema.json``, generated from the Go structs of k8s.io/api and
k8s.io/apimachinery by ``scripts/gen_api_schema.py``. One decoder serves the manifest loader of
``simulate`` and the embedded API server, so both answer alike.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from kubesched.api.quantity import QuantityError, parse_quantity
from kubesched.errors import InputError

MODES = ("Ignore", "Warn", "Strict")

# (API group, kind) -> the Go struct its body decodes into
_KIND_TYPES = {
    ("", "Pod"): "core.Pod",
    ("", "Node"): "core.Node",
    ("", "Namespace"): "core.Namespace",
    ("", "Event"): "core.Event",
    ("", "Service"): "core.Service",
    ("", "ReplicationController"): "core.ReplicationController",
    ("", "ConfigMap"): "core.ConfigMap",
    ("", "Secret"): "core.Secret",
    ("autoscaling", "HorizontalPodAutoscaler"): "autoscalingv2.HorizontalPodAutoscaler",
    ("", "Endpoints"): "core.Endpoints",
    ("discovery.k8s.io", "EndpointSlice"): "discovery.EndpointSlice",
    ("", "LimitRange"): "core.LimitRange",
    ("", "ResourceQuota"): "core.ResourceQuota",
    ("", "PersistentVolumeClaim"): "core.PersistentVolumeClaim",
    ("", "PersistentVolume"): "core.PersistentVolume",
    ("", "Binding"): "core.Binding",
    ("apps", "ReplicaSet"): "apps.ReplicaSet",
    ("apps", "StatefulSet"): "apps.StatefulSet",
    ("apps", "Deployment"): "apps.Deployment",
    ("apps", "DaemonSet"): "apps.DaemonSet",
    ("apps", "ControllerRevision"): "apps.ControllerRevision",
    ("batch", "Job"): "batch.Job",
    ("batch", "CronJob"): "batch.CronJob",
    ("autoscaling", "Scale"): "autoscaling.Scale",
    ("authentication.k8s.io", "SelfSubjectReview"): "authentication.SelfSubjectReview",
    ("authentication.k8s.io", "TokenRequest"): "authentication.TokenRequest",
    ("authorization.k8s.io", "SelfSubjectAccessReview"): "authorization.SelfSubjectAccessReview",
    ("authorization.k8s.io", "SelfSubjectRulesReview"): "authorization.SelfSubjectRulesReview",
    ("", "ServiceAccount"): "core.ServiceAccount",
    ("rbac.authorization.k8s.io", "Role"): "rbac.Role",
    ("rbac.authorization.k8s.io", "ClusterRole"): "rbac.ClusterRole",
    ("rbac.authorization.k8s.io", "RoleBinding"): "rbac.RoleBinding",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): "rbac.ClusterRoleBinding",
    ("events.k8s.io", "Event"): "events.Event",
    ("coordination.k8s.io", "Lease"): "coordination.Lease",
    ("scheduling.k8s.io", "PriorityClass"): "scheduling.PriorityClass",
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): "flowcontrol.FlowSchema",
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): "flowcontrol.PriorityLevelConfiguration",
    ("node.k8s.io", "RuntimeClass"): "node.RuntimeClass",
    ("policy", "PodDisruptionBudget"): "policy.PodDisruptionBudget",
    ("policy", "Eviction"): "policy.Eviction",
    ("resource.k8s.io", "DeviceClass"): "resource.DeviceClass",
    ("resource.k8s.io", "ResourceClaim"): "resource.ResourceClaim",
    ("resource.k8s.io", "ResourceClaimTemplate"): "resource.ResourceClaimTemplate",
    ("resource.k8s.io", "ResourceSlice"): "resource.ResourceSlice",
    ("resource.k8s.io", "DeviceTaintRule"): "resource.DeviceTaintRule",
    ("scheduling.k8s.io", "Workload"): "schedulingv1beta1.Workload",
    ("scheduling.k8s.io", "PodGroup"): "schedulingv1beta1.PodGroup",
    ("storage.k8s.io", "StorageClass"): "storage.StorageClass",
    ("storage.k8s.io", "CSINode"): "storage.CSINode",
    ("storage.k8s.io", "CSIDriver"): "storage.CSIDriver",
    ("storage.k8s.io", "CSIStorageCapacity"): "storage.CSIStorageCapacity",
    ("storage.k8s.io", "VolumeAttachment"): "storage.VolumeAttachment",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): "apiextensionsv1.CustomResourceDefinition",
    ("", "PodTemplate"): "core.PodTemplate",
    ("networking.k8s.io", "NetworkPolicy"): "networking.NetworkPolicy",
    ("networking.k8s.io", "Ingress"): "networking.Ingress",
    ("networking.k8s.io", "IngressClass"): "networking.IngressClass",
    ("storage.k8s.io", "VolumeAttributesClass"): "storage.VolumeAttributesClass",
}
# how deep free-form JSON (annotations' raw extensions, unknown kinds) may nest: far beyond any
# real object, well within what Python code walking it can recurse through
MAX_RAW_DEPTH = 100
MAX_RAW_NODES = 1_000_000
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1), "int": (-(2**63), 2**63 - 1)}
_INT_RANGES |= {"uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1)}


@cache
def _types() -> dict[str, dict[str, str]]:
    doc = json.loads((Path(__file__).with_name("schema.json")).read_text())
    return doc["types"]


# a version whose Go type is not the group's usual one (served besides it, converted)
_VERSIONED_TYPES = {("autoscaling", "v1", "HorizontalPodAutoscaler"): "autoscaling.HorizontalPodAutoscaler"}


def type_of(group: str, kind: str, version: str = "") -> str | None:
    """The Go struct key (``core.Pod``) of a kind, or None when no schema is known for it."""
    if version and (group, version, kind) in _VERSIONED_TYPES:
        return _VERSIONED_TYPES[(group, version, kind)]
    return _KIND_TYPES.get((group, kind))


def _display(t: str) -> str:
    """How Go prints the type in an UnmarshalTypeError (``[]v1.Container``, ``int32``...)."""
    if t.startswith("[]"):
        return "[]" + _display(t[2:])
    if t.startswith("map[string]"):
        return "map[string]" + _display(t[11:])
    if t.startswith("string:"):
        return t[7:]
    if "." in t:
        return "v1." + t.split(".", 1)[1]
    return {"Quantity": "resource.Quantity", "IntOrString": "intstr.IntOrString", "Time": "v1.Time"}.get(t, t)


def json_kind(value: Any) -> str:
    """encoding/json's name of a JSON value in its messages (``number 1.5`` for a number that
    does not fit the target)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _zero(t: str) -> Any:
    """Go's zero value of a type: what a JSON null becomes inside a list or a map."""
    if t == "Quantity":
        return "0"
    if t == "string" or t.startswith("string:") or t == "Time":
        return ""
    if t in _INT_RANGES or t in ("float64", "float32", "IntOrString"):
        return 0
    if t == "bool":
        return False
    if t.startswith("[]") or t.startswith("map[string]") or t == "raw":
        return None
    return {}  # a struct


QUANTITY_SYNTAX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


class DecodeError(InputError):
    """A value of the wrong type: ``json: cannot unmarshal string into Go struct field
    PodSpec.spec.priority of type int32`` (field paths without indices or keys, as Go prints)."""


@dataclass(slots=True)
class _Walk:
    unknown: list[str] = field(default_factory=list)

    def mismatch(self, value: Any, t: str, struct: str, gopath: str, where: str, shown: str | None = None) -> None:
        what = shown or json_kind(value)
        raise DecodeError(
            f"json: cannot unmarshal {what} into Go struct field {struct}.{gopath} of type {_display(t)}", field=where
        )

    def value(self, t: str, v: Any, struct: str, gopath: str, where: str) -> Any:
        if v is None:
            return v
        if t == "string" or t.startswith("string:"):
            if isinstance(v, (datetime.datetime, datetime.date)):  # YAML timestamps are strings in JSON
                return v.isoformat()
            if not isinstance(v, str):
                self.mismatch(v, t, struct, gopath, where)
            return v
        if t in _INT_RANGES:
            lo, hi = _INT_RANGES[t]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.mismatch(v, t, struct, gopath, where)
            if isinstance(v, float) or not lo <= v <= hi:
                self.mismatch(v, t, struct, gopath, where, f"number {v}")
            return v
        if t in ("float64", "float32"):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.mismatch(v, t, struct, gopath, where)
            return v
        if t == "bool":
            if not isinstance(v, bool):
                self.mismatch(v, t, struct, gopath, where)
            return v
        if t == "Quantity":
            # resource.Quantity's UnmarshalJSON parses the value: a malformed one fails the decoding
            # (kube-apiserver: 400 "... cannot be handled as a Pod: quantities must match ...")
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise DecodeError(QUANTITY_SYNTAX, field=where)
            try:
                parse_quantity(v)
            except QuantityError as exc:  # which rule it breaks, and the value (the CLI's message too)
                raise DecodeError(str(exc), field=where) from None
            return v
        if t == "IntOrString":
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                self.mismatch(v, t, struct, gopath, where)
            return v
        if t == "Time":
            if isinstance(v, (datetime.datetime, datetime.date)):
                return v.isoformat().replace("+00:00", "Z")
            if not isinstance(v, str):
                self.mismatch(v, t, struct, gopath, where)
            return v
        if t == "raw":
            check_depth(v, where)
            return v
        if t.startswith("[]"):
            if not isinstance(v, list):
                self.mismatch(v, t, struct, gopath, where)
            inner = t[2:]
            out = v
            for i, item in enumerate(v):
                new = _zero(inner) if item is None else self.value(inner, item, struct, gopath, f"{where}[{i}]")
                if new is not item:
                    if out is v:
                        out = list(v)
                    out[i] = new
            return out
        if t.startswith("map[string]"):
            if not isinstance(v, dict):
                self.mismatch(v, t, struct, gopath, where)
            inner = t[11:]
            out = v
            for k, item in v.items():
                new = _zero(inner) if item is None else self.value(inner, item, struct, gopath, f"{where}[{k}]")
                if new is not item or not isinstance(k, str):
                    if out is v:
                        out = dict(v)
                    if not isinstance(k, str):
                        del out[k]
                    out[str(k)] = new
            return out
        return self.struct(t, v, gopath, where, struct)

    def struct(self, t: str, v: Any, gopath: str, where: str, parent: str = "") -> Any:
        fields = _types().get(t)
        if fields is None:
            return v
        if not isinstance(v, dict):
            self.mismatch(v, t, parent or t.split(".", 1)[1], gopath, where)
        name = t.split(".", 1)[1]
        out = v
        for key, item in v.items():
            here = f"{where}.{key}" if where else str(key)
            ft = fields.get(key) if isinstance(key, str) else None
            if ft is None:
                if isinstance(key, str) and key.startswith("$"):  # strategic-merge-patch directives
                    continue
                self.unknown.append(here)
                if out is v:
                    out = dict(v)
                del out[key]
                continue
            new = self.value(ft, item, name, f"{gopath}.{key}" if gopath else key, here)
            if new is not item:
                if out is v:
                    out = dict(v)
                out[key] = new
        return out


def check_depth(value: Any, where: str = "", limit: int = MAX_RAW_DEPTH) -> None:
    """Refuse free-form JSON nested deeper than ``limit`` or holding more than MAX_RAW_NODES
    values (YAML aliases can make a small document a huge tree), walked without recursion."""
    stack = [(value, 1)]
    seen = 0
    while stack:
        v, depth = stack.pop()
        seen += 1
        if seen > MAX_RAW_NODES:
            raise DecodeError(f"more than {MAX_RAW_NODES:,} values in one free-form field", field=where or None)
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if depth > limit:
            raise DecodeError(f"nested more than {limit} levels deep", field=where or None)
        stack.extend((item, depth + 1) for item in items)


def decode(type_key: str, obj: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``obj`` decoded as the Go struct ``type_key``: returns the object as it would be stored
    (unknown fields dropped, YAML timestamps as strings; the same object when nothing changed)
    and the paths of the unknown fields. A value of the wrong type raises DecodeError naming its
    field."""
    walk = _Walk()
    out = walk.struct(type_key, obj, "", "")
    return out, walk.unknown


def unknown_field_message(paths: list[str]) -> str:
    """kube-apiserver's strict decoding error for unknown fields."""
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)
