"""Validation of the workload-aware scheduling kinds (scheduling.k8s.io/v1beta1 PodGroup, as
the declarative tags of ``k8s.io/api/scheduling/v1beta1`` validate it): the scheduling policy is
a union of ``basic`` and ``gang``, and a gang's ``minCount`` is at least 1. Messages are
apimachinery's (``pkg/api/validate/union.go``, ``limits.go``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.errors import InputError

_POLICIES = ("basic", "gang")
MAX_USER_PRIORITY = 1_000_000_000  # HighestUserDefinablePriority


def validate_pod_group(obj: Mapping[str, Any]) -> None:
    """Raise the first InputError in upstream's field order."""
    spec = obj.get("spec") or {}
    policy = spec.get("schedulingPolicy") or {}
    if not isinstance(policy, Mapping):
        raise InputError("expected an object", field="spec.schedulingPolicy")
    chosen = [p for p in _POLICIES if policy.get(p) is not None]
    members = ", ".join(f"`{p}`" for p in _POLICIES)
    if not chosen:
        raise InputError(f'Invalid value: "": must specify one of: {members}', field="spec.schedulingPolicy")
    if len(chosen) > 1:
        raise InputError(
            f'Invalid value: "{{{", ".join(chosen)}}}": must specify exactly one of: {members}',
            field="spec.schedulingPolicy",
        )
    gang = policy.get("gang")
    if gang is not None:
        count = gang.get("minCount") if isinstance(gang, Mapping) else None
        if count is None:
            raise InputError("Required value", field="spec.schedulingPolicy.gang.minCount")
        if not isinstance(count, int) or count < 1:
            raise InputError(
                f"Invalid value: {count}: must be greater than or equal to 1",
                field="spec.schedulingPolicy.gang.minCount",
            )
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
