"""``kubesched size``: the smallest number of nodes of a template that leaves no pod of a
workload pending, found by bisection over simulations on the virtual clock (each cut short at
the first pod that stays pending), as Cluster Autoscaler's estimator answers "how many nodes"
but with the whole scheduler's decisions. Several templates, each with a cost per node, are each
sized and the cheapest is the answer.

A trial is the workload (and the existing cluster) plus ``count`` copies of the template,
scheduled as ``simulate`` schedules it, workloads made into their pods by their controllers: a
pod counts as placed only if it is bound and was not preempted. Pods that no number of the
template's nodes can place (pending with the most nodes tried: a selector the template does not
match, a gate, another scheduler) are reported apart, each tried alone on one template node for
its own cause, and left out of the search; such a template gives no answer.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.api.pod import pod_info_from
from kubesched.api.resources import CPU, MEMORY, parse_resource_list
from kubesched.cluster.loader import Manifest
from kubesched.embedded.cluster import EmbeddedCluster
from kubesched.embedded.populate import POD_MAKERS
from kubesched.errors import InputError
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.scheduler import Scheduler
from kubesched.simulate.runner import pending_reason

MAX_NODES = 1000


@dataclass(slots=True)
class Template:
    """A Node manifest to copy, and what one copy costs."""

    node: dict[str, Any]
    cost: float = 1.0
    source: str = ""

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    def copies(self, count: int) -> list[Manifest]:
        out = []
        for i in range(count):
            obj = copy.deepcopy(self.node)
            name = f"{self.name}-{i}"
            obj["metadata"]["name"] = name
            labels = obj["metadata"].setdefault("labels", {}) or {}
            labels["kubernetes.io/hostname"] = name
            obj["metadata"]["labels"] = labels
            out.append(Manifest(obj, self.source or "<template>", i))
        return out


@dataclass(slots=True)
class Trial:
    count: int
    pending: list[dict[str, Any]]  # pods not running: namespace, name, reason, message
    cut_short: bool = False
    set_apart: bool = False  # the widest trial, with the pods no count places still in it

    @property
    def fits(self) -> bool:
        return not self.pending


@dataclass(slots=True)
class Sizing:
    """One template's answer. ``nodes`` sizes the pods some count places; with ``unfixable`` pods
    the template has no answer (``answer`` is None)."""

    template: Template
    nodes: int | None  # None: not within max_nodes
    trials: list[Trial] = field(default_factory=list)
    # pods no count places: namespace, name, reason, message (at the widest count), and from a
    # trial of the pod alone on one template node: alone (its message, "" when it fits there)
    # and shortfall (what it asks beyond one node's allocatable, per resource)
    unfixable: list[dict[str, Any]] = field(default_factory=list)
    short_of: Trial | None = None  # the trial with one node fewer, run to the end

    @property
    def answer(self) -> int | None:
        """How many template nodes place every pod; None when no count does."""
        return None if self.unfixable else self.nodes

    @property
    def cost(self) -> float | None:
        """The answer's cost, to a millionth: 6 × 0.192 is 1.152, not 1.1520000000000001."""
        return None if self.answer is None else round(self.answer * self.template.cost, 6)


class _Cut(Exception):
    """A pod stayed pending: the trial's answer is known."""


def run_trial(
    objects: list[Manifest],
    template: Template,
    count: int,
    config: SchedulerConfig,
    *,
    seed: int = 0,
    cut_short: bool = True,
) -> Trial:
    """The workload on the cluster plus ``count`` template nodes; with ``cut_short`` the run
    stops at the first failed attempt or preemption (a pod that would stay pending)."""
    cluster = EmbeddedCluster(
        config=config, manifests=[*objects, *template.copies(count)], seed=seed, start=False, expand_workloads=True
    )
    if cluster.rejected:
        r = cluster.rejected[0]
        raise InputError(f"{r['kind']} {r.get('namespace') or ''}/{r['name']}: {r['message']}")
    store, sched = cluster.store, cluster.sched
    given = [((m.obj["metadata"].get("namespace") or "default"), m.obj["metadata"]["name"]) for m in cluster.pods]
    made: list[tuple[str, str]] = []  # the pods the workloads' controllers create, in order
    deleted: list[dict[str, Any]] = []
    watch = store.watch(["Pod"], store.resource_version)

    def take_events() -> None:
        for ev in watch.drain():
            if ev.type == "ADDED":
                made.append((ev.obj["metadata"].get("namespace") or "default", ev.obj["metadata"]["name"]))
            elif ev.type == "DELETED":
                deleted.append(ev.obj)

    def check(_: Scheduler) -> None:
        take_events()
        if cut_short and (sched.stats.unschedulable or sched.stats.errors or deleted):
            raise _Cut

    cut = False
    try:
        cluster.run_to_quiescence(also=[_Every(check, sched)])
    except _Cut:
        cut = True
    take_events()
    pending = []
    for ns, name in dict.fromkeys([*given, *made]):
        obj = store.try_get("Pod", ns, name)
        if obj is not None and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue  # a finished pod holds no node and asks for none
        if obj is not None and (obj.get("spec") or {}).get("nodeName"):
            continue
        if obj is None:
            pending.append({"namespace": ns, "name": name, "reason": "Preempted", "message": "preempted"})
            continue
        reason, message = pending_reason(sched, obj)
        pending.append({"namespace": ns, "name": name, "reason": reason, "message": message or ""})
    if cut and not pending:  # cut at a failed attempt that a later one would have undone: not known
        return run_trial(objects, template, count, config, seed=seed, cut_short=False)
    return Trial(count, pending, cut)


