"""``kubesched replay``: a workload through the scheduler on the virtual clock, measured as the
FGD paper measures it.

Two modes:

- ``timed``: pods arrive at their creation time and leave at their deletion time; pending pods are
  retried as kube-scheduler retries them (backoff, cluster events, the 5-minute flush), all on the
  virtual clock. Measures are sampled at evenly spaced times.
- ``arrivals`` (the paper's method, ``TunePodsByNodeTotalResource`` and ``SchedulePods`` of its
  simulator): arrivals only, in a seeded shuffle of the workload, which is grown by seeded draws from
  it (or shrunk by seeded removals) until the GPUs it asks for reach ``load`` times the cluster's
  capacity; each pod is tried once, and one that fits nowhere is dropped. Measures are taken after
  every arrival and averaged per whole percent of arrived workload, as the paper's analysis does.

The GPU measures come from the allocations recorded on the bound pods (``gpu.GpuLedger``), not from
any plugin: allocation ratio (GPU milli in use over capacity), fragmentation (the paper's definition,
``gpu.Fragmentation``, for the workload's typical pods) as a share of capacity and of idle GPU.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.cluster.loader import Manifest, load_paths
from kubesched.cluster.store import Store
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.embedded.populate import NAMESPACE_LABEL
from kubesched.errors import InputError
from kubesched.features import FeatureGates
from kubesched.gpus.sharing import (
    GPU_COUNT,
    GPU_INDEX,
    GPU_MILLI,
    GPU_MODEL,
    Fragmentation,
    GpuLedger,
    parse_index,
    request_of_pod,
    typical_pods,
)
from kubesched.loading.manifests import validate_manifest
from kubesched.replay import trace
from kubesched.replay.gangs import GANG_MODES, GangStats, Unit, tune_units, units
from kubesched.replay.profiles import DEFAULT_POLICY, PAPER_POLICIES, policy_config, typical_pods_arg
from kubesched.replay.tiebreak import paper_names
from kubesched.scheduler.config import SchedulerConfig, parse_config
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.usage import node_usage

MODES = ("timed", "arrivals")
FEW_ROWS = 4  # nodes changed since the last sample below which their fragmentation is computed one by one
TIE_BREAKS = ("permutation", "random", "name")


@dataclass(slots=True)
class ReplayResult:
    params: dict[str, Any]
    summary: dict[str, Any]
    curve: list[dict[str, Any]] = field(default_factory=list)  # measures per sample (time or arrived %)
    reasons: dict[str, int] = field(default_factory=dict)  # unschedulable reasons, per node verdict
    typical_pods: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)  # the scheduler's metrics, summarised
    nodes: dict[str, Any] = field(default_factory=dict)  # per-node GPU allocation at the end or at the peak
    timing: dict[str, Any] = field(default_factory=dict)
    # for the report only (a sweep keeps none of them): every binding, the pods left pending
    # with their last message, and each node's use at the end (simulate/usage.py)
    placements: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, object]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "params": self.params,
            "summary": self.summary,
            "curve": self.curve,
            "reasons": self.reasons,
            "typicalPods": self.typical_pods,
            "metrics": self.metrics,
            "nodes": self.nodes,
        }


def load_cluster(paths: list[str]) -> list[Manifest]:
    """Nodes from the trace's node CSV or from manifests (validated as ``simulate`` validates them)."""
    out: list[Manifest] = []
    rest: list[str] = []
    for p in paths:
        if trace.is_node_csv(p):
            out.extend(Manifest(n, p, i) for i, n in enumerate(trace.load_nodes_csv(p)))
        else:
            rest.append(p)
    if rest:
        for m in load_paths(rest).manifests:
            validate_manifest(m)
            out.append(m)
    if not any(m.kind == "Node" for m in out):
        raise InputError("the cluster has no nodes", file=", ".join(paths))
    return out


