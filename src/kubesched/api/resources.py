"""Resource lists and the effective pod request (``k8s.io/component-helpers/resource``.PodRequests).

CPU is kept in millicores, every other resource in whole units. The pod request is
max(sum of app containers + restartable init containers, each init container on top of the
sidecars started before it) plus ``spec.overhead``; pod-level ``spec.resources`` wins where set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.quantity import QuantityError, milli_value, value
from kubesched.errors import InputError

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: used for scoring only.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

Resources = dict[str, int]


def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``: extended, hugepages, prefixed-native, attachable volumes."""
    return "/" in name or name.startswith("hugepages-") or name.startswith("attachable-volumes-")


def is_tracked_resource(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) or is_scalar_resource(name)


def parse_resource_list(raw: Any, field: str) -> Resources:
    """Parse a ``ResourceList`` (name → quantity) into integer units, cpu in millicores."""
    if raw is None:
        return {}
    if not isinstance(raw, (dict, Mapping)):
        raise InputError(f"expected a map of resource quantities, got {type(raw).__name__}", field=field)
    out: Resources = {}
    for name, qty in raw.items():
        if not is_tracked_resource(str(name)):
            continue
        try:
            out[str(name)] = milli_value(qty) if name == CPU else value(qty)
        except QuantityError as exc:
            raise InputError(str(exc), field=f"{field}[{name}]") from None
        except (TypeError, ValueError):
            raise InputError(f"invalid quantity {qty!r}", field=f"{field}[{name}]") from None
    return out


def _add(into: Resources, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max_into(into: Resources, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


def _with_defaults(req: Resources) -> Resources:
    """Fill a missing (not explicitly zero) cpu/memory request with the scoring defaults."""
    out = dict(req)
    if CPU not in out:
        out[CPU] = DEFAULT_MILLI_CPU_REQUEST
    if MEMORY not in out:
        out[MEMORY] = DEFAULT_MEMORY_REQUEST
    return out


def pod_requests(
    containers: list[Resources],
    init_containers: list[tuple[Resources, bool]],
    overhead: Resources,
    pod_level: Resources | None = None,
    *,
    non_zero: bool = False,
) -> Resources:
    """Effective pod request; ``init_containers`` pairs each request with "is restartable (sidecar)".

    With ``non_zero`` every container's missing cpu/memory counts as 100m / 200Mi, as
    NodeInfo.NonZeroRequested does for scoring.
    """
    reqs = container_requests(containers, init_containers, non_zero=non_zero)
    apply_pod_level(reqs, pod_level)
    _add(reqs, overhead)
    return reqs


def max_of(*lists: Mapping[str, int]) -> Resources:
    """Per resource, the largest of the lists (component-helpers' ``max``)."""
    out: Resources = {}
    for one in lists:
        _max_into(out, one)
    return out


def apply_pod_level(reqs: Resources, pod_level: Mapping[str, int] | None) -> None:
    """Pod-level requests (cpu, memory, hugepages) replace the containers' sum."""
    if not pod_level:
        return
    for name in (CPU, MEMORY):
        if name in pod_level:
            reqs[name] = pod_level[name]
    for name, v in pod_level.items():
        if name.startswith("hugepages-"):
            reqs[name] = v


def add_into(into: Resources, other: Mapping[str, int]) -> None:
    _add(into, other)


def container_requests(
    containers: list[Resources], init_containers: list[tuple[Resources, bool]], *, non_zero: bool = False
) -> Resources:
    """``AggregateContainerRequests``: app containers and sidecars summed, each init container on
    top of the sidecars started before it, the larger of the two."""
    reqs: Resources = {}
    for c in containers:
        _add(reqs, _with_defaults(c) if non_zero else c)
    init_max: Resources = {}
    sidecars: Resources = {}
    for c, restartable in init_containers:
        creq = _with_defaults(c) if non_zero else c
        if restartable:
            _add(reqs, creq)
            _add(sidecars, creq)
            effective = dict(sidecars)
        else:
            effective = dict(creq)
            _add(effective, sidecars)
        _max_into(init_max, effective)
    _max_into(reqs, init_max)
    return reqs