class _Every:
    """A 'controller' that checks the trial after every step of the run."""

    def __init__(self, fn: Any, sched: Scheduler) -> None:
        self.fn, self.sched = fn, sched

    def sync(self) -> None:
        self.fn(self.sched)


def size(
    objects: list[Manifest],
    template: Template,
    config: SchedulerConfig,
    *,
    seed: int = 0,
    max_nodes: int = MAX_NODES,
) -> Sizing:
    """The smallest count of ``template`` with no pod pending: the pods no count places set
    apart (a trial with ``max_nodes``), then doubling from 1 and bisection between the last
    count that left a pod pending and the first that did not."""
    if max_nodes < 0:
        raise InputError("must not be negative", field="--max-nodes")
    result = Sizing(template, None)
    widest = run_trial(objects, template, max_nodes, config, seed=seed, cut_short=False)
    result.trials.append(widest)
    if widest.pending:
        widest.set_apart = True
        result.unfixable = diagnose(objects, template, config, widest.pending, seed=seed)
        keep = {(p["namespace"], p["name"]) for p in widest.pending if p["reason"] != "Preempted"}
        objects = [
            m
            for m in objects
            if not (
                m.kind == "Pod"
                and ((m.obj["metadata"].get("namespace") or "default"), m.obj["metadata"]["name"]) in keep
            )
        ]
        if not any(m.kind == "Pod" for m in objects):
            return result  # no pod is left to size
        widest = run_trial(objects, template, max_nodes, config, seed=seed, cut_short=False)
        result.trials.append(widest)
        if widest.pending:
            return result  # preemption at the widest count: no answer within max_nodes

    def attempt(count: int) -> Trial:
        t = run_trial(objects, template, count, config, seed=seed)
        result.trials.append(t)
        return t

    lo, hi = -1, max_nodes  # lo: a count known to leave a pod pending; hi: known to place them all
    count = 0
    while count < hi:
        if attempt(count).fits:
            hi = count
            break
        lo = count
        count = 1 if count == 0 else count * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if attempt(mid).fits:
            hi = mid
        else:
            lo = mid
    result.nodes = hi
    if hi > 0:
        result.short_of = run_trial(objects, template, hi - 1, config, seed=seed, cut_short=False)
    return result


