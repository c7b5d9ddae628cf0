"""In-place pod resize (KEP-1287, GA since v1.35): a pod's request counts what the kubelet has
allocated and actuated beside its spec, the largest of the three per resource
(``k8s.io/component-helpers/resource`` PodRequests with ``UseStatusResources``, as the scheduler's
NodeInfo and NodeResourcesFit call it); a resize the kubelet found infeasible leaves the spec out.
Pod-level status (``status.resources``, ``status.allocatedResources``; InPlacePodLevelResources-
VerticalScaling, beta and on) takes the containers' place when the kubelet reports it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubesched.api.resources import (
    Resources,
    add_into,
    apply_pod_level,
    container_requests,
    max_of,
    parse_resource_list,
)

RESIZE_PENDING = "PodResizePending"


def resize_infeasible(status: Mapping[str, Any]) -> bool:
    """``IsPodResizeInfeasible``: the first PodResizePending condition says Infeasible."""
    for cond in status.get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == RESIZE_PENDING:
            return cond.get("reason") == "Infeasible"
    return False


def reports_resources(status: Mapping[str, Any]) -> bool:
    """Whether the status can change the request: a container status with allocated or actuated
    resources, pod-level ones, or a PodResizePending condition. Without any, the spec decides."""
    if status.get("resources") is not None or status.get("allocatedResources") is not None:
        return True
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if isinstance(cs, Mapping) and any(cs.get(k) is not None for k in ("allocatedResources", "resources")):
                return True
    return any(isinstance(c, Mapping) and c.get("type") == RESIZE_PENDING for c in status.get("conditions") or ())


def _statuses(status: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """``findContainerStatus``: by name (with its field path), app containers' statuses before
    init containers'."""
    out: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for i, cs in enumerate(status.get(key) or ()):
            if isinstance(cs, Mapping):
                out[str(cs.get("name"))] = (f"status.{key}[{i}]", cs)
    return out


def requests_with_status(
    containers: Sequence[tuple[Resources, Mapping[str, Any]]],
    inits: Sequence[tuple[Resources, Mapping[str, Any]]],
    status: Mapping[str, Any],
    overhead: Resources,
    pod_level: Resources | None,
    *,
    non_zero: bool = False,
) -> Resources:
    """The pod's request: max(spec, actuated, allocated) over the containers (infeasible: the
    latter two), pod-level requests over it, the overhead added."""
    infeasible = resize_infeasible(status)
    found = _statuses(status)

    def allocated(req: Resources, c: Mapping[str, Any]) -> Resources:
        cs = found.get(str(c.get("name")))
        if cs is not None and cs[1].get("allocatedResources") is not None:
            return parse_resource_list(cs[1]["allocatedResources"], f"{cs[0]}.allocatedResources")
        return {} if infeasible else req

    def actuated(req: Resources, c: Mapping[str, Any]) -> Resources:
        cs = found.get(str(c.get("name")))
        if cs is not None:
            requests = (cs[1].get("resources") or {}).get("requests")
            if requests is not None:
                return parse_resource_list(requests, f"{cs[0]}.resources.requests")
        return allocated(req, c)

    def aggregate(view: Any) -> Resources:
        return container_requests(
            [view(r, c) for r, c in containers],
            [(view(r, c), c.get("restartPolicy") == "Always") for r, c in inits],
            non_zero=non_zero,
        )

    spec_reqs = aggregate(lambda r, _c: r)
    pod_allocated, pod_resources = status.get("allocatedResources"), status.get("resources")
    pod_actuated = (pod_resources or {}).get("requests") if isinstance(pod_resources, Mapping) else None
    if pod_allocated is not None and pod_actuated is not None:
        alloc_reqs = parse_resource_list(pod_allocated, "status.allocatedResources")
        act_reqs = parse_resource_list(pod_actuated, "status.resources.requests")
    else:
        alloc_reqs, act_reqs = aggregate(allocated), aggregate(actuated)
    reqs = max_of(act_reqs, alloc_reqs) if infeasible else max_of(spec_reqs, act_reqs, alloc_reqs)
    if pod_level:
        effective: Resources = pod_level
        if pod_resources is not None:  # effectivePodLevelResources
            effective = max_of(
                {} if infeasible else pod_level,
                parse_resource_list(pod_actuated, "status.resources.requests"),
                parse_resource_list(pod_allocated, "status.allocatedResources"),
            )
        apply_pod_level(reqs, effective)
    add_into(reqs, overhead)
    return reqs
