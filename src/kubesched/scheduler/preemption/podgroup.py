"""Workload-aware preemption (GenericWorkload; ``framework/preemption/podgrouppreemption.go``):
a pod group that found no placement may evict lower-priority pods anywhere in the cluster.

Every lower-priority *victim* is taken off the cluster at once — a pod, or every scheduled pod of
a PodGroup whose ``disruptionMode`` is ``all`` — and the group's cycle is run again. If it now
places the group, victims are put back one by one, the most important first (those whose
eviction would break a PodDisruptionBudget before the others), each kept when every placed pod of
the group still passes Filter on its node; the rest are evicted and the group's pods nominated
to their nodes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.api.validation_podgroups import pod_group_priority
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.nodesearch.nominated import active_extensions
from kubesched.scheduler.preemption.evaluator import is_preemption_victim_terminating
from kubesched.scheduler.preemption.executor import evict_victim
from kubesched.scheduler.preemption.pdb import PDBInfo, pdb_infos, takes_below_zero

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework

NO_VICTIMS = "No preemption victims found for incoming preemptor"
_IN_TREE = "kubesched.scheduler.plugins."
NEVER = "not eligible due to preemptionPolicy=Never."
ONGOING = "ongoing preemption on nominated nodes"
PLUGIN = "DefaultPreemption"


@dataclass(slots=True)
class Victim:
    """A preemption unit (``DomainVictim``): one pod, or a PodGroup's scheduled pods."""

    pods: list[tuple[PodInfo, str]]  # (pod, node)
    priority: int
    is_group: bool
    earliest_start: float

    def importance(self) -> tuple[int, int, int, float]:
        """``MoreImportantVictim`` as a sort key (most important first): priority, a group
        before a pod, more pods first, the earliest start first."""
        return (-self.priority, -(2 if self.is_group else 1), -len(self.pods), self.earliest_start)


@dataclass(slots=True)
class PodGroupPreemption:
    """What the post filter hands back: each member's nominated node (``NominatingInfos``)."""

    nominations: dict[str, str]


def _start(pod: PodInfo, now: float) -> float:
    """``GetPodStartTime``: status.startTime, now for a pod not started."""
    from kubesched.clock import parse_rfc3339

    stamp = (pod.obj.get("status") or {}).get("startTime")
    if not stamp:
        return now
    try:
        return parse_rfc3339(stamp)
    except ValueError:
        return now


