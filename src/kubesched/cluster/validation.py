"""What every object goes through before it is stored, whichever way it comes in (a manifest
given to ``simulate`` or ``up``, a request to the embedded API server): decoding against the
API's types (``api.schema``), then validation of the object's metadata and of the fields the
scheduler reads (``api.validation`` and each kind's parser). The loader and the API server call
the same two functions, so they accept and refuse alike.
"""

from __future__ import annotations

from typing import Any

from kubesched.api import flowcontrol, quota, schema, validation
from kubesched.api.node import node_info_from
from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.api.validation_dra import validate_device_selectors
from kubesched.api.validation_podgroups import validate_pod_group, validate_scheduling_workload
from kubesched.api.validation_workloads import VALIDATORS as WORKLOAD_VALIDATORS
from kubesched.api.validation_workloads import validate_workload
from kubesched.apiextensions.cel.dra import selector_cost, selector_problem
from kubesched.cluster.disruption import validate_budget
from kubesched.cluster.store import is_namespaced

# kind -> API group, for the kinds a manifest may hold without an apiVersion we can trust
_GROUPS = {
    "PriorityClass": "scheduling.k8s.io",
    "Workload": "scheduling.k8s.io",
    "PodGroup": "scheduling.k8s.io",
    "RuntimeClass": "node.k8s.io",
    "PodDisruptionBudget": "policy",
    "ReplicaSet": "apps",
    "StatefulSet": "apps",
    "Deployment": "apps",
    "DaemonSet": "apps",
    "ControllerRevision": "apps",
    "Job": "batch",
    "Role": "rbac.authorization.k8s.io",
    "ClusterRole": "rbac.authorization.k8s.io",
    "RoleBinding": "rbac.authorization.k8s.io",
    "ClusterRoleBinding": "rbac.authorization.k8s.io",
    "Lease": "coordination.k8s.io",
    "DeviceClass": "resource.k8s.io",
    "ResourceClaim": "resource.k8s.io",
    "ResourceClaimTemplate": "resource.k8s.io",
    "ResourceSlice": "resource.k8s.io",
    "StorageClass": "storage.k8s.io",
    "CSINode": "storage.k8s.io",
    "CSIDriver": "storage.k8s.io",
    "CSIStorageCapacity": "storage.k8s.io",
    "VolumeAttachment": "storage.k8s.io",
    "FlowSchema": "flowcontrol.apiserver.k8s.io",
    "PriorityLevelConfiguration": "flowcontrol.apiserver.k8s.io",
}


def group_of(obj: dict[str, Any]) -> str:
    api_version = str(obj.get("apiVersion") or "")
    if "/" in api_version:
        return api_version.split("/", 1)[0]
    return "" if api_version == "v1" else _GROUPS.get(str(obj.get("kind") or ""), "")


def decode(group: str, kind: str, obj: dict[str, Any], version: str = "") -> tuple[dict[str, Any], list[str]]:
    """The object as its Go type would hold it, and its unknown fields (see ``api.schema``);
    raises ``schema.DecodeError`` for a value of the wrong type. Kinds without a schema pass."""
    type_key = schema.type_of(group, kind, version)
    if type_key is None:
        return obj, []
    return schema.decode(type_key, obj)


def validate(kind: str, obj: dict[str, Any], *, meta: bool = True, old: dict[str, Any] | None = None) -> PodInfo | None:
    """Metadata (unless ``meta`` is False: the caller has checked it) and the kind's own
    validation; raises InputError naming the field. A pod's parse, which its validation makes,
    is returned (None for other kinds). ``old``: the stored object an update replaces."""
    if meta:
        validation.validate_meta(kind, obj, namespaced=is_namespaced(kind))
    if kind == "Pod":
        validation.validate_pod(obj)
        return pod_info_from(obj)
    elif kind == "Node":
        validation.validate_node(obj)
        node_info_from(obj)
    elif kind == "PodDisruptionBudget":
        validate_budget(obj)
    elif kind == "PersistentVolume":
        validation.validate_persistent_volume(obj)
    elif kind == "PersistentVolumeClaim":
        validation.validate_persistent_volume_claim(obj)
    elif kind == "StorageClass":
        validation.validate_storage_class(obj)
    elif kind == "LimitRange":
        quota.aggregate(quota.limit_range_errors(quota.default_limit_range(dict(obj))))
    elif kind == "ResourceQuota":
        quota.aggregate(quota.resource_quota_errors(obj))
    elif kind == "PodGroup":
        validate_pod_group(obj)
    elif kind == "Workload":
        validate_scheduling_workload(obj)
    elif kind in WORKLOAD_VALIDATORS:
        validate_workload(kind, obj)
    elif kind in ("FlowSchema", "PriorityLevelConfiguration"):
        flowcontrol.validate(kind, obj)
    elif kind in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate"):
        validate_device_selectors(kind, obj, old, selector_cost, selector_problem)
    return None
