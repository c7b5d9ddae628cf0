"""LimitRange and ResourceQuota as kube-apiserver holds them: LimitRange items' defaults
(``SetDefaults_LimitRangeItem``) and validation (``ValidateLimitRange``), ResourceQuota's validation,
and what an object counts against a quota (``pkg/quota/v1/evaluator/core``: the pods evaluator's
``PodUsageFunc`` and ``Constraints``, object counts, claims' storage), with quota sums printed as
``quota.prettyPrint`` prints them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from kubesched.api.quantity import QuantityError, canonical, parse_quantity
from kubesched.api.resources import CPU, apply_pod_level, container_requests, parse_resource_list
from kubesched.errors import InputError

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
QUOTA_SCOPES = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass")
# the quota names whose presence requires every container to state them (the pods evaluator's validationSet)
CONTAINER_REQUIRED = ("cpu", "limits.cpu", "limits.memory", "memory", "requests.cpu", "requests.memory")
# kinds counted by their legacy quota name as well as count/<resource>
LEGACY_COUNTS = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "ReplicationController": "replicationcontrollers",
    "ResourceQuota": "resourcequotas",
    "PersistentVolumeClaim": "persistentvolumeclaims",
}
BINARY_RESOURCES = ("memory", "storage", "ephemeral-storage")


def _quantity(value: Any, field: str) -> Fraction:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise InputError(str(exc), field=field) from None


def _list(raw: Any) -> dict[str, Any]:
    return dict(raw) if isinstance(raw, Mapping) else {}


def default_limit_range(obj: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_LimitRangeItem``: for Container items, the default limit from max, the default
    request from the default limit, else from min."""
    spec = dict(obj.get("spec") or {})
    items = []
    for raw in spec.get("limits") or []:
        item = dict(raw or {})
        if item.get("type") == "Container":
            default = _list(item.get("default"))
            request = _list(item.get("defaultRequest"))
            for key, value in _list(item.get("max")).items():
                default.setdefault(key, value)
            for key, value in default.items():
                request.setdefault(key, value)
            for key, value in _list(item.get("min")).items():
                request.setdefault(key, value)
            item["default"], item["defaultRequest"] = default, request
        items.append(item)
    if "limits" in spec:
        spec["limits"] = items
    return {**obj, "spec": spec}


def limit_range_errors(obj: Mapping[str, Any]) -> list[InputError]:
    """``ValidateLimitRange``'s checks of the items (names, types and the order of min, default
    request, default and max), each error naming its field."""
    errors: list[InputError] = []
    seen: set[str] = set()
    for i, raw in enumerate((obj.get("spec") or {}).get("limits") or []):
        item = raw or {}
        at = f"spec.limits[{i}]"
        kind = item.get("type")
        if kind not in LIMIT_TYPES:
            errors.append(InputError(f'Unsupported value: "{kind}"', field=f"{at}.type"))
        elif kind in seen:
            errors.append(InputError(f'Duplicate value: "{kind}"', field=f"{at}.type"))
        seen.add(str(kind))
        values: dict[str, dict[str, Fraction]] = {}
        for part in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            values[part] = {k: _quantity(v, f"{at}.{part}[{k}]") for k, v in _list(item.get(part)).items()}
        if kind == "Pod":
            for part in ("default", "defaultRequest"):
                if values[part]:
                    message = "Forbidden: may not be specified when `type` is 'Pod'"
                    errors.append(InputError(message, field=f"{at}.{part}"))
        if kind == "PersistentVolumeClaim" and "storage" not in values["min"] and "storage" not in values["max"]:
            errors.append(
                InputError(
                    "Required value: either minimum or maximum storage value is required, but neither was provided",
                    field=f"{at}.limits",
                )
            )
        keys = sorted(set().union(*(v.keys() for v in values.values())))
        raw_of = {p: _list(item.get(p)) for p in values}
        for k in keys:
            errors += _order_errors(at, k, values, raw_of)
    return errors


