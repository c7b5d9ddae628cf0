"""Builders for test tables: nodes and pods as plain manifests, parsed the way the scheduler does."""

from __future__ import annotations

from typing import Any

from kubesched.api.node import node_info_from
from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.scheduler.nodetable import NodeTable


def make_node(
    name: str,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str = "110",
    *,
    labels: dict | None = None,
    taints: list | None = None,
    unschedulable: bool = False,
    extra: dict | None = None,
    images: list | None = None,
) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})},
            "images": images or [],
        },
    }


def make_pod(
    name: str,
    cpu: str | None = None,
    memory: str | None = None,
    *,
    ns: str = "default",
    priority: int = 0,
    extra: dict | None = None,
    spec: dict | None = None,
    node: str | None = None,
    uid: str | None = None,
    inits: list | None = None,
    priority_class: str | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    requests.update(extra or {})
    body = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}],
        "priority": priority,
        **(spec or {}),
    }
    if priority_class is not None:  # resolved by admission: spec.priority must not be set
        body["priorityClassName"] = priority_class
        del body["priority"]
    if inits is not None:
        body["initContainers"] = inits
    if node:
        body["nodeName"] = node
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{ns}-{name}"}, "spec": body}


def make_waiting_nominated(
    name: str, node: str, cpu: str | None = None, priority_class: str = "never100", labels: dict | None = None
) -> dict[str, Any]:
    """A pending pod nominated to ``node`` that itself can't be placed (its selector matches
    nothing); with a class that may not preempt, its failed attempts leave the nomination in place."""
    p = make_pod(name, cpu=cpu, priority_class=priority_class, spec={"nodeSelector": {"pool": "none"}})
    if labels:
        p["metadata"]["labels"] = labels
    p["status"] = {"nominatedNodeName": node}
    return p


def make_priority_class(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **extra,
    }


def pod(name: str = "p", *args: Any, **kwargs: Any) -> PodInfo:
    return pod_info_from(make_pod(name, *args, **kwargs))


def table(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] = ()) -> NodeTable:
    t = NodeTable()
    for n in nodes:
        t.add_node(node_info_from(n))
    for p in pods:
        info = pod_info_from(p)
        t.add_pod(t.index[info.node_name], info)
    return t
