"""Admission on create: pod defaulting and the Priority and RuntimeClass admission plugins.

Priority (``plugin/pkg/admission/priority``): a pod's ``priorityClassName`` resolves to
``spec.priority`` and ``spec.preemptionPolicy``; with no name the globalDefault class applies
(else 0); an unknown name is refused. PriorityClass writes are validated (value range, one
globalDefault, reserved ``system-`` names).

RuntimeClass (``plugin/pkg/admission/runtimeclass``): a pod's ``runtimeClassName`` must name a
class; the class's ``overhead.podFixed`` becomes the pod's ``spec.overhead`` (an overhead the pod
sets must equal it, and none may be set without a class that defines one), and the class's
``scheduling`` node selector and tolerations are merged into the pod's.
"""

from __future__ import annotations

import base64
from typing import Any

from kubesched.api.errors import Forbidden, Invalid
from kubesched.api.kinds import is_custom
from kubesched.api.pod import DEFAULT_SCHEDULER_NAME
from kubesched.api.pod_defaults import default_pod, merge_label_keys
from kubesched.api.quantity import parse_quantity
from kubesched.api.quota import default_limit_range
from kubesched.apiextensions import cleanup, strategy
from kubesched.apiextensions.registry import CustomResources
from kubesched.clock import rfc3339
from kubesched.cluster import limitranger, quota
from kubesched.cluster.store import Admission as StoreAdmission
from kubesched.cluster.store import Store

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


def builtin_priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "Used for system critical pods that must not be moved from their current node.",
        }
        for name, value in SYSTEM_PRIORITY_CLASSES.items()
    ]