# (field, bad value shown, smaller, larger, message): the orderings ValidateLimitRange checks
_ORDER = (
    ("min", "min", "min", "max", "min value {min} is greater than max value {max}"),
    (
        "defaultRequest",
        "defaultRequest",
        "min",
        "defaultRequest",
        "min value {min} is greater than default request value {defaultRequest}",
    ),
    (
        "defaultRequest",
        "defaultRequest",
        "defaultRequest",
        "max",
        "default request value {defaultRequest} is greater than max value {max}",
    ),
    (
        "defaultRequest",
        "defaultRequest",
        "defaultRequest",
        "default",
        "default request value {defaultRequest} is greater than default limit value {default}",
    ),
    ("default", "min", "min", "default", "min value {min} is greater than default value {default}"),
    ("default", "max", "default", "max", "default value {default} is greater than max value {max}"),
)


def _order_errors(
    at: str, key: str, values: Mapping[str, Mapping[str, Fraction]], raw_of: Mapping[str, Mapping[str, Any]]
) -> list[InputError]:
    """One resource of an item: min ≤ defaultRequest ≤ default ≤ max, a ratio of at least 1."""
    errors = []
    text = {p: canonical(raw_of[p][key]) for p in raw_of if key in raw_of[p]}
    for field, shown, small, large, message in _ORDER:
        if key in values[small] and key in values[large] and values[small][key] > values[large][key]:
            body = f'Invalid value: "{text[shown]}": {message.format(**text)}'
            errors.append(InputError(body, field=f"{at}.{field}[{key}]"))
    ratio = values["maxLimitRequestRatio"]
    if key in ratio and ratio[key] < 1:
        shown_ratio = text["maxLimitRequestRatio"]
        body = f'Invalid value: "{shown_ratio}": ratio {shown_ratio} is less than 1'
        errors.append(InputError(body, field=f"{at}.maxLimitRequestRatio[{key}]"))
    return errors


def resource_quota_errors(obj: Mapping[str, Any]) -> list[InputError]:
    """``ValidateResourceQuota``'s checks of ``spec.hard`` (non-negative quantities) and the scopes."""
    errors: list[InputError] = []
    spec = obj.get("spec") or {}
    for key, value in _list(spec.get("hard")).items():
        if _quantity(value, f"spec.hard[{key}]") < 0:
            message = f'Invalid value: "{value}": must be greater than or equal to 0'
            errors.append(InputError(message, field=f"spec.hard[{key}]"))
    for i, scope in enumerate(spec.get("scopes") or []):
        if scope not in QUOTA_SCOPES and scope != "CrossNamespacePodAffinity":
            errors.append(InputError(f'Unsupported value: "{scope}"', field=f"spec.scopes[{i}]"))
    return errors


