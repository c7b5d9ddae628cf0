"""``kubesched simulate``: load a cluster, run the scheduler on a virtual clock until quiescent.

Quiescent means activeQ and backoffQ are empty, nothing waits at Permit or on a timer, and every
unschedulable pod was last tried against the current cluster state (so the 5-minute flush
would only repeat the same verdict). Backoff and the flush cost virtual time only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.pod import DEFAULT_SCHEDULER_NAME
from kubesched.api.validation_podgroups import pod_group_min_count
from kubesched.cluster.loader import load_paths, warn
from kubesched.cluster.store import Store
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.embedded.virtual import MAX_VIRTUAL_SECONDS, Progress, run_to_quiescence
from kubesched.errors import InputError
from kubesched.features import FeatureGates
from kubesched.loading.manifests import split_config, validate_manifest
from kubesched.scheduler.parts import Explanation
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.reschedule import unbound
from kubesched.simulate.usage import node_usage

__all__ = ["MAX_VIRTUAL_SECONDS", "pending_reason", "run_to_quiescence", "simulate"]

# configuration sections that mean nothing to one in-process scheduler on a virtual clock
SIMULATE_IGNORES = {
    "leaderElection": "one simulated scheduler elects no leader (kubesched scheduler does)",
    "clientConnection": "simulate talks to no API server (kubesched scheduler does)",
}


@dataclass(slots=True)
class SimulationResult:
    pods: list[dict[str, Any]] = field(default_factory=list)
    deleted_pods: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    explain: dict[str, list[Explanation]] = field(default_factory=dict)
    timing: dict[str, Any] = field(default_factory=dict)  # wall-clock figures, apart from the deterministic result
    metrics: dict[str, Any] = field(default_factory=dict)  # the scheduler's metrics, summarised (reports)
    nodes: list[dict[str, Any]] = field(default_factory=list)  # per-node requested share (reports)
    # each PodGroup: its gang's minCount (None: basic), its pods bound and its
    # PodGroupInitiallyScheduled condition (GenericWorkload)
    pod_groups: list[dict[str, Any]] = field(default_factory=list)


def pod_group_outcomes(store: Store, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each PodGroup with its minCount, how many of its pods are bound, and its
    PodGroupInitiallyScheduled condition."""
    bound: dict[tuple[str, str], int] = {}
    members: dict[tuple[str, str], int] = {}
    for p in pods:
        obj = store.try_get("Pod", p["namespace"], p["name"])
        group = ((obj or {}).get("spec") or {}).get("schedulingGroup") or {}
        if group.get("podGroupName"):
            key = (p["namespace"], str(group["podGroupName"]))
            members[key] = members.get(key, 0) + 1
            bound[key] = bound.get(key, 0) + bool(p["nodeName"])
    out = []
    for pg in store.list("PodGroup")[0]:
        meta = pg["metadata"]
        key = (meta.get("namespace") or "default", meta["name"])
        conditions = (pg.get("status") or {}).get("conditions") or []
        condition = next((c for c in conditions if c.get("type") == "PodGroupInitiallyScheduled"), None)
        out.append(
            {
                "namespace": key[0],
                "name": key[1],
                "minCount": pod_group_min_count(pg),
                "pods": members.get(key, 0),
                "bound": bound.get(key, 0),
                "condition": None
                if condition is None
                else {k: condition.get(k, "") for k in ("status", "reason", "message")},
            }
        )
    return out


def deletion_reason(pod: dict[str, Any]) -> str:
    """The DisruptionTarget condition's reason (PreemptionByScheduler, EvictionByEvictionAPI)
    when the pod was disrupted on purpose, else "Deleted"."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "DisruptionTarget" and c.get("status") == "True" and c.get("reason"):
            return str(c["reason"])
    return "Deleted"


def pending_reason(sched: Scheduler, obj: dict[str, Any]) -> tuple[str, str | None]:
    """Why a pod is not bound: ``(reason, message)``. SchedulingGated as kubectl shows it (the
    message of the SchedulingGates plugin's PreEnqueue), a schedulerName no profile answers to,
    or the last FailedScheduling message with the PodScheduled condition's reason (Unschedulable,
    or SchedulerError when the attempt failed rather than found no node)."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    gates = [str((g or {}).get("name")) for g in spec.get("schedulingGates") or []]
    if gates:
        return "SchedulingGated", f"waiting for scheduling gates: [{' '.join(gates)}]"
    name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    uid = meta.get("uid")
    for qp in sched.gated_pods():  # held back by another PreEnqueue plugin (DynamicResources)
        members = qp.members if isinstance(qp, QueuedPodGroupInfo) else [qp]
        if qp.gated_status is not None and any(m.pod.uid == uid for m in members):
            return "PreEnqueue", f"{qp.gating_plugin}: {qp.gated_status.message()}"
    if name not in sched.profiles:
        return "NoProfile", f'no profile has schedulerName "{name}"; no scheduler here will take this pod'
    message = sched.last_message.get(f"{meta['namespace']}/{meta['name']}")
    if not message:
        return "Pending", None
    conditions = (obj.get("status") or {}).get("conditions") or []
    scheduled: dict[str, Any] = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
    return ("SchedulerError" if scheduled.get("reason") == "SchedulerError" else "Unschedulable"), message