class _Measure:
    """Follows the store's pods into a GpuLedger and takes the paper's measures."""

    def __init__(self, store: Store, nodes: list[dict[str, Any]], frag: Fragmentation | None) -> None:
        self.store = store
        self.ledger = GpuLedger()
        for n in nodes:
            alloc = (n.get("status") or {}).get("allocatable") or {}
            cpu = str(alloc.get("cpu", "0"))
            cpu_milli = int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
            labels = (n.get("metadata") or {}).get("labels") or {}
            self.ledger.add_node(
                n["metadata"]["name"], cpu_milli, int(alloc.get(GPU_COUNT, 0) or 0), labels.get(GPU_MODEL, "")
            )
        self.frag = None if frag is None else Fragmentation(frag.typical, self.ledger.models)
        self.node_frag = np.zeros(len(self.ledger.names))
        self.dirty: set[int] = set(range(len(self.ledger.names)))  # rows whose fragmentation is owed
        self.total: float | None = None  # node_frag's sum while no row has changed since
        self.watch = store.watch(["Pod"], store.resource_version)
        self.requests: dict[str, Any] = {}
        self.bound = 0
        self.placements: list[dict[str, Any]] = []

    def sync(self) -> None:
        for ev in self.watch.drain():
            obj = ev.obj
            uid = obj["metadata"].get("uid", "")
            if ev.type == "DELETED":
                got = self.ledger.pods.get(uid)
                if got is not None:
                    self.dirty.add(got[0])
                    self.ledger.release(uid)
                continue
            node = (obj.get("spec") or {}).get("nodeName")
            if not node or uid in self.ledger.pods or node not in self.ledger.row:
                continue
            req = self.requests.get(uid) or request_of_pod(obj)
            index = ((obj["metadata"].get("annotations") or {}).get(GPU_INDEX)) or ""
            devices = parse_index(index) if req.gpu_count else []
            self.ledger.bind(uid, node, req, devices)
            self.dirty.add(self.ledger.row[node])
            self.bound += 1
            self.placements.append(
                {
                    "pod": obj["metadata"]["name"],
                    "node": node,
                    "at": self.store.clock.now(),
                    "gpus": req.gpu_count,
                    "gpuMilli": req.gpu_milli,
                    "devices": ",".join(map(str, devices)),
                }
            )

    def fragmentation(self) -> float:
        if self.frag is None:
            return 0.0
        if len(self.dirty) > FEW_ROWS:
            lg = self.ledger
            rows = np.fromiter(sorted(self.dirty), np.intp, len(self.dirty))
            self.node_frag[rows] = self.frag.amount(
                lg.cpu_alloc[rows] - lg.cpu_used[rows], lg.gpu_left[rows], lg.model[rows]
            )
        elif self.dirty:  # a pod or two bound since the last sample: their nodes, one by one
            lg = self.ledger
            for r in self.dirty:
                self.node_frag[r] = self.frag.amount_of(
                    int(lg.cpu_alloc[r] - lg.cpu_used[r]), lg.gpu_left[r].tolist(), int(lg.model[r])
                )
        elif self.total is not None:  # nothing bound or released (the pod failed): the same sum
            return self.total
        self.dirty.clear()
        self.total = float(np.add.reduce(self.node_frag))  # = .sum(), without its method wrapper
        return self.total

    def node_allocation(self) -> list[float]:
        """GPU allocated on each GPU node, in percent."""
        lg = self.ledger
        gpu = lg.gpu_count > 0
        used = lg.gpu_count[gpu] * 1000 - lg.gpu_left[gpu].sum(axis=1)
        return [round(float(v), 2) for v in 100 * used / (lg.gpu_count[gpu] * 1000)]

    def sample(self, **extra: Any) -> dict[str, Any]:
        self.sync()
        lg = self.ledger
        cap = lg.capacity_milli or 1
        frag = self.fragmentation()
        idle = cap - lg.used_milli
        return {
            **extra,
            "allocatedPct": round(100 * lg.used_milli / cap, 4),
            "usedGpus": lg.used_gpus,
            "fragmentationPct": round(100 * frag / cap, 4),
            "fragmentationOfIdlePct": round(100 * frag / idle, 4) if idle else 0.0,
            "running": len(lg.pods),
        }