def diagnose(
    objects: list[Manifest],
    template: Template,
    config: SchedulerConfig,
    pending: list[dict[str, Any]],
    *,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The pods no count places, each with its own cause: the pod alone on one template node (no
    other pod, none of ``--cluster``'s nodes) gives the scheduler's message for its fit alone, and
    its requests against the template's allocatable name each resource it asks more of than a
    node has. Pods alike in all but their names share one trial."""
    pods = {
        ((m.obj["metadata"].get("namespace") or "default"), m.obj["metadata"]["name"]): m
        for m in objects
        if m.kind == "Pod"
    }
    rest = [m for m in objects if m.kind not in ("Pod", "Node") and m.kind not in POD_MAKERS]
    alone: dict[str, str] = {}
    out = []
    for p in pending:
        entry = {**p, "alone": "", "shortfall": []}
        m = pods.get((p["namespace"], p["name"]))
        if m is None or p["reason"] == "Preempted":
            out.append(entry)
            continue
        entry["shortfall"] = shortfall(m.obj, template)
        meta = {k: v for k, v in m.obj["metadata"].items() if k not in ("name", "generateName", "uid")}
        key = json.dumps([meta, m.obj.get("spec")], sort_keys=True, default=str)
        if key not in alone:
            trial = run_trial([*rest, m], template, 1, config, seed=seed, cut_short=False)
            alone[key] = (trial.pending[0]["message"] or trial.pending[0]["reason"]) if trial.pending else ""
        entry["alone"] = alone[key]
        out.append(entry)
    return out


def shortfall(pod: dict[str, Any], template: Template) -> list[str]:
    """Each resource the pod asks more of than one node of the template has allocatable, as
    ``"nvidia.com/gpu: asks 8, a gpu4 node has 4"`` (the pod's effective request, as NodeResourcesFit
    counts it; the GPU-sharing annotations against the node's GPUs)."""
    from kubesched.gpus.sharing import GPU_COUNT, request_of_pod

    status = template.node.get("status") or {}
    try:
        allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity"), "status.allocatable")
        requests = dict(pod_info_from(pod).requests)
        gpus = request_of_pod(pod).gpu_count
    except (InputError, ValueError):
        return []
    if gpus:
        requests[GPU_COUNT] = max(requests.get(GPU_COUNT, 0), gpus)
    return [
        f"{name}: asks {_amount(name, asked)}, a {template.name} node has {_amount(name, allocatable.get(name, 0))}"
        for name, asked in sorted(requests.items())
        if asked > allocatable.get(name, 0)
    ]


def _amount(name: str, amount: int) -> str:
    """A quantity as a person writes it: cpu in cores (or m), memory in the largest exact binary unit."""
    if name == CPU:
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if name == MEMORY or name.startswith(("hugepages-", "ephemeral-storage")):
        for unit, size in (("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
            if amount and amount % size == 0:
                return f"{amount // size}{unit}"
    return str(amount)


def load(
    workload: list[str], cluster: list[str], templates: list[str], policy: str | None = None
) -> tuple[list[Manifest], list[Template], SchedulerConfig]:
    """The workload's and the cluster's objects (namespaces they name added once, so that no trial
    warns), the templates (``FILE`` or ``FILE:COST``, one Node each: a manifest, or a node CSV of
    the trace's format with one row) and the configuration: ``policy``'s (replay's policies), else
    the one among the workload's documents, else the defaults; a trace workload (its pod CSV or
    JSON Lines, every pod at once, the times not replayed) defaults to replay's default policy,
    which counts the pods' GPUs."""
    from kubesched.cluster.loader import load_paths
    from kubesched.gpus.sharing import request_of_pod, typical_pods
    from kubesched.loading.manifests import split_config, validate_manifest
    from kubesched.replay import trace
    from kubesched.replay.profiles import DEFAULT_POLICY, policy_config
    from kubesched.replay.runner import load_cluster
    from kubesched.scheduler.config import parse_config

    traced = [w for w in workload if Path(w).suffix.lower() in (".csv", ".jsonl", ".ndjson")]
    loaded = load_paths([w for w in workload if w not in traced]).manifests if len(traced) < len(workload) else []
    for m in loaded:
        validate_manifest(m)
    for path in traced:
        loaded += [Manifest(a.pod, path, i) for i, a in enumerate(trace.load_workload(path))]
    config, objects = split_config(loaded, None)
    if policy is not None or (traced and not any(m.kind == "KubeSchedulerConfiguration" for m in loaded)):
        typical = typical_pods(request_of_pod(m.obj) for m in objects if m.kind == "Pod")
        chosen = policy or DEFAULT_POLICY
        config = parse_config(policy_config(chosen, typical), f"policy {chosen}")
    if cluster:
        objects = [*load_cluster(cluster), *objects]
    if not any(m.kind == "Pod" or m.kind in POD_MAKERS for m in objects):
        raise InputError("no pods to place", file=", ".join(workload))
    named = {m.obj["metadata"]["name"] for m in objects if m.kind == "Namespace"}
    needed = sorted(
        {(m.obj.get("metadata") or {}).get("namespace") or "default" for m in objects if m.kind == "Pod"} - named
    )
    objects = [
        *(
            Manifest({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}, "<size>", i)
            for i, n in enumerate(needed)
        ),
        *objects,
    ]
    out: list[Template] = []
    for spec in templates:
        path, sep, cost_text = spec.rpartition(":")
        if not sep:
            path, cost_text = spec, ""
        try:
            cost = float(cost_text) if cost_text else 1.0
        except ValueError:
            raise InputError(f"the cost after ':' is not a number: {cost_text!r}", field="--node-template") from None
        if cost < 0:
            raise InputError("a node's cost must not be negative", field="--node-template")
        if trace.is_node_csv(path):
            nodes = [Manifest(n, path, i) for i, n in enumerate(trace.load_nodes_csv(path))]
        else:
            nodes = [m for m in load_paths([path]).manifests if m.kind == "Node"]
        if len(nodes) != 1:
            raise InputError(f"a template holds exactly one Node, found {len(nodes)}", file=path)
        validate_manifest(nodes[0])
        out.append(Template(nodes[0].obj, cost, path))
    return objects, out, config


def reasons(pending: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """Pending pods counted per message, most first."""
    return Counter(p["message"] or p["reason"] for p in pending).most_common()
