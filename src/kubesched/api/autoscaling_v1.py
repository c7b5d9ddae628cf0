"""autoscaling/v1 HorizontalPodAutoscalers, served from the autoscaling/v2 objects kept in the
store, as kube-apiserver converts them (``pkg/apis/autoscaling/v1/conversion.go``): v1 holds a
CPU utilization target and its current value; every other metric, the current metrics, the
conditions and the behavior travel in the round-trip annotations, so a v1 client (kubectl 1.32's
``autoscale``) reads and writes the same object a v2 client does."""

from __future__ import annotations

import json
from typing import Any

METRICS = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP = (METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR)
DEFAULT_CPU_UTILIZATION = 80


def _compact(value: Any) -> str:
    """``json.Marshal``: compact, HTML characters escaped."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


def _is_cpu_utilization(metric: dict[str, Any]) -> bool:
    resource = metric.get("resource") or {}
    return (
        metric.get("type") == "Resource"
        and resource.get("name") == "cpu"
        and (resource.get("target") or {}).get("averageUtilization") is not None
    )


# -- v2 -> v1 ------------------------------------------------------------------------------------


def _metric_to_v1(m: dict[str, Any]) -> dict[str, Any]:
    """A v2 MetricSpec in v1's alpha form, its fields in Go's declaration order."""
    out: dict[str, Any] = {"type": m.get("type")}
    kind = m.get("type")
    if kind == "Object" and m.get("object"):
        src = m["object"]
        target = src.get("target") or {}
        obj: dict[str, Any] = {"target": _reference(src.get("describedObject"))}
        obj["metricName"] = (src.get("metric") or {}).get("name", "")
        obj["targetValue"] = target.get("value", "0")
        _put(obj, "selector", (src.get("metric") or {}).get("selector"))
        _put(obj, "averageValue", target.get("averageValue"))
        out["object"] = obj
    elif kind == "Pods" and m.get("pods"):
        src = m["pods"]
        pods: dict[str, Any] = {"metricName": (src.get("metric") or {}).get("name", "")}
        pods["targetAverageValue"] = (src.get("target") or {}).get("averageValue", "0")
        _put(pods, "selector", (src.get("metric") or {}).get("selector"))
        out["pods"] = pods
    elif kind in ("Resource", "ContainerResource") and m.get(_key(kind)):
        src = m[_key(kind)]
        target = src.get("target") or {}
        res: dict[str, Any] = {"name": src.get("name", "")}
        _put(res, "targetAverageUtilization", target.get("averageUtilization"))
        _put(res, "targetAverageValue", target.get("averageValue"))
        if kind == "ContainerResource":
            res["container"] = src.get("container", "")
        out[_key(kind)] = res
    elif kind == "External" and m.get("external"):
        src = m["external"]
        target = src.get("target") or {}
        ext: dict[str, Any] = {"metricName": (src.get("metric") or {}).get("name", "")}
        _put(ext, "metricSelector", (src.get("metric") or {}).get("selector"))
        _put(ext, "targetValue", target.get("value"))
        _put(ext, "targetAverageValue", target.get("averageValue"))
        out["external"] = ext
    return out


def _reference(ref: Any) -> dict[str, Any]:
    """A CrossVersionObjectReference in v1's field order (kind, name, apiVersion)."""
    ref = ref if isinstance(ref, dict) else {}
    out = {"kind": ref.get("kind", ""), "name": ref.get("name", "")}
    _put(out, "apiVersion", ref.get("apiVersion"))
    return out


def _key(kind: str) -> str:
    return "containerResource" if kind == "ContainerResource" else "resource"