def aggregate(errors: list[InputError]) -> None:
    """Raise the errors as kube-apiserver's aggregate: one as it is, several listed ``[a, b]``."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        listed = ", ".join(f"{e.field}: {e.message}" for e in errors)
        raise InputError(f"[{listed}]", causes=[(e.field or "", e.message) for e in errors])


# -- usage -------------------------------------------------------------------------------------
def _container_usage(requests: Mapping[str, Fraction], limits: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """``podComputeUsageHelper``: the quota names a set of requests and limits fills."""
    out: dict[str, Fraction] = {"pods": Fraction(1)}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out[f"requests.{name}"] = amount
        elif "/" in name and not name.startswith(("kubernetes.io/", "requests.")):
            out[f"requests.{name}"] = amount
    return out


def _resources(container: Mapping[str, Any], part: str) -> dict[str, Fraction]:
    raw = _list((container.get("resources") or {}).get(part))
    return {k: parse_quantity(v) for k, v in raw.items()}


def pod_resources(pod_spec: Mapping[str, Any], part: str, *, overhead: bool = True) -> dict[str, Fraction]:
    """``resourcehelper.PodRequests``/``PodLimits`` as quantities: ``api.resources``' aggregation
    (app containers and sidecars summed, each plain init container on top of the sidecars before
    it, the larger taken; pod-level resources where set), the overhead added to requests and to the
    limits that are set (LimitRanger's own podRequests adds none: ``overhead=False``)."""

    def parsed(raw: Any) -> dict[str, int]:
        return parse_resource_list(raw, f"spec.resources.{part}")

    app = [parsed((c.get("resources") or {}).get(part)) for c in pod_spec.get("containers") or []]
    inits = [
        (parsed((c.get("resources") or {}).get(part)), c.get("restartPolicy") == "Always")
        for c in pod_spec.get("initContainers") or []
    ]
    total = container_requests(app, inits)
    apply_pod_level(total, parsed((pod_spec.get("resources") or {}).get(part)))
    for name, amount in parsed(pod_spec.get("overhead") if overhead else None).items():
        if part == "requests" or name in total:
            total[name] = total.get(name, 0) + amount
    return {k: Fraction(v, 1000) if k == CPU else Fraction(v) for k, v in total.items()}


def pod_counts_compute(pod: Mapping[str, Any]) -> bool:
    """``QuotaV1Pod``: a pod that has finished is charged only its object count (one stuck
    terminating past its grace period is too upstream; kubesched's hollow kubelet never leaves one)."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed")


def usage(kind: str, plural: str, group: str, obj: Mapping[str, Any]) -> dict[str, Fraction]:
    """What ``obj`` counts against a quota: ``count/<resource>[.<group>]`` for every kind, the legacy
    count names of the core kinds, a pod's compute resources, a claim's storage, a Service's node
    ports and load balancers."""
    out = {f"count/{plural}.{group}" if group else f"count/{plural}": Fraction(1)}
    legacy = LEGACY_COUNTS.get(kind)
    if kind == "Pod":
        if pod_counts_compute(obj):
            spec = obj.get("spec") or {}
            out.update(_container_usage(pod_resources(spec, "requests"), pod_resources(spec, "limits")))
        return out
    if legacy:
        out[legacy] = Fraction(1)
    if kind == "PersistentVolumeClaim":
        spec = obj.get("spec") or {}
        storage = _list((spec.get("resources") or {}).get("requests")).get("storage")
        if storage is not None:
            out["requests.storage"] = parse_quantity(storage)
            cls = spec.get("storageClassName")
            if cls:
                out[f"{cls}.storageclass.storage.k8s.io/requests.storage"] = parse_quantity(storage)
                out[f"{cls}.storageclass.storage.k8s.io/persistentvolumeclaims"] = Fraction(1)
    elif kind == "Service":
        spec = obj.get("spec") or {}
        kind_of = spec.get("type") or "ClusterIP"
        if kind_of in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = Fraction(len(spec.get("ports") or []))
        if kind_of == "LoadBalancer":
            out["services.loadbalancers"] = Fraction(1)
    return out


def missing_container_resources(pod: Mapping[str, Any], required: Iterable[str]) -> str:
    """``podEvaluator.Constraints``: with cpu or memory quota'd, each container must state it;
    ``""`` when all do, else ``must specify requests.cpu for: a,b; …``."""
    needed = sorted(set(required) & set(CONTAINER_REQUIRED))
    spec = pod.get("spec") or {}
    pod_level = spec.get("resources") or {}
    if not needed or _list(pod_level.get("requests")) or _list(pod_level.get("limits")):
        return ""
    missing: dict[str, set[str]] = {}
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        have = _container_usage(_resources(c, "requests"), _resources(c, "limits"))
        for name in needed:
            if name not in have:
                missing.setdefault(name, set()).add(str(c.get("name") or ""))
    if not missing:
        return ""
    return "must specify " + "; ".join(f"{k} for: {','.join(sorted(v))}" for k, v in sorted(missing.items()))


def pretty(amounts: Mapping[str, Fraction]) -> str:
    """``quota.prettyPrint``: ``name=quantity`` sorted by name, comma-separated."""
    return ",".join(f"{k}={quantity_text(k, v)}" for k, v in sorted(amounts.items()))


def quantity_text(name: str, amount: Fraction) -> str:
    """A sum as a Quantity prints: memory-like amounts in binary units when whole multiples of 1024."""
    if amount.denominator == 1 and name.endswith(BINARY_RESOURCES) and amount >= 1024 and amount % 1024 == 0:
        return canonical(f"{int(amount) // 1024}Ki")
    if amount.denominator == 1:
        return canonical(int(amount))
    return canonical(f"{math.ceil(amount * 1000)}m")
