"""Pod groups in the scheduling queue (GenericWorkload; ``backend/queue/scheduling_queue.go``'s
pod group paths, ``workload_forest.go``, ``pod_group_member_pods.go``).

A pod naming a PodGroup (``spec.schedulingGroup``) is never queued alone: it waits among the
*incomplete* pods until the scheduler has seen its PodGroup object, then joins the group's one
queue entity (``QueuedPodGroupInfo``), which sorts, backs off and is gated like a pod and is
popped whole for a pod group cycle. Pods arriving while their group is in its cycle wait as
*pending* members and rejoin it when the cycle hands the group back (``add_attempted_pod_group``):
after a success the rest go straight back to activeQ, after a rejection the group backs off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mypy_extensions import trait

from kubesched.api.pod import PodInfo
from kubesched.api.validation_podgroups import pod_group_priority
from kubesched.clock import Clock
from kubesched.framework.events import ClusterEvent
from kubesched.scheduler.nominator import Nominator
from kubesched.scheduler.podgroups import PodGroupKey, group_key, object_key

if TYPE_CHECKING:
    from kubesched.scheduler.queued import QueuedPodInfo

ACTIVE, BACKOFF, UNSCHEDULABLE, GATED = "active", "backoff", "unschedulable", "gated"


def member_order(qp: QueuedPodInfo) -> tuple[int, int, float, int, str]:
    """``PodGroupMemberPodsOrderingFunc``: priority (highest first), attempts (most first),
    queue timestamp (on a virtual clock, equal ones in the order the queue saw the pods), then
    name."""
    return (-qp.pod.priority, -qp.attempts, qp.timestamp, qp.order, qp.pod.name)


@dataclass(slots=True, eq=False)
class QueuedPodGroupInfo:
    """A pod group's queue entity (``framework.QueuedPodGroupInfo``): its PodGroup, its queued
    member pods in ``member_order`` and the group's own queueing parameters."""

    key: PodGroupKey
    pod_group: dict[str, Any]
    members: list[QueuedPodInfo]
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    gating_plugin: str = ""
    gated_status: Any = None
    where: str = ""
    seq: int = 0
    failed_at_generation: int = -1
    attempt_started: float = 0.0
    in_flight_events: list[tuple[ClusterEvent, Any, Any]] = field(default_factory=list)
    order: int = 0  # when its timestamp was set, among equal timestamps (see QueuedPodInfo.order)

    @property
    def uid(self) -> str:
        return f"podgroup/{self.key[0]}/{self.key[1]}"

    @property
    def name(self) -> str:
        return self.key[1]

    @property
    def pod(self) -> PodInfo:
        """The first member (its profile's registrations stand for the group's)."""
        return self.members[0].pod

    @property
    def priority(self) -> int:
        return pod_group_priority(self.pod_group)

    @property
    def unschedulable_plugins(self) -> set[str]:
        """The group's own (never set upstream: its members carry theirs), so a rejected group
        backs off as an error does, never popped before its backoff ends."""
        return set()

    @property
    def pending_plugins(self) -> set[str]:
        return set()

    def add(self, qp: QueuedPodInfo) -> None:
        self.members = [m for m in self.members if m.uid != qp.uid]
        self.members.append(qp)
        self.members.sort(key=member_order)

    def remove(self, uid: str) -> QueuedPodInfo | None:
        for i, m in enumerate(self.members):
            if m.uid == uid:
                return self.members.pop(i)
        return None