def _status_to_v1(m: dict[str, Any]) -> dict[str, Any]:
    """A v2 MetricStatus in v1's alpha form."""
    out: dict[str, Any] = {"type": m.get("type")}
    kind = m.get("type")
    if kind == "Object" and m.get("object"):
        src = m["object"]
        current = src.get("current") or {}
        obj: dict[str, Any] = {"target": _reference(src.get("describedObject"))}
        obj["metricName"] = (src.get("metric") or {}).get("name", "")
        obj["currentValue"] = current.get("value", "0")
        _put(obj, "selector", (src.get("metric") or {}).get("selector"))
        _put(obj, "averageValue", current.get("averageValue"))
        out["object"] = obj
    elif kind == "Pods" and m.get("pods"):
        src = m["pods"]
        pods: dict[str, Any] = {"metricName": (src.get("metric") or {}).get("name", "")}
        pods["currentAverageValue"] = (src.get("current") or {}).get("averageValue", "0")
        _put(pods, "selector", (src.get("metric") or {}).get("selector"))
        out["pods"] = pods
    elif kind in ("Resource", "ContainerResource") and m.get(_key(kind)):
        src = m[_key(kind)]
        current = src.get("current") or {}
        res: dict[str, Any] = {"name": src.get("name", "")}
        _put(res, "currentAverageUtilization", current.get("averageUtilization"))
        res["currentAverageValue"] = current.get("averageValue", "0")
        if kind == "ContainerResource":
            res["container"] = src.get("container", "")
        out[_key(kind)] = res
    elif kind == "External" and m.get("external"):
        src = m["external"]
        current = src.get("current") or {}
        ext: dict[str, Any] = {"metricName": (src.get("metric") or {}).get("name", "")}
        _put(ext, "metricSelector", (src.get("metric") or {}).get("selector"))
        ext["currentValue"] = current.get("value", "0")
        _put(ext, "currentAverageValue", current.get("averageValue"))
        out["external"] = ext
    return out


def _go_behavior(behavior: dict[str, Any]) -> dict[str, Any]:
    """The behavior as the internal Go type marshals it (upstream stores it so: field names)."""

    def rules(r: Any) -> Any:
        if not isinstance(r, dict):
            return None
        policies = [
            {"Type": p.get("type"), "Value": p.get("value"), "PeriodSeconds": p.get("periodSeconds")}
            for p in r.get("policies") or []
        ]
        return {
            "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds"),
            "SelectPolicy": r.get("selectPolicy"),
            "Policies": policies or None,
            "Tolerance": r.get("tolerance"),
        }

    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _k8s_behavior(go: Any) -> dict[str, Any] | None:
    def rules(r: Any) -> Any:
        if not isinstance(r, dict):
            return None
        out: dict[str, Any] = {}
        _put(out, "stabilizationWindowSeconds", r.get("StabilizationWindowSeconds"))
        _put(out, "selectPolicy", r.get("SelectPolicy"))
        policies = [
            {"type": p.get("Type"), "value": p.get("Value"), "periodSeconds": p.get("PeriodSeconds")}
            for p in r.get("Policies") or []
            if isinstance(p, dict)
        ]
        if policies:
            out["policies"] = policies
        _put(out, "tolerance", r.get("Tolerance"))
        return out

    if not isinstance(go, dict):
        return None
    out: dict[str, Any] = {}
    _put(out, "scaleUp", rules(go.get("ScaleUp")))
    _put(out, "scaleDown", rules(go.get("ScaleDown")))
    return out or None


