"""The Table columns of scheduling.k8s.io, resource.k8s.io, node.k8s.io, coordination.k8s.io and
the RBAC bindings, as ``pkg/printers/internalversion/printers.go`` prints them."""

from __future__ import annotations

from typing import Any

from kubesched.apiserver.handlers.printers.common import (
    Printer,
    Row,
    age,
    col,
    name_col,
)


def _lease_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    return [meta.get("name"), spec.get("holderIdentity") or "", age(now, meta.get("creationTimestamp"))]


def _binding_row(o: dict[str, Any], now: float) -> Row:
    """``printRoleBinding`` / ``printClusterRoleBinding``: Kind/name of the role; subjects when wide."""
    meta, ref = o.get("metadata") or {}, o.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for s in o.get("subjects") or []:
        if s.get("kind") == "ServiceAccount":
            accounts.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
        elif s.get("kind") == "User":
            users.append(str(s.get("name", "")))
        elif s.get("kind") == "Group":
            groups.append(str(s.get("name", "")))
    return [
        meta.get("name"),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(now, meta.get("creationTimestamp")),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _device_taint_row(o: dict[str, Any], now: float) -> Row:
    """``printDeviceTaint``: the taint's key, value, effect and when it was added."""
    meta, taint = o.get("metadata") or {}, (o.get("spec") or {}).get("taint") or {}
    added = taint.get("timeAdded")
    return [
        meta.get("name"),
        taint.get("key") or "",
        taint.get("value") or "",
        taint.get("effect") or "",
        age(now, added) if added else "",
        age(now, meta.get("creationTimestamp")),
    ]


def _runtimeclass_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), o.get("handler") or "", age(now, meta.get("creationTimestamp"))]


def _name_age_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), age(now, meta.get("creationTimestamp"))]


def _podgroup_row(o: dict[str, Any], now: float) -> Row:
    """``printPodGroup``: the policy, the Workload it belongs to, and Pending, Scheduled or
    Unschedulable by its PodGroupInitiallyScheduled condition (a DisruptionTarget's reason wins)."""
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    policy = "Gang" if (spec.get("schedulingPolicy") or {}).get("gang") is not None else "Basic"
    conditions = {c.get("type"): c for c in (o.get("status") or {}).get("conditions") or []}
    status = "Pending"
    if "PodGroupInitiallyScheduled" in conditions:
        status = "Scheduled" if conditions["PodGroupInitiallyScheduled"].get("status") == "True" else "Unschedulable"
    if "DisruptionTarget" in conditions:
        status = conditions["DisruptionTarget"].get("reason") or ""
    workload = (spec.get("workloadRef") or {}).get("workloadName") or "<none>"
    return [meta.get("name"), policy, workload, status, age(now, meta.get("creationTimestamp"))]


def _pc_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [
        meta.get("name"),
        o.get("value", 0),
        bool(o.get("globalDefault")),
        age(now, meta.get("creationTimestamp")),
        o.get("preemptionPolicy") or "PreemptLowerPriority",
    ]


def _claim_state(o: dict[str, Any]) -> str:
    """``resourceClaimState`` (``pkg/printers/internalversion``): deleted, pending, allocated, reserved."""
    meta, status = o.get("metadata") or {}, o.get("status") or {}
    states = ["deleted"] if meta.get("deletionTimestamp") else []
    if not status.get("allocation"):
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif meta.get("deletionTimestamp"):
            states.append("deallocating")
    return ",".join(states)


def _claim_row(o: dict[str, Any], now: float) -> Row:
    meta = o.get("metadata") or {}
    return [meta.get("name"), _claim_state(o), age(now, meta.get("creationTimestamp"))]


def _slice_row(o: dict[str, Any], now: float) -> Row:
    meta, spec = o.get("metadata") or {}, o.get("spec") or {}
    pool = (spec.get("pool") or {}).get("name") or ""
    return [
        meta.get("name"),
        spec.get("nodeName") or "",
        spec.get("driver") or "",
        pool,
        age(now, meta.get("creationTimestamp")),
    ]


PRINTERS: dict[str, Printer] = {
    "Lease": ([name_col(), col("Holder"), col("Age")], _lease_row),
    "RuntimeClass": ([name_col(), col("Handler"), col("Age")], _runtimeclass_row),
    "Workload": ([name_col(), col("Age")], _name_age_row),
    "PodGroup": ([name_col(), col("Policy"), col("Workload"), col("Status"), col("Age")], _podgroup_row),
    **{
        kind: (
            [
                name_col(),
                col("Role"),
                col("Age"),
                col("Users", priority=1),
                col("Groups", priority=1),
                col("ServiceAccounts", priority=1),
            ],
            _binding_row,
        )
        for kind in ("RoleBinding", "ClusterRoleBinding")
    },
    "DeviceClass": ([name_col(), col("Age")], _name_age_row),
    "ResourceClaimTemplate": ([name_col(), col("Age")], _name_age_row),
    "DeviceTaintRule": (
        [name_col(), col("Key"), col("Value"), col("Effect"), col("TimeAdded"), col("Age")],
        _device_taint_row,
    ),
    "PriorityClass": (
        [
            name_col(),
            col("Value", type_="integer"),
            col("Global-Default", type_="boolean"),
            col("Age"),
            col("PreemptionPolicy"),
        ],
        _pc_row,
    ),
    "ResourceClaim": ([name_col(), col("State"), col("Age")], _claim_row),
    "ResourceSlice": ([name_col(), col("Node"), col("Driver"), col("Pool"), col("Age")], _slice_row),
}