@trait
class PodGroupQueueing(Nominator):
    """The queue's pod group side; a part of ``SchedulingQueue`` (a mypyc trait), whose internals
    it uses."""

    clock: Clock
    _seq: Any
    _pods: dict[str, Any]
    in_flight: dict[str, Any]
    scheduling_cycle: int
    pod_groups_enabled: bool
    _forest: dict[PodGroupKey, dict[str, Any]]  # the PodGroup objects seen
    _groups: dict[PodGroupKey, QueuedPodGroupInfo]  # queued group entities
    _incomplete: dict[PodGroupKey, dict[str, QueuedPodInfo]]
    _pending_members: dict[PodGroupKey, dict[str, QueuedPodInfo]]
    _member_of: dict[str, PodGroupKey]  # uid → group, for members not in flight
    _popped_group: PodGroupKey | None

    def _move(self, qp: Any, event: str, *, immediately: bool = False) -> str:
        raise NotImplementedError  # SchedulingQueue's

    def _gate(self, qp: Any) -> bool:
        raise NotImplementedError  # SchedulingQueue's

    def _detach(self, qp: Any) -> None:
        raise NotImplementedError  # SchedulingQueue's

    def _to_unschedulable(self, qp: Any, gated: bool = False) -> None:
        raise NotImplementedError  # SchedulingQueue's

    def backoff_expiry(self, qp: Any) -> float:
        raise NotImplementedError  # SchedulingQueue's

    def _init_pod_groups(self, enabled: bool) -> None:
        self.pod_groups_enabled = enabled
        self._forest = {}
        self._groups = {}
        self._incomplete = {}
        self._pending_members = {}
        self._member_of = {}
        self._popped_group = None

    def is_group_member(self, pod: PodInfo) -> bool:
        return self.pod_groups_enabled and bool(pod.pod_group)

    # -- members ------------------------------------------------------------------------------
    def _add_member(self, qp: QueuedPodInfo, event: str) -> None:
        """``addPodGroupMember``: into the incomplete pods, the queued group, the in-flight
        group's pending pods, or a new group entity."""
        key = group_key(qp.pod)
        self._member_of[qp.uid] = key
        if key not in self._forest:
            self._incomplete.setdefault(key, {})[qp.uid] = qp
            qp.where = "incomplete"
            return
        group = self._groups.get(key)
        if group is not None:
            where = group.where
            group.add(qp)
            qp.where = "member"
            if where == ACTIVE:
                # PreEnqueue again; a group still let in keeps its place (its priority and
                # timestamp, which order activeQ, did not change)
                if not self._gate(group):
                    self._move(group, event, immediately=True)
            elif where == BACKOFF:
                self._move(group, event)
            return
        if key == self._popped_group:
            self._pending_members.setdefault(key, {})[qp.uid] = qp
            qp.where = "pending"
            return
        group = QueuedPodGroupInfo(key, self._forest[key], [qp], qp.timestamp, qp.initial_attempt_timestamp)
        group.order = qp.order
        qp.where = "member"
        self._groups[key] = group
        self._pods[group.uid] = group
        self._move(group, event, immediately=True)

    def _take_member(self, uid: str) -> QueuedPodInfo | None:
        """Remove a member wherever the queue holds it (not in flight); its group entity goes
        when it has no members left."""
        key = self._member_of.pop(uid, None)
        if key is None:
            return None
        for pool in (self._incomplete, self._pending_members):
            members = pool.get(key)
            if members is not None and uid in members:
                qp = members.pop(uid)
                if not members:
                    del pool[key]
                return qp
        group = self._groups.get(key)
        if group is None:
            return None
        removed = group.remove(uid)
        if not group.members:
            self._drop_group(group)
        return removed

    def _drop_group(self, group: QueuedPodGroupInfo) -> None:
        self._detach(group)
        self._groups.pop(group.key, None)
        self._pods.pop(group.uid, None)

    def member(self, uid: str) -> QueuedPodInfo | None:
        key = self._member_of.get(uid)
        if key is None:
            return None
        for pool in (self._incomplete, self._pending_members):
            if uid in pool.get(key, {}):
                return pool[key][uid]
        group = self._groups.get(key)
        return next((m for m in group.members if m.uid == uid), None) if group is not None else None

    def group_of(self, uid: str) -> QueuedPodGroupInfo | None:
        key = self._member_of.get(uid)
        return None if key is None else self._groups.get(key)

    def update_member(self, pod: PodInfo) -> None:
        qp = self.member(pod.uid)
        if qp is None:
            return
        qp.pod = pod
        group = self.group_of(pod.uid)
        if group is not None:
            group.members.sort(key=member_order)
            if group.where == GATED:
                self._move(group, "UnschedulablePodUpdate", immediately=True)

    # -- the group's cycle ----------------------------------------------------------------------
    def pop_group(self, group: QueuedPodGroupInfo) -> QueuedPodGroupInfo:
        """The popped group goes in flight with its members (``activeQ.pop``)."""
        self._groups.pop(group.key, None)
        self._popped_group = group.key
        group.attempts += 1
        group.in_flight_events = []
        for m in group.members:
            self._member_of.pop(m.uid, None)
            self.in_flight[m.uid] = m
            m.attempts += 1
            m.in_flight_events = []
            m.where = ""
            if m.initial_attempt_timestamp is None:
                m.initial_attempt_timestamp = self.clock.now()
        if group.initial_attempt_timestamp is None:
            group.initial_attempt_timestamp = self.clock.now()
        return group

    def add_unschedulable_member(self, qp: QueuedPodInfo) -> None:
        """A member that failed in its group's cycle: a pending member until the group is
        handed back (``addUnschedulablePodGroupMember``)."""
        self.in_flight.pop(qp.uid, None)
        self._add_member(qp, "ScheduleAttemptFailure")

    def add_attempted_pod_group(self, group: QueuedPodGroupInfo, code: str) -> str:
        """``AddAttemptedPodGroupIfNeeded``: the pending members (the pods that did not go to
        binding, and any that arrived meanwhile) as the group again. ``code``: "success",
        "unschedulable" or "error". Returns the queue it went to ("" when nothing was left)."""
        if self._popped_group == group.key:
            self._popped_group = None
        pending = self._pending_members.pop(group.key, {})
        if not pending:
            return ""
        attempted = {m.uid for m in group.members}
        had_failures = any(uid in attempted for uid in pending)
        obj = self._forest.get(group.key)
        if obj is None:  # the PodGroup went meanwhile: the members wait for it to come back
            for uid, qp in pending.items():
                self._incomplete.setdefault(group.key, {})[uid] = qp
                qp.where = "incomplete"
            return "incomplete"
        again = QueuedPodGroupInfo(
            group.key,
            obj,
            sorted(pending.values(), key=member_order),
            group.timestamp,
            group.initial_attempt_timestamp,
            group.attempts,
            group.unschedulable_count,
            group.consecutive_errors,
        )
        again.failed_at_generation = group.failed_at_generation
        again.order = group.order
        for m in again.members:
            m.where = "member"
            self._member_of[m.uid] = group.key
        without_backoff = preserve = False
        if code == "success":
            without_backoff, preserve = True, had_failures
            again.consecutive_errors = again.unschedulable_count = 0
        elif code == "unschedulable":
            again.unschedulable_count += 1
            again.consecutive_errors = 0
        else:
            again.consecutive_errors += 1
        if not preserve:
            again.timestamp = self.clock.now()
            again.order = next(self._seq)
        self._groups[group.key] = again
        self._pods[again.uid] = again
        return self._move(again, "ScheduleAttemptFailure", immediately=without_backoff)

    # -- PodGroup objects (AddPodGroup, UpdatePodGroup, DeletePodGroup) --------------------------
    def add_pod_group(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self._forest[key] = obj
        group = self._groups.get(key)
        if group is not None:
            group.pod_group = obj
        waiting = self._incomplete.pop(key, {})
        for qp in sorted(waiting.values(), key=member_order):
            self._add_member(qp, "PodGroupAdd")

    def update_pod_group(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if key not in self._forest:
            self.add_pod_group(obj)
            return
        self._forest[key] = obj
        group = self._groups.get(key)
        if group is not None:
            group.pod_group = obj

    def delete_pod_group(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        self._forest.pop(key, None)
        group = self._groups.get(key)
        if group is not None:
            self._drop_group(group)
            for m in group.members:
                self._incomplete.setdefault(key, {})[m.uid] = m
                m.where = "incomplete"
        pending = self._pending_members.pop(key, {})
        for uid, qp in pending.items():
            self._incomplete.setdefault(key, {})[uid] = qp
            qp.where = "incomplete"

    def group_members(self) -> list[tuple[str, QueuedPodInfo]]:
        """Every member pod the queue holds outside flight, with where it waits (for views)."""
        out: list[tuple[str, QueuedPodInfo]] = []
        for group in self._groups.values():
            out.extend((group.where, m) for m in group.members)
        for pool, where in ((self._incomplete, "incomplete"), (self._pending_members, "pending")):
            for members in pool.values():
                out.extend((where, m) for m in members.values())
        return out