def simulate(
    paths: list[str],
    *,
    config_path: str | None = None,
    seed: int = 0,
    explain: list[str] | None = None,
    field_validation: str = "Strict",
    progress: Progress | None = None,
    feature_gates: FeatureGates | None = None,
    reschedule: bool = False,
) -> SimulationResult:
    """Load, validate and create every object, schedule until quiescent, and collect the result.
    ``feature_gates`` (``--feature-gates``) override the configuration's; ``reschedule``: every
    bound pod a profile schedules is taken off its node first (``reschedule.unbound``)."""
    loaded = load_paths(paths)
    for m in loaded.manifests:
        for warning in validate_manifest(m, field_validation):
            warn(warning)
    config, objects = split_config(loaded.manifests, config_path)
    if feature_gates is not None:
        config.feature_gates = config.feature_gates.merged(feature_gates)
    if reschedule:
        objects, _ = unbound(objects, [p.scheduler_name for p in config.profiles])
    for key, why in SIMULATE_IGNORES.items():
        if key in config.present:
            warn(f"{key} is ignored by simulate: {why}")
    cluster = EmbeddedCluster(
        config=config,
        manifests=objects,
        explain=set(explain or ()),
        seed=seed,
        start=False,
        expand_workloads=True,
    )
    store, rejected, pod_manifests, sched, client = (
        cluster.store,
        cluster.rejected,
        cluster.pods,
        cluster.sched,
        cluster.client,
    )
    if not objects:  # after the scheduler is built, so that a bad configuration is reported first
        raise InputError("no Kubernetes objects found in " + ", ".join(paths))
    deleted: list[dict[str, Any]] = []
    watch = store.watch(["Pod"], store.resource_version)
    started = time.perf_counter()
    cluster.run_to_quiescence(progress=progress)
    wall = time.perf_counter() - started
    client.flush_events(final=True)  # series counted in memory are written, as the final rounds would
    made: list[tuple[str, str]] = []  # pods the workloads' controllers created, in order
    for ev in watch.drain():
        if ev.type == "ADDED":
            made.append((ev.obj["metadata"].get("namespace") or "default", ev.obj["metadata"]["name"]))
        if ev.type == "DELETED":
            meta = ev.obj["metadata"]
            deleted.append(
                {
                    "namespace": meta.get("namespace"),
                    "name": meta.get("name"),
                    "nodeName": (ev.obj.get("spec") or {}).get("nodeName"),
                    "reason": deletion_reason(ev.obj),
                }
            )

    result = SimulationResult(rejected=rejected, deleted_pods=deleted, explain=sched.explanations)
    nodes_used: set[str] = set()
    bound = 0
    given = [
        ((m.obj.get("metadata") or {}).get("namespace") or "default", (m.obj.get("metadata") or {}).get("name", ""))
        for m in pod_manifests
    ]
    for namespace, name in dict.fromkeys([*given, *made]):
        obj = store.try_get("Pod", namespace, name)
        if obj is None:
            continue
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        node = spec.get("nodeName")
        if node:
            bound += 1
            nodes_used.add(node)
            reason, message = "Scheduled", None
        else:
            reason, message = pending_reason(sched, obj)
        result.pods.append(
            {
                "namespace": obj["metadata"]["namespace"],
                "name": obj["metadata"]["name"],
                "nodeName": node or None,
                "nominatedNodeName": status.get("nominatedNodeName") or None,
                "priority": spec.get("priority", 0),
                "reason": reason,
                "message": message,
            }
        )
    result.pod_groups = pod_group_outcomes(store, result.pods)
    events, _ = store.list("Event")
    result.events = [
        {
            "type": e["type"],
            "reason": e["reason"],
            "namespace": e["involvedObject"]["namespace"],
            "name": e["involvedObject"]["name"],
            "message": e["message"],
            "count": (e.get("series") or {}).get("count") or e.get("count") or 1,
        }
        for e in events
    ]
    scheduled = sched.stats.scheduled
    result.stats = {
        "pods": len(result.pods),
        "bound": bound,
        "pending": len(result.pods) - bound,
        "nodes": sched.node_table().n,
        "nodesUsed": len(nodes_used),
        "attempts": sched.stats.attempts,
        "scheduled": scheduled,
        "unschedulableAttempts": sched.stats.unschedulable,
        "errors": sched.stats.errors,
        "virtualSeconds": store.clock.now(),
    }
    result.metrics = sched.metrics.summary()
    table = sched.node_table()
    for row, usage in enumerate(node_usage(table)):
        alloc, req = table.alloc[:, row], table.requested[:, row]
        usage["cpuPct"] = round(100 * int(req[0]) / int(alloc[0]), 2) if alloc[0] else 0.0
        usage["memoryPct"] = round(100 * int(req[1]) / int(alloc[1]), 2) if alloc[1] else 0.0
        result.nodes.append(usage)
    result.timing = {
        "wallSeconds": round(wall, 6),
        "podsPerSecond": round(scheduled / wall, 1) if wall > 0 else None,
    }
    return result
