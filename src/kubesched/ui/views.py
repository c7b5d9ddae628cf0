"""What the web UI shows, as plain JSON: nodes with allocatable and allocated resources, pods
with their node or pending reason, the scheduling queue's sub-queues, and a pod's scheduling
results. Built from the Store and the running Scheduler (read only)."""

from __future__ import annotations

import json
from typing import Any

from kubesched.api.node import node_info_from
from kubesched.api.pod import pod_info_from
from kubesched.attempt_table import pending_message, verdict
from kubesched.errors import InputError
from kubesched.scheduler.resultstore import HISTORY, PREFIX, parse
from kubesched.scheduler.scheduler import Scheduler

TERMINATED = ("Succeeded", "Failed")


def node_view(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    try:
        allocatable = dict(node_info_from(obj).allocatable)
    except InputError:
        allocatable = {}
    ready = next((c.get("status") for c in status.get("conditions") or [] if c.get("type") == "Ready"), "Unknown")
    return {
        "name": meta.get("name"),
        "labels": meta.get("labels") or {},
        "allocatable": allocatable,
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in spec.get("taints") or []],
        "ready": ready,
    }


def pod_view(obj: dict[str, Any]) -> dict[str, Any]:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    try:
        requests = dict(pod_info_from(obj).requests)
    except (InputError, KeyError, TypeError, ValueError):
        requests = {}
    cond: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    annotations = meta.get("annotations") or {}
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "node": spec.get("nodeName") or "",
        "nominated": status.get("nominatedNodeName") or "",
        "phase": status.get("phase") or "Pending",
        "terminated": status.get("phase") in TERMINATED,
        "deleting": bool(meta.get("deletionTimestamp")),
        "priority": spec.get("priority") or 0,
        "schedulerName": spec.get("schedulerName") or "default-scheduler",
        "requests": requests,
        "reason": cond.get("reason") or "",
        "message": cond.get("message") or "",
        "gated": bool(spec.get("schedulingGates")),
        "hasResults": any(k.startswith(PREFIX) for k in annotations),
    }


def queue_view(sched: Scheduler | None) -> dict[str, Any]:
    """The three sub-queues (and gated pods, and the pod in flight), each pod with its attempts,
    backoff expiry and the plugins that rejected it."""
    if sched is None:
        return {"activeQ": [], "backoffQ": [], "unschedulablePods": [], "gated": [], "inFlight": []}
    now = sched.clock.now()
    names = {"active": "activeQ", "backoff": "backoffQ", "unschedulable": "unschedulablePods", "gated": "gated"}
    out: dict[str, list[dict[str, Any]]] = {v: [] for v in names.values()}
    out["inFlight"] = []
    for qp in sched.queued():
        # a pod group's member is where its group is; one waiting for its PodGroup object, or
        # for its group's cycle to end, is held back as a gated pod is
        state = sched.where(qp.uid)
        group = sched.group_of(qp.uid)
        held = state in ("incomplete", "pending")
        where = "inFlight" if state == "inFlight" else ("gated" if held else names.get(state, "activeQ"))
        entry: dict[str, Any] = {
            "namespace": qp.pod.namespace,
            "name": qp.pod.name,
            "attempts": qp.attempts,
            "unschedulablePlugins": sorted(qp.unschedulable_plugins),
            "pendingPlugins": sorted(qp.pending_plugins),
            "gatingPlugin": group.gating_plugin if group is not None else qp.gating_plugin,
            "priority": qp.pod.priority,
        }
        if qp.pod.pod_group:
            entry["podGroup"] = qp.pod.pod_group
            if held:
                entry["gatingPlugin"] = "<its PodGroup>" if state == "incomplete" else "<its group's cycle>"
        if where == "backoffQ":
            expiry = sched.backoff_expiry(group) if group is not None else sched.backoff_expiry(qp)
            entry["backoffSeconds"] = round(max(0.0, expiry - now), 2)
        out[where].append(entry)
    for entries in out.values():
        entries.sort(key=lambda e: (-e["priority"], e["namespace"], e["name"]))
    return out


def results_view(obj: dict[str, Any], sched: Scheduler | None) -> dict[str, Any]:
    """A pod's results (the latest attempt and the history, each with its verdict lines as
    ``kubesched explain`` prints them) and its profile's score weights."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    latest = parse(annotations)
    history: list[Any] = []
    if annotations.get(HISTORY):
        try:
            history = [parse(h) for h in json.loads(annotations[HISTORY])]
        except (ValueError, AttributeError, TypeError):
            history = []
    weights: dict[str, int] = {}
    filters: list[str] = []
    if sched is not None:
        fwk = sched.profiles.get((obj.get("spec") or {}).get("schedulerName") or "default-scheduler")
        if fwk is not None:
            weights = dict(fwk.weights)
            filters = list(fwk.filter_names)
    message = pending_message(obj)  # its latest attempt's
    verdicts = [verdict(h or {}, message if i == len(history) - 1 else "") for i, h in enumerate(history)]
    return {
        "latest": latest,
        "history": history,
        "verdict": verdict(latest, message) if latest else [],
        "historyVerdicts": verdicts,
        "weights": weights,
        "filterPlugins": filters,
    }
