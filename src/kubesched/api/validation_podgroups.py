"""Validation of the workload-aware scheduling kinds (scheduling.k8s.io/v1beta1 PodGroup and
Workload, as the declarative tags of ``k8s.io/api/scheduling/v1beta1`` and
``pkg/apis/scheduling/validation`` check them): the scheduling policy is a union of ``basic`` and
``gang``, a gang's ``minCount`` is at least 1, a Workload has at most 8 pod group templates with
unique names. Messages are
apimachinery's (``pkg/api/validate/union.go``, ``limits.go``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kubesched.errors import InputError

_POLICIES = ("basic", "gang")
MAX_USER_PRIORITY = 1_000_000_000  # HighestUserDefinablePriority


MAX_POD_GROUP_TEMPLATES = 8  # WorkloadMaxPodGroupTemplates


def _validate_policy(policy: Any, path: str) -> None:
    """A PodGroupSchedulingPolicy: exactly one of ``basic`` and ``gang``; a gang's minCount >= 1."""
    if not isinstance(policy, Mapping):
        raise InputError("expected an object", field=path)
    chosen = [p for p in _POLICIES if policy.get(p) is not None]
    members = ", ".join(f"`{p}`" for p in _POLICIES)
    if not chosen:
        raise InputError(f'Invalid value: "": must specify one of: {members}', field=path)
    if len(chosen) > 1:
        raise InputError(
            f'Invalid value: "{{{", ".join(chosen)}}}": must specify exactly one of: {members}', field=path
        )
    gang = policy.get("gang")
    if gang is not None:
        count = gang.get("minCount") if isinstance(gang, Mapping) else None
        if count is None or count == 0:  # +k8s:required on an int: its zero value is unset
            raise InputError("Required value", field=f"{path}.gang.minCount")
        if not isinstance(count, int) or count < 1:
            raise InputError(
                f"Invalid value: {count}: must be greater than or equal to 1", field=f"{path}.gang.minCount"
            )


def _go_template(t: Mapping[str, Any]) -> str:
    """A PodGroupTemplate as ``encoding/json`` writes it: fields in Go's order, the pointer
    ``schedulingConstraints`` as null when unset, the omitempty ones left out."""
    policy = t.get("schedulingPolicy") or {}
    out: dict[str, Any] = {"name": t.get("name") or "", "schedulingPolicy": {}}
    if policy.get("basic") is not None:
        out["schedulingPolicy"]["basic"] = {}
    if policy.get("gang") is not None:
        out["schedulingPolicy"]["gang"] = {"minCount": (policy.get("gang") or {}).get("minCount") or 0}
    out["schedulingConstraints"] = t.get("schedulingConstraints")
    for key in ("resourceClaims", "disruptionMode", "priorityClassName", "priority", "preemptionPolicy"):
        if t.get(key):
            out[key] = t[key]
    return json.dumps(out, separators=(",", ":"))


def validate_scheduling_workload(obj: Mapping[str, Any]) -> None:
    """A Workload's pod group templates: at most 8, names unique, each a valid policy."""
    templates = (obj.get("spec") or {}).get("podGroupTemplates") or []
    if not isinstance(templates, list):
        raise InputError("expected a list", field="spec.podGroupTemplates")
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        raise InputError(
            f"Too many: {len(templates)}: must have at most {MAX_POD_GROUP_TEMPLATES} items",
            field="spec.podGroupTemplates",
        )
    seen: set[str] = set()
    for i, t in enumerate(templates):
        path = f"spec.podGroupTemplates[{i}]"
        name = t.get("name") if isinstance(t, Mapping) else None
        if not name:
            raise InputError("Required value", field=f"{path}.name")
        if name in seen:  # the element as Go's JSON prints it
            raise InputError(f"Duplicate value: {_go_template(t)}", field=path)
        seen.add(str(name))
        _validate_policy(t.get("schedulingPolicy") or {}, f"{path}.schedulingPolicy")


def validate_pod_group(obj: Mapping[str, Any]) -> None:
    """Raise the first InputError in upstream's field order."""
    spec = obj.get("spec") or {}
    _validate_policy(spec.get("schedulingPolicy") or {}, "spec.schedulingPolicy")
    priority = spec.get("priority")
    if isinstance(priority, int) and priority > MAX_USER_PRIORITY:
        raise InputError(
            f"Invalid value: {priority}: must be less than or equal to {MAX_USER_PRIORITY}", field="spec.priority"
        )


def pod_group_min_count(obj: Mapping[str, Any]) -> int | None:
    """A gang's ``minCount``; None for a basic group."""
    gang = ((obj.get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
    return None if gang is None else int(gang.get("minCount") or 0)


def pod_group_priority(obj: Mapping[str, Any]) -> int:
    """``PodGroupPriority``: the admitted priority, 0 when none was resolved."""
    return int((obj.get("spec") or {}).get("priority") or 0)