class PodGroupEvaluator:
    """``PodGroupEvaluator``: the whole cluster is the domain."""

    def __init__(self, fwk: Framework, handle: Handle) -> None:
        self.fwk = fwk
        self.handle = handle

    def _group_of(self, pod: PodInfo) -> dict[str, Any] | None:
        groups = self.handle.cache.pod_groups
        state = groups.get((pod.namespace, pod.pod_group)) if groups is not None and pod.pod_group else None
        return None if state is None else state.pod_group

    def priority_of(self, pod: PodInfo) -> int:
        """``GetPodPriority``: a pod group member's is its group's."""
        group = self._group_of(pod)
        return pod.priority if group is None else pod_group_priority(group)

    def victims(self) -> list[Victim]:
        """``getCrossNodesVictims``: every scheduled pod as a unit, except that the members of a
        PodGroup with ``disruptionMode.all`` go together."""
        now = self.handle.clock.now()
        units: dict[Any, Victim] = {}
        for pod, node in self.handle.cache.assigned_pods():
            group = self._group_of(pod)
            mode = ((group or {}).get("spec") or {}).get("disruptionMode") or {}
            all_mode = group is not None and mode.get("all") is not None
            key: Any = ("podgroup", pod.namespace, pod.pod_group) if all_mode else ("pod", pod.uid)
            unit = units.get(key)
            start = _start(pod, now)
            if unit is None:
                units[key] = Victim([(pod, node)], self.priority_of(pod), bool(pod.pod_group), start)
            else:
                unit.pods.append((pod, node))
                unit.earliest_start = min(unit.earliest_start, start)
        return list(units.values())

    def preempt(self, group: Any, reschedule: Callable[[], Any]) -> tuple[PodGroupPreemption | None, Status]:
        """``Preempt``: the victims to evict for the group and its pods' nominated nodes."""
        members: list[PodInfo] = [m.pod for m in group.members]
        if any(p.preemption_policy == "Never" for p in members):  # resolvePreemptionPolicy
            return None, Status.of(Code.UNSCHEDULABLE, NEVER)
        priority = group.priority
        if self._ongoing(members, priority):
            nominations = {p.uid: p.nominated_node_name for p in members}
            return PodGroupPreemption(nominations), Status.of(Code.SUCCESS, ONGOING)
        potential = [v for v in self.victims() if v.priority < priority]
        if not potential:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS)
        self._assumed: set[str] = set()
        self._local = False
        removed: dict[str, PodInfo] = {}  # by uid, in the order taken off
        self._told: list[tuple[Any, Any]] = []
        try:
            for v in potential:
                for pod, _node in v.pods:
                    if self._take(pod):
                        removed[pod.uid] = pod
            outcome = reschedule()
            if outcome.status is not None:
                return None, outcome.status
            placed = [o for o in outcome.pods if o.status is None and o.host]
            potential.sort(key=Victim.importance)
            violating, rest = _split_by_budgets(potential, pdb_infos(self.handle.client.list("PodDisruptionBudget")[0]))
            evict: list[Victim] = []
            violations = 0
            # the placed pods whose PreFilter state hears of each victim moved: its own node's pods
            # are all a verdict reads when there are none (and the rest is node-local too)
            self._told = [(o, ext) for o in placed for _, ext in active_extensions(self.fwk, o.state)]
            self._local = not self._told and self._node_local(placed)
            for v, count in violating:
                if not self._reprieve(v, placed, removed):
                    evict.append(v)
                    violations += count
            for v in rest:
                if not self._reprieve(v, placed, removed):
                    evict.append(v)
        finally:
            for pod in removed.values():  # the cache as the watch knows it; the evictions follow
                self._put(pod)
        evict.sort(key=Victim.importance)
        self._actuate(group, evict)
        n = sum(len(v.pods) for v in evict)
        nominations = {o.qp.pod.uid: o.host for o in placed}
        return PodGroupPreemption(nominations), Status.of(
            Code.SUCCESS, f"found a placement for podgroup, preempting {n} victims"
        )

    def _take(self, pod: PodInfo) -> bool:
        """Take a victim off the cache for the what-if (an assumed one remembered as such)."""
        cache = self.handle.cache
        if cache.is_assumed(pod.uid):
            self._assumed.add(pod.uid)
        return cache.remove_pod(pod.uid) is not None

    def _put(self, pod: PodInfo) -> None:
        cache = self.handle.cache
        if pod.uid in self._assumed:
            cache.assume_pod(pod, pod.node_name)
        else:
            cache.add_pod(pod)

    def _ongoing(self, members: Sequence[PodInfo], priority: int) -> bool:
        """``isOngoingPreemption``: a lower-priority pod on a member's nominated node is going
        because the scheduler preempted it."""
        for node in {p.nominated_node_name for p in members if p.nominated_node_name}:
            for other in self.handle.cache.pods_on(node):
                if self.priority_of(other) < priority and is_preemption_victim_terminating(other):
                    return True
        return False

    def _node_local(self, placed: Sequence[Any]) -> bool:
        """Whether putting a victim back can change the Filter verdict of the placed pods on its
        own nodes only, given that no placed pod's cycle state reads other nodes' pods (no
        PreFilter extension takes part: ``_told`` is empty): every filter and reserve plugin is
        in-tree (each reads its own node and what PreFilter left in the cycle state), and no
        placed pod reserves what nodes share (claims, volumes)."""
        plugins = (*self.fwk.filters, *self.fwk.reserve)
        if any(not type(p).__module__.startswith(_IN_TREE) for p in plugins):
            return False
        for o in placed:
            spec = o.qp.pod.obj.get("spec") or {}
            if spec.get("resourceClaims") or any(
                "persistentVolumeClaim" in vol or "ephemeral" in vol for vol in spec.get("volumes") or ()
            ):
                return False
        return True

    def _reprieve(self, v: Victim, placed: Sequence[Any], removed: dict[str, PodInfo]) -> bool:
        """``reprieveVictim``: put the victim back; it stays when every placed pod still passes
        Filter on its node (each then assumed and reserved, as the cycle left them, until the
        check ends).

        Where the verdicts are node-local (``_node_local``), only the placed pods on the
        victim's nodes are checked (and assumed): every other placed pod's node is as it was at
        the last check, when each passed, or as the group's cycle placed it. The answer is
        upstream's; the work is the victim's nodes', not the whole group's for every victim (a
        gang of a hundred preempting a thousand pods ran Filter a hundred thousand times)."""
        cache = self.handle.cache
        table = cache.table
        self._move_victim(v, removed, back=True)
        undo: list[Callable[[], None]] = []
        fits = True
        touched = {node for _, node in v.pods} if self._local else None
        try:
            for o in placed:
                if touched is not None and o.host not in touched:
                    continue
                outcome = self.fwk.run_filters(o.state, o.qp.pod, table)
                row = table.index.get(o.host)
                if outcome.error is not None or row is None or int(outcome.codes[row]) != 0:
                    fits = False
                    break
                assumed = o.qp.pod.evolve(o.qp.pod.obj, o.host, o.qp.pod.nominated_node_name)
                cache.assume_pod(assumed, o.host)
                self.fwk.run_reserve(o.state, assumed, o.host)
                undo.append(_undoer(self.fwk, cache, o, assumed))
        finally:
            for fn in reversed(undo):
                fn()
        if not fits:
            self._move_victim(v, removed, back=False)
        return fits

    def _move_victim(self, v: Victim, removed: dict[str, PodInfo], *, back: bool) -> None:
        """The victim's pods back on the cluster (or off it again), and every placed pod's
        PreFilter state told (``RunPreFilterExtensionAddPod`` / ``RemovePod``)."""
        table = self.handle.cache.table
        for pod, _node in v.pods:
            if back:
                self._put(pod)
                del removed[pod.uid]
            else:
                self._take(pod)
                removed[pod.uid] = pod
            row = table.index.get(pod.node_name)
            for o, ext in self._told:
                (ext.add_pod if back else ext.remove_pod)(o.state, o.qp.pod, pod, table, row)

    def _actuate(self, group: Any, evict: Sequence[Victim]) -> None:
        """``actuatePodGroupPreemption``: each victim pod gets DisruptionTarget and is deleted (a
        pod waiting at Permit is rejected instead), with a Preempted event naming the group."""
        client = self.handle.client
        uid = (group.pod_group.get("metadata") or {}).get("uid", "")
        scheduler_name = group.members[0].pod.scheduler_name
        for v in evict:
            for victim, _node in v.pods:
                message = f"Preempted by podgroup {uid} on node cluster"
                waiting = self.handle.waiting_pods.get(victim.uid)
                if waiting is not None:
                    waiting.reject(PLUGIN, "preempted")
                    message += " (in kube-scheduler memory)."
                elif not victim.deleting:
                    with contextlib.suppress(ApiError):
                        evict_victim(client, victim, scheduler_name, "podgroup")
                client.record_event("Normal", "Preempted", "Preempting", victim.obj, message, group.pod_group)


def _undoer(fwk: Framework, cache: Any, o: Any, assumed: PodInfo) -> Callable[[], None]:
    def undo() -> None:
        fwk.run_unreserve(o.state, assumed, o.host)
        cache.forget_pod(assumed.uid)

    return undo


def _split_by_budgets(
    victims: Sequence[Victim], pdbs: Sequence[PDBInfo]
) -> tuple[list[tuple[Victim, int]], list[Victim]]:
    """``FilterVictimsWithPDBViolation``: a victim breaks a budget when any of its pods does
    (budgets counted down across victims in order); with how many of its pods do."""
    allowed = [p.disruptions_allowed for p in pdbs]
    violating: list[tuple[Victim, int]] = []
    rest: list[Victim] = []
    for v in victims:
        count = sum(takes_below_zero(pod, pdbs, allowed, first=True) for pod, _node in v.pods)
        if count:
            violating.append((v, count))
        else:
            rest.append(v)
    return violating, rest
