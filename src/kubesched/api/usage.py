"""What a hollow pod uses, as metrics-server would report it from the kubelet: its containers'
requests, unless the pod says otherwise with ``kubesched.io/cpu-usage`` or
``kubesched.io/memory-usage`` (the pod's total, shared among its containers in proportion to their
requests). ``kubectl top`` and the HorizontalPodAutoscaler controller read the same numbers, so a
Deployment whose template carries ``kubesched.io/cpu-usage: 900m`` makes its autoscaler act."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.quantity import QuantityError, milli_value, value

CPU_USAGE = "kubesched.io/cpu-usage"
MEMORY_USAGE = "kubesched.io/memory-usage"


def _requests(container: Mapping[str, Any]) -> tuple[int, int]:
    req = ((container or {}).get("resources") or {}).get("requests") or {}
    cpu = milli_value(req["cpu"]) if "cpu" in req else 0
    mem = value(req["memory"]) if "memory" in req else 0
    return cpu, mem


def _share(total: int, weights: list[int]) -> list[int]:
    """``total`` split by ``weights`` (all to the first when they are all zero), summing exactly."""
    if not weights:
        return []
    whole = sum(weights)
    if whole == 0:
        return [total, *([0] * (len(weights) - 1))]
    parts = [total * w // whole for w in weights]
    parts[0] += total - sum(parts)
    return parts


def container_usage(pod: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(container name, millicores, bytes) for each of the pod's containers."""
    containers = (pod.get("spec") or {}).get("containers") or []
    names = [str(c.get("name", "")) for c in containers]
    requests = [_requests(c) for c in containers]
    cpu = [r[0] for r in requests]
    mem = [r[1] for r in requests]
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        if CPU_USAGE in annotations:
            cpu = _share(milli_value(annotations[CPU_USAGE]), cpu)
        if MEMORY_USAGE in annotations:
            mem = _share(value(annotations[MEMORY_USAGE]), mem)
    except QuantityError:
        pass  # a malformed annotation: the requests stand
    return list(zip(names, cpu, mem, strict=True))


def pod_usage(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(millicores, bytes) the pod uses."""
    usage = container_usage(pod)
    return sum(u[1] for u in usage), sum(u[2] for u in usage)