@contextlib.contextmanager
def _long_lived() -> Iterator[None]:
    """The run's cluster, workload and scheduler, built before it and alive throughout, kept out
    of the garbage collector's walks (``gc.freeze``: full collections while the run allocates
    cost an FGD experiment 6–8 % of its time); on exit they rejoin the oldest generation, so
    what a finished replay leaves (a sweep runs many in one process) is still collected. A caller
    that froze objects of its own keeps its choice: nothing is frozen or unfrozen then."""
    if gc.get_freeze_count():
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _build(
    cluster: list[Manifest], config: SchedulerConfig, seed: int, namespace: str, tie_break: str, *, loops: bool
) -> EmbeddedCluster:
    """The cluster's nodes and the workload's namespace in an embedded cluster, its scheduler not
    started; with ``loops`` the claim, volume and disruption loops run beside it (timed mode)."""
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {NAMESPACE_LABEL: namespace}},
    }
    embedded = EmbeddedCluster(
        config=config, manifests=[Manifest(ns, "<replay>", 0), *cluster], seed=seed, start=False, loops=loops
    )
    if embedded.rejected:
        r = embedded.rejected[0]
        raise InputError(f"{r['kind']} {r['name']}: {r['message']}")
    embedded.sched.break_ties(tie_break if tie_break != "permutation" else "random")  # until the names are drawn
    return embedded


def _reasons(sched: Scheduler, failed: list[dict[str, Any]]) -> dict[str, int]:
    """Unschedulable verdicts per reason, summed over the last message of every pod left pending
    (a gang's pod that fitted but whose gang did not: once, as "gang below minCount")."""
    counts: Counter[str] = Counter()
    for message in (f["message"] for f in failed):
        if not message.startswith("0/"):
            if "minCount" in message:
                counts["gang below minCount"] += 1
            continue
        head = message.split(". ", 1)[0]
        _, _, tail = head.partition(": ")
        for part in tail.split(", "):
            n, _, reason = part.partition(" ")
            if n.isdigit() and reason:
                counts[reason.rstrip(".")] += int(n)
    return dict(counts.most_common())


def tune(arrivals: list[trace.Arrival], capacity_milli: int, load: float, rng: random.Random) -> list[trace.Arrival]:
    """The paper's workload: a seeded shuffle of the pods (by name first), then seeded draws appended
    (``<name>-tuned-<i>``) while the GPUs asked stay within ``load`` × capacity, or seeded removals
    until they do."""
    pods = sorted(arrivals, key=lambda a: a.pod["metadata"]["name"])
    rng.shuffle(pods)
    if load <= 0:
        return pods
    reqs = [request_of_pod(a.pod) for a in pods]
    target = load * capacity_milli
    total = sum(r.total_milli for r in reqs)
    if total > target:
        while total > target and pods:
            i = rng.randrange(len(pods))
            total -= reqs[i].total_milli
            del pods[i], reqs[i]
        return pods
    base = list(zip(pods, reqs, strict=True))
    i = 0
    while True:
        src, req = base[rng.randrange(len(base))]
        if total + req.gpu_milli > target:  # the simulator compares the per-GPU share here
            break
        pod = {**src.pod, "metadata": {**src.pod["metadata"], "name": f"{src.pod['metadata']['name']}-tuned-{i}"}}
        pods.append(trace.Arrival(src.time, None, pod))
        total += req.total_milli
        i += 1
    return pods