def to_v1(hpa: dict[str, Any]) -> dict[str, Any]:
    """The stored (v2) HPA as autoscaling/v1 serves it."""
    meta = dict(hpa.get("metadata") or {})
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in ROUND_TRIP}
    spec2, status2 = hpa.get("spec") or {}, hpa.get("status") or {}
    metrics = [m for m in spec2.get("metrics") or [] if isinstance(m, dict)]
    spec: dict[str, Any] = {"scaleTargetRef": spec2.get("scaleTargetRef") or {}}
    _put(spec, "minReplicas", spec2.get("minReplicas"))
    spec["maxReplicas"] = spec2.get("maxReplicas", 0)
    cpu = next((m for m in metrics if _is_cpu_utilization(m)), None)
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
    others = [_metric_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if others:
        annotations[METRICS] = _compact(others)
    current = [m for m in status2.get("currentMetrics") or [] if isinstance(m, dict)]
    if current:
        annotations[CURRENT_METRICS] = _compact([_status_to_v1(m) for m in current])
    if spec2.get("behavior") is not None:
        annotations[BEHAVIOR] = _compact(_go_behavior(spec2["behavior"]))
    conditions = status2.get("conditions") or []
    if conditions:
        annotations[CONDITIONS] = _compact(
            [
                {k: c[k] for k in ("type", "status", "lastTransitionTime", "reason", "message") if k in c}
                for c in conditions
            ]
        )
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    status: dict[str, Any] = {}  # (v1's status fields, all of them)
    for key in ("observedGeneration", "lastScaleTime"):
        _put(status, key, status2.get(key))
    status["currentReplicas"] = status2.get("currentReplicas", 0)
    status["desiredReplicas"] = status2.get("desiredReplicas", 0)
    for m in current:
        resource = m.get("resource") or {}
        if m.get("type") == "Resource" and resource.get("name") == "cpu":
            _put(status, "currentCPUUtilizationPercentage", (resource.get("current") or {}).get("averageUtilization"))
    out = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1", "metadata": meta, "spec": spec}
    out["status"] = status
    return out


# -- v1 -> v2 ------------------------------------------------------------------------------------


def _metric_from_v1(m: dict[str, Any]) -> dict[str, Any]:
    kind = m.get("type")
    out: dict[str, Any] = {"type": kind}
    if kind == "Object" and isinstance(m.get("object"), dict):
        src = m["object"]
        metric: dict[str, Any] = {"name": src.get("metricName", "")}
        _put(metric, "selector", src.get("selector"))
        target: dict[str, Any] = {"type": "AverageValue" if src.get("averageValue") is not None else "Value"}
        if src.get("averageValue") is not None:
            target["averageValue"] = src["averageValue"]
        else:
            target["value"] = src.get("targetValue", "0")
        out["object"] = {"describedObject": src.get("target") or {}, "target": target, "metric": metric}
    elif kind == "Pods" and isinstance(m.get("pods"), dict):
        src = m["pods"]
        metric = {"name": src.get("metricName", "")}
        _put(metric, "selector", src.get("selector"))
        target = {"type": "AverageValue", "averageValue": src.get("targetAverageValue", "0")}
        out["pods"] = {"metric": metric, "target": target}
    elif kind in ("Resource", "ContainerResource") and isinstance(m.get(_key(kind)), dict):
        src = m[_key(kind)]
        if src.get("targetAverageUtilization") is not None:
            target = {"type": "Utilization", "averageUtilization": src["targetAverageUtilization"]}
        else:
            target = {"type": "AverageValue", "averageValue": src.get("targetAverageValue")}
        res: dict[str, Any] = {"name": src.get("name", ""), "target": target}
        if kind == "ContainerResource":
            res["container"] = src.get("container", "")
        out[_key(kind)] = res
    elif kind == "External" and isinstance(m.get("external"), dict):
        src = m["external"]
        metric = {"name": src.get("metricName", "")}
        _put(metric, "selector", src.get("metricSelector"))
        if src.get("targetAverageValue") is not None:
            target = {"type": "AverageValue", "averageValue": src["targetAverageValue"]}
        else:
            target = {"type": "Value", "value": src.get("targetValue")}
        out["external"] = {"metric": metric, "target": target}
    return out


def _annotation(annotations: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(str(annotations[key])) if key in annotations else None
    except ValueError:
        return None  # upstream ignores an annotation that does not decode


def from_v1(hpa: dict[str, Any]) -> dict[str, Any]:
    """An autoscaling/v1 HPA as the v2 object the store keeps (the round-trip annotations read
    back and dropped; no metric at all is the CPU at 80%, v1's implicit default)."""
    meta = dict(hpa.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec1 = hpa.get("spec") or {}
    spec: dict[str, Any] = {"scaleTargetRef": spec1.get("scaleTargetRef") or {}}
    _put(spec, "minReplicas", spec1.get("minReplicas"))
    spec["maxReplicas"] = spec1.get("maxReplicas", 0)
    metrics = [_metric_from_v1(m) for m in _annotation(annotations, METRICS) or [] if isinstance(m, dict)]
    cpu = spec1.get("targetCPUUtilizationPercentage")
    if cpu is not None:
        metrics.append(
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}},
            }
        )
    if not metrics:
        target = {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": target}}]
    spec["metrics"] = metrics
    behavior = _k8s_behavior(_annotation(annotations, BEHAVIOR))
    if behavior:
        spec["behavior"] = behavior
    for key in ROUND_TRIP:
        annotations.pop(key, None)
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out: dict[str, Any] = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta}
    out["spec"] = spec
    status1 = hpa.get("status")
    if isinstance(status1, dict):
        status: dict[str, Any] = {k: status1[k] for k in ("observedGeneration", "lastScaleTime") if k in status1}
        status["currentReplicas"] = status1.get("currentReplicas", 0)
        status["desiredReplicas"] = status1.get("desiredReplicas", 0)
        out["status"] = status
    return out
