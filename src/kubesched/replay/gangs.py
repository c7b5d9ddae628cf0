"""Gangs in a replayed trace (``kubesched replay --gangs``): the trace's multi-pod jobs scheduled
all-or-nothing, as workload-aware scheduling (GenericWorkload) places a PodGroup's pods.

Alibaba's GPU trace names pods, not jobs. ``same-arrival`` takes the pods that arrive at the same
second asking for the same resources (CPU, memory, GPUs, GPU share, GPU model) as the workers of
one job: each such set of two or more becomes a PodGroup with a gang policy of ``minCount`` = its
size, its pods naming it in ``spec.schedulingGroup``. A JSON Lines workload may name the group
itself (``spec.schedulingGroup.podGroupName``); ``same-arrival`` then leaves those pods as they are
and makes the PodGroups they name (a gang of as many pods as name it).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubesched.errors import InputError
from kubesched.replay.trace import Arrival

GANG_MODES = ("none", "same-arrival")


@dataclass(slots=True)
class Unit:
    """What arrives as one: a pod, or a gang's PodGroup with its pods."""

    arrivals: list[Arrival]
    pod_group: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        return str(self.arrivals[0].pod["metadata"]["name"])


@dataclass(slots=True)
class GangStats:
    """How the gangs fared: admitted (their pods bound), failed (given up: the arrivals method
    drops what does not fit), waiting (pending at the end), preempted (a member evicted)."""

    gangs: int = 0
    pods: int = 0
    admitted: int = 0
    failed: int = 0
    waiting: int = 0
    preempted: int = 0
    names: dict[str, int] = field(default_factory=dict)  # PodGroup → its size

    def as_dict(self) -> dict[str, int]:
        return {
            "gangs": self.gangs,
            "pods": self.pods,
            "admitted": self.admitted,
            "failed": self.failed,
            "waiting": self.waiting,
            "preempted": self.preempted,
        }


def _shape(a: Arrival) -> tuple[Any, ...]:
    """What the workers of one job share: arrival second, requests, GPU annotations."""
    spec = a.pod.get("spec") or {}
    requests = [
        tuple(sorted(((c.get("resources") or {}).get("requests") or {}).items())) for c in spec.get("containers") or []
    ]
    annotations = tuple(sorted(((a.pod.get("metadata") or {}).get("annotations") or {}).items()))
    return (a.time, tuple(requests), annotations)


def pod_group(name: str, namespace: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
    }


def _member(a: Arrival, group: str) -> Arrival:
    pod = copy.deepcopy(a.pod)
    pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": group}
    return Arrival(a.time, a.deletion, pod)


def units(arrivals: Iterable[Arrival], mode: str, namespace: str) -> list[Unit]:
    """The workload as units, in the order their first pod came in the workload."""
    arrivals = list(arrivals)
    if mode == "none":
        return [Unit([a]) for a in arrivals]
    if len(arrivals) > 1 and len({a.time for a in arrivals}) == 1:
        raise InputError(
            "--gangs same-arrival tells jobs apart by their pods' arrival times, and every pod of this "
            "workload arrives at the same time (a trace file without creation_time)",
            field="--gangs",
        )
    named: dict[tuple[str, str], list[Arrival]] = {}
    by_shape: dict[tuple[Any, ...], list[Arrival]] = {}
    order: list[tuple[str, Any]] = []
    for a in arrivals:
        group = ((a.pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
        if group:
            key = (a.pod["metadata"].get("namespace") or namespace, str(group))
            if key not in named:
                order.append(("named", key))
            named.setdefault(key, []).append(a)
            continue
        shape = _shape(a)
        if shape not in by_shape:
            order.append(("shape", shape))
        by_shape.setdefault(shape, []).append(a)
    out: list[Unit] = []
    for kind, key in order:
        if kind == "named":
            members = named[key]
            out.append(Unit(members, pod_group(key[1], key[0], len(members))))
            continue
        members = by_shape[key]
        if len(members) < 2:
            out.append(Unit(members))
            continue
        name = f"gang-{members[0].pod['metadata']['name']}"
        ns = members[0].pod["metadata"].get("namespace") or namespace
        out.append(Unit([_member(a, name) for a in members], pod_group(name, ns, len(members))))
    return out


def renamed(unit: Unit, suffix: str) -> Unit:
    """A copy of a unit drawn again (the arrivals method's ``-tuned-<i>``), its PodGroup too."""
    if unit.pod_group is None:
        a = unit.arrivals[0]
        pod = {**a.pod, "metadata": {**a.pod["metadata"], "name": f"{a.pod['metadata']['name']}{suffix}"}}
        return Unit([Arrival(a.time, None, pod)])
    group = copy.deepcopy(unit.pod_group)
    group["metadata"]["name"] = f"{group['metadata']['name']}{suffix}"
    members = []
    for a in unit.arrivals:
        pod = copy.deepcopy(a.pod)
        pod["metadata"]["name"] = f"{pod['metadata']['name']}{suffix}"
        pod["spec"]["schedulingGroup"] = {"podGroupName": group["metadata"]["name"]}
        members.append(Arrival(a.time, None, pod))
    return Unit(members, group)


def tune_units(
    units_in: list[Unit], capacity_milli: int, load: float, rng: Any, total_of: Any, gpu_of: Any
) -> list[Unit]:
    """The arrivals method's workload (``runner.tune``) over units: a gang is shuffled, dropped
    and drawn again whole. ``total_of(unit)``: the GPU milli it asks; ``gpu_of(unit)``: the
    per-GPU share the simulator compares when drawing."""
    us = sorted(units_in, key=lambda u: u.name)
    rng.shuffle(us)
    if load <= 0:
        return us
    totals = [total_of(u) for u in us]
    target = load * capacity_milli
    total = sum(totals)
    if total > target:
        while total > target and us:
            i = rng.randrange(len(us))
            total -= totals[i]
            del us[i], totals[i]
        return us
    base = list(zip(us, totals, strict=True))
    i = 0
    while True:
        src, _ = base[rng.randrange(len(base))]
        if total + gpu_of(src) > target:
            break
        copy_ = renamed(src, f"-tuned-{i}")
        us.append(copy_)
        total += total_of(copy_)
        i += 1
    return us