def replay(
    workload: str,
    cluster_paths: list[str],
    *,
    mode: str = "timed",
    policy: str = DEFAULT_POLICY,
    config_path: str | None = None,
    load: float = 1.3,
    seed: int = 0,
    samples: int = 200,
    namespace: str = trace.DEFAULT_NAMESPACE,
    tie_break: str | None = None,
    progress: Any = None,
    feature_gates: FeatureGates | None = None,
    gangs: str = "none",
) -> ReplayResult:
    """``tie_break``: "permutation" (the paper's simulator, ``replay/tiebreak.py``; the default for
    its six policies), "random" (kube-scheduler; the default otherwise) or "name". ``gangs``:
    "same-arrival" schedules the trace's multi-pod jobs as gangs (``replay/gangs.py``; it turns
    GenericWorkload on)."""
    if mode not in MODES:
        raise InputError(f'unknown mode "{mode}"; choose one of {", ".join(MODES)}', field="--mode")
    if gangs not in GANG_MODES:
        raise InputError(f'unknown gangs "{gangs}"; choose one of {", ".join(GANG_MODES)}', field="--gangs")
    arrivals = trace.load_workload(workload, namespace)
    for a in arrivals:
        a.pod["metadata"]["namespace"] = a.pod["metadata"].get("namespace") or namespace
    cluster = load_cluster(cluster_paths)
    typical = typical_pods(request_of_pod(a.pod) for a in arrivals)
    if config_path is not None:
        docs = [m for m in load_paths([config_path]).manifests if m.kind == "KubeSchedulerConfiguration"]
        if len(docs) != 1:
            raise InputError(f"expected exactly one KubeSchedulerConfiguration, found {len(docs)}", file=config_path)
        config = parse_config(docs[0].obj, config_path)
        policy = "config"
    else:
        config = parse_config(policy_config(policy, typical), f"policy {policy}")
    if feature_gates is not None:
        config.feature_gates = config.feature_gates.merged(feature_gates)
    if gangs != "none":
        config.feature_gates = config.feature_gates.merged(FeatureGates.parse("GenericWorkload=true"))
    try:
        workload_units = units(arrivals, gangs, namespace)
    except InputError as exc:
        raise exc.located(file=workload) from None
    stats = GangStats(names={u.pod_group["metadata"]["name"]: len(u.arrivals) for u in workload_units if u.pod_group})
    if tie_break is None:
        tie_break = "permutation" if policy in PAPER_POLICIES else "random"
    if tie_break not in TIE_BREAKS:
        raise InputError(f'unknown tie-break "{tie_break}"; choose one of {", ".join(TIE_BREAKS)}', field="--tie-break")
    embedded = _build(cluster, config, seed, namespace, tie_break, loops=mode != "arrivals")
    store, sched, cluster_nodes = embedded.store, embedded.sched, embedded.store.list("Node")[0]
    measure = _Measure(store, cluster_nodes, Fragmentation(typical, []) if typical else None)
    capacity = measure.ledger.capacity_milli
    rng = random.Random(seed)  # one stream, as the simulator's: the workload's draws, then the renaming
    if mode == "arrivals" and gangs != "none":
        tuned = tune_units(
            workload_units,
            capacity,
            load,
            rng,
            lambda u: sum(request_of_pod(a.pod).total_milli for a in u.arrivals),
            lambda u: sum(request_of_pod(a.pod).gpu_milli for a in u.arrivals),
        )
        stats.names = {u.pod_group["metadata"]["name"]: len(u.arrivals) for u in tuned if u.pod_group}
    else:
        tuned = [Unit([a]) for a in tune(arrivals, capacity, load, rng)] if mode == "arrivals" else []
    pods = [a for u in tuned for a in u.arrivals]
    if tie_break == "permutation":
        sched.break_ties("permutation", paper_names([n["metadata"]["name"] for n in cluster_nodes], rng))
    started = time.perf_counter()
    with _long_lived():
        if mode == "arrivals":
            curve, failed = _run_arrivals(store, sched, measure, tuned, capacity, progress, stats)
            allocation: dict[str, Any] = {"when": "at the end", "allocatedPct": measure.node_allocation()}
        else:
            curve, failed, allocation = _run_timed(embedded, measure, workload_units, samples, progress)
            _gang_outcomes(store, stats)
    wall = time.perf_counter() - started
    lg = measure.ledger
    summary = {
        "pods": len(pods) if mode == "arrivals" else len(arrivals),
        "bound": measure.bound,
        "failed": len(failed),
        "nodes": len(lg.names),
        "gpus": int(lg.gpu_count.sum()),
        "attempts": sched.stats.attempts,
        "virtualSeconds": store.clock.now(),
        "final": curve[-1] if curve else measure.sample(),
    }
    if mode == "arrivals":
        summary["allocatedPctAt"] = {str(p): point_at(curve, p) for p in (50, 80, 100, round(load * 100))}
    if gangs != "none":
        stats.gangs, stats.pods = len(stats.names), sum(stats.names.values())
        members = {
            (a.pod["metadata"]["namespace"], a.pod["metadata"]["name"]): u.pod_group["metadata"]["name"]
            for u in (tuned if mode == "arrivals" else workload_units)
            if u.pod_group is not None
            for a in u.arrivals
        }
        stats.preempted = _preempted_gangs(store, members)
        summary["gangs"] = stats.as_dict()
    return ReplayResult(
        params={
            "workload": workload,
            "cluster": cluster_paths,
            "mode": mode,
            "policy": policy,
            "load": load if mode == "arrivals" else None,
            "seed": seed,
            "tieBreak": tie_break,
            "gangs": gangs,
        },
        summary=summary,
        curve=curve,
        reasons=_reasons(sched, failed),
        typical_pods=typical_pods_arg(typical),
        metrics=sched.metrics.summary(),
        nodes=allocation,
        placements=measure.placements,
        pending=failed,
        usage=node_usage(sched.node_table(), measure.ledger),
        timing={
            "wallSeconds": round(wall, 3),
            "podsPerSecond": round(sched.stats.scheduled / wall, 1) if wall else None,
        },
    )