def same_quantities(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two resource lists equal as quantities (``apiequality.Semantic``: 1000m is 1)."""
    try:
        return a.keys() == b.keys() and all(parse_quantity(a[k]) == parse_quantity(b[k]) for k in a)
    except ValueError:
        return False


def default_containers(containers: list[Any]) -> list[Any]:
    """Container requests default to limits where unset (core/v1 SetDefaults_ResourceRequirements)."""
    out = []
    for c in containers:
        res = (c or {}).get("resources") or {}
        limits = res.get("limits") or {}
        requests = res.get("requests") or {}
        missing = {k: v for k, v in limits.items() if k not in requests}
        if missing:
            c = {**c, "resources": {**res, "requests": {**requests, **missing}}}
        out.append(c)
    return out


DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def default_secret(obj: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_Secret`` and the v1 conversion: type Opaque when unset, ``stringData`` written
    into ``data`` (base64, over a key of the same name) and not stored."""
    out = {**obj, "type": obj.get("type") or "Opaque"}
    strings = out.pop("stringData", None) or {}
    if strings:
        data = dict(out.get("data") or {})
        for key, value in strings.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        out["data"] = data
    return out


def namespace_objects(store: Store, namespace: str, kinds: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every object of ``kinds`` in ``namespace``, as ResourceQuota counts them."""
    return [(kind, o) for kind in sorted(kinds) for o in store.list(kind, namespace)[0]]


def default_hpa_behavior(behavior: dict[str, Any]) -> dict[str, Any]:
    """A behavior given is filled in: scale up by 4 pods or 100% each 15 s, scale down by 100%
    each 15 s, the larger change chosen (``defaultHPAScaleUpRules`` / ``...ScaleDownRules``)."""
    up = {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15},
        ],
    }
    down: dict[str, Any] = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
    out = dict(behavior)
    for key, defaults in (("scaleUp", up), ("scaleDown", down)):
        given = out.get(key)
        kept = {k: v for k, v in given.items() if v is not None} if isinstance(given, dict) else {}
        out[key] = {**defaults, **kept}
    return out


class ResourceQuotaAdmission:
    """The ResourceQuota admission plugin, a validating one: last in the chain, after every
    mutation and the object's own validation."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        if kind in quota.COUNTED:
            self.check(kind, obj)
        return obj

    def check(self, kind: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        """A create, or an update (``old``) of a kind an update is charged for."""
        namespace = (obj.get("metadata") or {}).get("namespace") or "default"
        quotas = self.store.list("ResourceQuota", namespace)[0]
        if quotas:
            objects = namespace_objects(self.store, namespace, quota.kinds_for(quotas))
            quota.check(quotas, kind, obj, objects, old)


class Admission:
    """The embedded apiserver's mutating admission plugins (and the strategies' defaults that
    depend on the cluster's state), installed on a Store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.custom = CustomResources(store)

    def _limit_ranges(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        return self.store.list("LimitRange", (obj.get("metadata") or {}).get("namespace") or "default")[0]

    def __call__(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        if is_custom(kind):  # the custom resource strategy: defaults and the CRD's schema
            cleanup.refuse_create(
                self.store.try_get(strategy.CRD_KIND, "", kind), (obj.get("metadata") or {}).get("name") or ""
            )
            return strategy.admit_create(strategy.custom_for(self.custom, kind), obj)
        if kind == strategy.CRD_KIND:  # and the CRD's own, accepted and Established at once
            return strategy.admit_crd_create(obj, self.store.clock.now())
        if kind == "Pod":
            return limitranger.admit(kind, self._admit_pod(obj), self._limit_ranges(obj))
        if kind == "LimitRange":
            return default_limit_range(obj)
        if kind == "Secret":
            return default_secret(obj)
        if kind == "HorizontalPodAutoscaler":  # SetDefaults_HorizontalPodAutoscaler (autoscaling/v2)
            spec = {"minReplicas": 1, **(obj.get("spec") or {})}
            if not spec.get("metrics"):
                target = {"type": "Utilization", "averageUtilization": 80}
                spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
            if isinstance(spec.get("behavior"), dict):  # SetDefaults_HorizontalPodAutoscalerBehavior
                spec["behavior"] = default_hpa_behavior(spec["behavior"])
            return {**obj, "spec": spec}
        if kind == "ResourceQuota":  # the controller's first sync, at once: hard as asked, used as it is
            namespace = (obj.get("metadata") or {}).get("namespace") or "default"
            objects = namespace_objects(self.store, namespace, quota.kinds_for([obj]))
            return {**obj, "status": quota.status(obj, objects)}
        if kind == "PodGroup":
            return self._admit_pod_group(obj)
        if kind in ("DeviceTaintRule", "ResourceSlice"):
            return self._default_device_taints(kind, obj)
        if kind == "PriorityClass":
            self._validate_priority_class(obj)
        if kind == "PersistentVolumeClaim":
            obj = limitranger.admit(kind, self._default_storage_class(obj), self._limit_ranges(obj))
        if kind == "PersistentVolume":  # SetDefaults_PersistentVolume
            spec = obj.get("spec") or {}
            obj = {**obj, "spec": {"persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem", **spec}}
        if kind in ("PersistentVolumeClaim", "PersistentVolume") and not (obj.get("status") or {}).get("phase"):
            # the registry strategies' PrepareForCreate: a new claim or volume starts Pending
            obj = {**obj, "status": {**(obj.get("status") or {}), "phase": "Pending"}}
        return obj

    def _default_storage_class(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The DefaultStorageClass admission plugin: a claim that names no class (the field
        absent, not empty) gets the default one, the newest when several are marked."""
        spec = obj.get("spec") or {}
        if "storageClassName" in spec and spec["storageClassName"] is not None:
            return obj
        defaults = [
            c
            for c in self.store.list("StorageClass")[0]
            if any((c.get("metadata") or {}).get("annotations", {}).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)
        ]
        if not defaults:
            return obj
        newest = max(defaults, key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"]["name"]))
        return {**obj, "spec": {**spec, "storageClassName": newest["metadata"]["name"]}}

    def _global_default(self) -> dict[str, Any] | None:
        classes, _ = self.store.list("PriorityClass")
        best = None
        for pc in classes:
            if pc.get("globalDefault") and (best is None or pc.get("value", 0) < best.get("value", 0)):
                best = pc
        return best

    def _runtime_class(self, spec: dict[str, Any]) -> None:
        name = spec.get("runtimeClassName")
        rc = self.store.try_get("RuntimeClass", "", name) if name else None
        if name and rc is None:
            raise Forbidden(f'pod rejected: RuntimeClass "{name}" not found')
        fixed = ((rc or {}).get("overhead") or {}).get("podFixed")
        if fixed is None:
            if spec.get("overhead") is not None:
                raise Forbidden("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
        elif spec.get("overhead") and not same_quantities(spec["overhead"], fixed):
            raise Forbidden("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
        else:
            spec["overhead"] = dict(fixed)
        scheduling = (rc or {}).get("scheduling") or {}
        if scheduling.get("nodeSelector"):
            selector = dict(spec.get("nodeSelector") or {})
            for key, value in scheduling["nodeSelector"].items():
                if key in selector and selector[key] != value:
                    raise Forbidden(
                        f"conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; "
                        f"pod.spec.nodeSelector[{key}] = {selector[key]}"
                    )
                selector[key] = value
            spec["nodeSelector"] = selector
        if scheduling.get("tolerations"):
            tolerations = list(spec.get("tolerations") or [])
            spec["tolerations"] = tolerations + [t for t in scheduling["tolerations"] if t not in tolerations]

    def _admit_pod(self, obj: dict[str, Any]) -> dict[str, Any]:
        spec = default_pod(dict(obj.get("spec") or {}))  # the API's defaults, as decoding applies them
        # the pod strategy's PrepareForCreate: label keys merged into the terms' selectors
        spec = merge_label_keys(spec, dict((obj.get("metadata") or {}).get("labels") or {}))
        self._runtime_class(spec)
        spec["containers"] = default_containers(spec.get("containers") or [])
        if spec.get("initContainers"):
            spec["initContainers"] = default_containers(spec["initContainers"])
        spec.setdefault("schedulerName", DEFAULT_SCHEDULER_NAME)
        spec.setdefault("terminationGracePeriodSeconds", 30)
        name = spec.get("priorityClassName")
        if name:
            pc = self.store.try_get("PriorityClass", "", name)
            if pc is None:
                raise Forbidden(f"no PriorityClass with name {name} was found")
        else:
            pc = self._global_default()
            if pc is not None:
                spec["priorityClassName"] = pc["metadata"]["name"]
        value = pc.get("value", 0) if pc is not None else 0
        if spec.get("priority") is not None and self.store.as_given:
            value = spec["priority"]  # a state's pod keeps the priority it was admitted with
        if spec.get("priority") is not None and spec["priority"] != value:
            raise Forbidden(
                f"the integer value of priority ({spec['priority']}) must not be provided in pod spec; "
                f"priority admission controller computed {value} from the given PriorityClass name"
            )
        spec["priority"] = value
        spec.setdefault("preemptionPolicy", (pc or {}).get("preemptionPolicy") or "PreemptLowerPriority")
        return {**obj, "spec": spec}

    def _default_device_taints(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_DeviceTaint``: a device taint without ``timeAdded`` gets now (whole
        seconds), which tolerationSeconds count from."""
        now = rfc3339(self.store.clock.now())
        spec = dict(obj.get("spec") or {})
        if kind == "DeviceTaintRule":
            taint = spec.get("taint")
            if isinstance(taint, dict) and not taint.get("timeAdded"):
                spec["taint"] = {**taint, "timeAdded": now}
            return {**obj, "spec": spec}
        devices = []
        for d in spec.get("devices") or []:
            if isinstance(d, dict) and d.get("taints"):
                d = {**d, "taints": [t if t.get("timeAdded") else {**t, "timeAdded": now} for t in d["taints"]]}
            devices.append(d)
        if devices:
            spec["devices"] = devices
        return {**obj, "spec": spec}

    def _priority_class(self, name: str | None) -> dict[str, Any] | None:
        """``establishPriority``'s class: the named one (refused when missing), else the
        globalDefault, else none (priority 0)."""
        if name:
            pc = self.store.try_get("PriorityClass", "", name)
            if pc is None:
                raise Forbidden(f"no PriorityClass with name {name} was found")
            return pc
        return self._global_default()

    def _admit_pod_group(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Priority admission of a new PodGroup (``admitPodGroup``): its class resolves to
        ``spec.priority``, which the group may not set to anything else."""
        spec = dict(obj.get("spec") or {})
        spec.setdefault("disruptionMode", {"single": {}})  # SetObjectDefaults_PodGroup
        pc = self._priority_class(spec.get("priorityClassName"))
        value = pc.get("value", 0) if pc is not None else 0
        if spec.get("priority") is not None and self.store.as_given:
            value = spec["priority"]  # a state's pod keeps the priority it was admitted with
        if spec.get("priority") is not None and spec["priority"] != value:
            raise Forbidden(
                f"priority set in the pod group ({spec['priority']}) must match the priority computed ({value}) "
                "based on the priority class set in the spec"
            )
        spec["priority"] = value
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
        return {**obj, "spec": spec}

    def _validate_priority_class(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name") or ""
        value = obj.get("value")
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid(f'PriorityClass.scheduling.k8s.io "{name}" is invalid: value: Required value')
        if name in SYSTEM_PRIORITY_CLASSES:
            if value != SYSTEM_PRIORITY_CLASSES[name]:
                raise Forbidden(f"{name} is a system priority class and cannot be changed")
        elif name.startswith("system-"):
            raise Forbidden(f'priority class names with "system-" prefix are reserved for system use only: {name}')
        elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
            raise Forbidden(f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
        policy = obj.get("preemptionPolicy", "PreemptLowerPriority")
        if policy not in ("PreemptLowerPriority", "Never"):
            raise Invalid(
                f'PriorityClass.scheduling.k8s.io "{name}" is invalid: preemptionPolicy: Unsupported value: "{policy}"'
            )
        if obj.get("globalDefault"):
            existing = self._global_default()
            if existing is not None and existing["metadata"]["name"] != name:
                raise Forbidden(
                    f"PriorityClass {existing['metadata']['name']} is already marked as default. "
                    "Only one default can exist"
                )


def install(store: Store, validation: StoreAdmission | None = None) -> None:
    """Install admission — the mutating plugins, then ``validation`` (the object's own, as the
    registry validates after mutating admission), then ResourceQuota — and the built-in system
    PriorityClasses and namespaces where missing."""
    store.admission.append(Admission(store))
    if validation is not None:
        store.admission.append(validation)
    store.admission.append(ResourceQuotaAdmission(store))
    for pc in builtin_priority_classes():
        if store.try_get("PriorityClass", "", pc["metadata"]["name"]) is None:
            store.create("PriorityClass", pc)
    for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
        if store.try_get("Namespace", "", ns) is None:
            store.create(
                "Namespace",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