def _create_group(store: Store, obj: dict[str, Any]) -> None:
    store.create("PodGroup", obj)


def _gang_outcomes(store: Store, stats: GangStats) -> None:
    """At the end of a timed replay: gangs whose pods are bound (admitted), or not (waiting)."""
    bound: Counter[str] = Counter()
    for obj in store.list("Pod")[0]:
        group = ((obj.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if group and (obj.get("spec") or {}).get("nodeName"):
            bound[str(group)] += 1
    for name, size in stats.names.items():
        if bound[name] >= size:
            stats.admitted += 1
        elif bound[name] == 0:
            stats.waiting += 1
        else:  # some bound, some pending or gone: counted as waiting for the rest
            stats.waiting += 1


def _preempted_gangs(store: Store, members: dict[tuple[str, str], str]) -> int:
    """Gangs a member of which was preempted (a Preempted event names it); ``members``: each
    gang pod's (namespace, name) → its PodGroup."""
    hit = set()
    for e in store.list("Event")[0]:
        if e.get("reason") == "Preempted":
            ref = e.get("involvedObject") or e.get("regarding") or {}
            group = members.get((ref.get("namespace") or "", ref.get("name") or ""))
            if group is not None:
                hit.add(group)
    return len(hit)


def point_at(curve: list[dict[str, Any]], pct: int, key: str = "allocatedPct") -> float | None:
    """A measure at ``pct`` percent of arrived workload: that bucket, else the mean of the buckets
    within one percent of it (the paper's ``merge_alloc_discrete.py``), else None."""
    exact = [pt[key] for pt in curve if pt.get("arrivedPct") == pct]
    near = exact or [pt[key] for pt in curve if abs(pt.get("arrivedPct", -10) - pct) <= 1]
    return round(sum(near) / len(near), 4) if near else None


def _pending(sched: Scheduler, obj: dict[str, Any]) -> dict[str, Any]:
    """A pod left pending: its name, its GPU request and the last FailedScheduling message."""
    meta = obj["metadata"]
    ann = meta.get("annotations") or {}
    return {
        "pod": meta["name"],
        "gpus": int(ann.get(GPU_COUNT, 0) or 0),
        "gpuMilli": int(ann.get(GPU_MILLI, 0) or 0),
        "message": sched.last_message.get(f"{meta['namespace']}/{meta['name']}", ""),
    }


def _drain_scheduler(sched: Scheduler, controllers: list[Any]) -> None:
    def sync() -> None:
        for c in controllers:
            c.sync()

    sched.drain(sync)


def _run_arrivals(
    store: Store,
    sched: Scheduler,
    measure: _Measure,
    pods: list[Unit],
    capacity: int,
    progress: Any,
    stats: GangStats,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each unit (a pod, or a gang's PodGroup and pods) arrives, is tried once, and what it
    could not place is dropped: a gang's pods all together."""
    sched.start()
    controllers: list[Any] = []
    arrived = 0
    buckets: dict[int, list[dict[str, Any]]] = {}
    failed: list[dict[str, Any]] = []
    for i, unit in enumerate(pods):
        if unit.pod_group is not None:
            store.create("PodGroup", unit.pod_group)
        created = []
        for a in unit.arrivals:
            obj = store.create("Pod", a.pod)
            req = request_of_pod(obj)
            measure.requests[obj["metadata"]["uid"]] = req
            arrived += req.total_milli
            created.append(obj)
        _drain_scheduler(sched, controllers)
        unplaced = []
        for obj in created:
            current = store.try_get("Pod", obj["metadata"]["namespace"], obj["metadata"]["name"])
            if current is not None and not (current.get("spec") or {}).get("nodeName"):
                unplaced.append(obj)
        for obj in unplaced:
            failed.append(_pending(sched, obj))
            store.delete("Pod", obj["metadata"]["namespace"], obj["metadata"]["name"], 0)
        if unit.pod_group is not None:
            if unplaced:
                stats.failed += 1
            else:
                stats.admitted += 1
        if unplaced:
            _drain_scheduler(sched, controllers)
        point = measure.sample(failed=len(failed))
        buckets.setdefault(round(100 * arrived / capacity) if capacity else 0, []).append(point)
        if progress is not None and i % 256 == 0:
            progress(i + 1, len(pods))
    curve = []
    for pct in sorted(buckets):
        points = buckets[pct]
        curve.append(
            {
                "arrivedPct": pct,
                **{
                    k: round(sum(p[k] for p in points) / len(points), 4)
                    for k in ("allocatedPct", "fragmentationPct", "fragmentationOfIdlePct")
                },
                "usedGpus": points[-1]["usedGpus"],
                "running": points[-1]["running"],
                "failed": points[-1]["failed"],
            }
        )
    return curve, failed


def _run_timed(
    embedded: EmbeddedCluster, measure: _Measure, workload: list[Unit], samples: int, progress: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    store, sched, clock = embedded.store, embedded.sched, embedded.clock
    arrivals = [a for u in workload for a in u.arrivals]
    start = min(a.time for a in arrivals)
    end = max(max(a.time, a.deletion or a.time) for a in arrivals)
    arrived = [0]
    for ns in sorted({(a.pod.get("metadata") or {}).get("namespace") or "default" for a in arrivals}):
        if store.try_get("Namespace", "", ns) is None:  # the workload's namespaces, as kubectl create -f would need
            store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    def create(a: trace.Arrival) -> None:
        obj = store.create("Pod", a.pod)
        req = request_of_pod(obj)
        measure.requests[obj["metadata"]["uid"]] = req
        arrived[0] += req.total_milli

    def delete(a: trace.Arrival) -> None:
        meta = a.pod["metadata"]
        if store.try_get("Pod", meta["namespace"], meta["name"]) is not None:
            store.delete("Pod", meta["namespace"], meta["name"], 0)

    for u in workload:  # a gang's PodGroup before its first pod
        if u.pod_group is not None:
            when = min(a.time for a in u.arrivals) - start
            clock.call_at(when, functools.partial(_create_group, store, u.pod_group))
    for a in arrivals:
        clock.call_at(a.time - start, functools.partial(create, a))
        if a.deletion is not None:
            clock.call_at(a.deletion - start, functools.partial(delete, a))
    curve: list[dict[str, Any]] = []
    span = max(end - start, 1.0)

    peak: dict[str, Any] = {"when": "at the peak of allocation", "allocatedPct": [], "at": -1.0}

    def sample(t: float) -> None:
        pending = len(sched.unschedulable_pods())
        point = measure.sample(time=round(t, 3), arrivedGpuMilli=arrived[0], pendingUnschedulable=pending)
        curve.append(point)
        if point["allocatedPct"] > peak["at"]:
            peak["at"] = point["allocatedPct"]
            peak["allocatedPct"] = measure.node_allocation()
        if progress is not None:
            progress(len(curve), samples + 1)

    for k in range(samples):
        t = span * k / samples
        clock.call_at(t, functools.partial(sample, t))
    embedded.run_to_quiescence(limit=span + 1.0)
    sample(max(span, clock.now()))  # the last: once everything due at the end has been scheduled
    failed = [
        _pending(sched, obj)
        for obj in store.list("Pod")[0]
        if not (obj.get("spec") or {}).get("nodeName")
        and sched.last_message.get(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}")
    ]
    del peak["at"]
    return curve, failed, peak
