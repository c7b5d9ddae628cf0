"""The scheduling queue (``pkg/scheduler/backend/queue``): activeQ, backoffQ, unschedulable pods.

* activeQ: a heap in QueueSort order (PrioritySort: priority, then queue timestamp).
* backoffQ: pods waiting out their backoff, initial·2^(n−1) capped at max (1 s → 10 s), by
  the count of unschedulable attempts (or of consecutive errors); pods that failed with an error
  wait in a heap of their own. With SchedulerPopFromBackoffQ (beta, on since v1.33) backoff
  expiries are aligned to 1-second windows, and when activeQ is empty the scheduler pops the
  unschedulable pod whose backoff ends first (priority breaks ties) instead of idling.
* unschedulable pods: tried and rejected; a cluster event moves a pod back only when one of the
  plugins that rejected it registered that event and its QueueingHint says Queue. Pods left
  there for 5 minutes are flushed back (``UnschedulableTimeout``).
* gated pods (a PreEnqueue plugin said no) wait among the unschedulable ones, not attempted.
* the nominator (``nominator.py``, which the queue embeds as upstream's PriorityQueue does).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable
from functools import cmp_to_key
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.clock import Clock
from kubesched.framework.events import (
    ASSIGNED_POD,
    FORCE_ACTIVATE,
    POD,
    UNSCHEDULABLE_POD,
    UNSCHEDULABLE_TIMEOUT,
    WILDCARD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from kubesched.framework.status import Status
from kubesched.scheduler.podtable import PodTable
from kubesched.scheduler.queue_podgroups import PodGroupQueueing, QueuedPodGroupInfo
from kubesched.scheduler.queued import QueuedPodInfo

ALL_ACTIONS = int(ActionType.ALL)

DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 5 * 60.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

ACTIVE, BACKOFF, UNSCHEDULABLE, GATED = "active", "backoff", "unschedulable", "gated"
BACKOFF_WINDOW = 1.0  # backoffQOrderingWindowDuration


# what the queue holds: a pod, or (GenericWorkload) a pod group (``framework.QueuedEntityInfo``)
Entity = QueuedPodInfo | QueuedPodGroupInfo


class SchedulingQueue(PodGroupQueueing):
    """PriorityQueue with QueueingHints, driven by an external clock."""

    def __init__(
        self,
        clock: Clock,
        *,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] | None = None,
        sort_key: Callable[[Any], Any] | None = None,
        pre_enqueue: Callable[[PodInfo], Status | None] | None = None,
        events: Callable[[PodInfo], dict[str, list[ClusterEventWithHint]]] | None = None,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        pop_from_backoff: bool = True,
        pod_groups: bool = False,
        on_nominated: Callable[[PodInfo | str, str | None], None] | None = None,
        nominated_table: PodTable | None = None,
        on_incoming: Callable[[str, str], None] | None = None,
    ) -> None:
        """``on_nominated``: told of every nomination change (the cache's nominated-pod columns,
        ``nominated_table``, follow them); ``on_incoming``: told of every pod entering a queue."""
        self.clock = clock
        self.pop_from_backoff = pop_from_backoff
        if sort_key is None:
            assert less is not None
            ordered = less

            def compare(a: QueuedPodInfo, b: QueuedPodInfo) -> int:
                return -1 if ordered(a, b) else (1 if ordered(b, a) else 0)

            sort_key = cmp_to_key(compare)
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue or (lambda _p: None)
        self._events = events or (lambda _p: {})
        self._compiled_cache: dict[int, tuple[Any, dict[str, dict[str, list[Any]]]]] = {}
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._seq = itertools.count()
        # (sort key, order, seq, entity): ties of the sort key (a virtual clock standing still)
        # broken by ``order``, when the entity's timestamp was last set, as distinct times would
        self._active: list[tuple[Any, int, int, Entity]] = []
        # (ready time, order, seq, pod): unschedulable pods, and pods that failed with an error; the
        # order is activeQ's when SchedulerPopFromBackoffQ orders ties by priority
        self._backoff: list[tuple[float, Any, int, Entity]] = []
        self._error_backoff: list[tuple[float, Any, int, Entity]] = []
        self._unschedulable: dict[str, Entity] = {}  # unschedulable, not gated
        # gated pods grouped by (their profile's registrations, gating plugin): an event none of a
        # group's registrations matches skips the whole group (SchedulingWhileGated: 10,000 gated
        # pods are not walked at every binding)
        self._gated: dict[tuple[int, str], dict[str, Entity]] = {}
        self._gated_key: dict[str, tuple[int, str]] = {}
        self._pods: dict[str, Entity] = {}  # uid → entry, wherever it is (not in flight)
        self.in_flight: dict[str, QueuedPodInfo] = {}
        self.scheduling_cycle = 0
        self._init_nominator(on_nominated, nominated_table)
        self._init_pod_groups(pod_groups)  # GenericWorkload: members queue as their group
        # told of every pod entering a queue: (queue, event label) (scheduler_queue_incoming_pods_total)
        self.on_incoming = on_incoming

    # -- sizes --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {ACTIVE: 0, BACKOFF: 0, UNSCHEDULABLE: 0, GATED: 0}
        for qp in self._pods.values():
            out[qp.where] += len(qp.members) if isinstance(qp, QueuedPodGroupInfo) else 1
        return out

    def where(self, uid: str) -> str:
        if uid in self.in_flight:
            return "inFlight"
        qp = self._pods.get(uid)
        if qp is not None:
            return qp.where
        group = self.group_of(uid)
        if group is not None:
            return group.where
        member = self.member(uid)
        return member.where if member is not None else ""

    def entries(self) -> list[QueuedPodInfo]:
        """Every pod the queue holds, in flight included (``where`` says which sub-queue: a pod
        group's members say theirs, ``member``, ``pending`` or ``incomplete``); for views of the
        queue (the web UI), not for scheduling."""
        singles = [qp for qp in self._pods.values() if not isinstance(qp, QueuedPodGroupInfo)]
        return [*self.in_flight.values(), *singles, *(m for _, m in self.group_members())]

    def get(self, uid: str) -> QueuedPodInfo | None:
        qp = self._pods.get(uid)
        if isinstance(qp, QueuedPodInfo):
            return qp
        return self.in_flight.get(uid) or self.member(uid)

    def __len__(self) -> int:
        return len(self._pods)

    # -- internals ------------------------------------------------------------------------------
    def _to_active(self, qp: Entity) -> None:
        qp.where = ACTIVE
        qp.seq = next(self._seq)
        heapq.heappush(self._active, (self._sort_key(qp), qp.order, qp.seq, qp))

    def _to_backoff(self, qp: Entity) -> None:
        qp.where = BACKOFF
        qp.seq = next(self._seq)
        if qp.unschedulable_plugins or qp.pending_plugins:
            order = self._sort_key(qp) if self.pop_from_backoff else 0
            heapq.heappush(self._backoff, (self.backoff_expiry(qp), order, qp.seq, qp))
        else:  # an error, not a verdict: never popped early (podErrorBackoffQ)
            heapq.heappush(self._error_backoff, (self.backoff_expiry(qp), 0, qp.seq, qp))

    def _to_unschedulable(self, qp: Entity, gated: bool = False) -> None:
        qp.where = GATED if gated else UNSCHEDULABLE
        if gated:
            key = (id(self._events(qp.pod)), qp.gating_plugin)
            self._gated.setdefault(key, {})[qp.uid] = qp
            self._gated_key[qp.uid] = key
        else:
            self._unschedulable[qp.uid] = qp

    def _detach(self, qp: Entity) -> None:
        """Take a pod out of whichever part holds it (heap entries are invalidated lazily)."""
        if qp.where == UNSCHEDULABLE:
            self._unschedulable.pop(qp.uid, None)
        elif qp.where == GATED:
            key = self._gated_key.pop(qp.uid, None)
            group = self._gated.get(key) if key is not None else None
            if group is not None:
                group.pop(qp.uid, None)
                if not group:
                    del self._gated[key]  # type: ignore[arg-type]
        qp.where = ""
        qp.seq = -1

    def backoff_duration(self, qp: Entity) -> float:
        count = qp.consecutive_errors if qp.consecutive_errors > 0 else qp.unschedulable_count
        if count <= 0 or self.max_backoff <= 0:
            return 0.0
        ceiling = self.max_backoff
        if isinstance(qp, QueuedPodGroupInfo) and len(qp.members) > 1:
            # a pod group's ceiling grows with the square root of its size
            # (backoff_queue.go, calculateBackoffDuration)
            ceiling *= math.sqrt(len(qp.members))
        duration = self.initial_backoff
        for _ in range(1, count):
            duration *= 2
            if duration >= ceiling:
                return ceiling
        return min(duration, ceiling)

    def backoff_expiry(self, qp: Entity) -> float:
        """When the pod's backoff is over. With SchedulerPopFromBackoffQ the expiry is truncated to
        its 1-second window and a pod backs off while its expiry is not before the current
        window's start (``isEntityBackingoff``): it is over one window after the expiry."""
        duration = self.backoff_duration(qp)
        if not self.pop_from_backoff or duration <= 0:
            return qp.timestamp + duration
        return math.floor(qp.timestamp + duration) + BACKOFF_WINDOW

    def _gate(self, qp: Entity) -> bool:
        """Run PreEnqueue; True when the pod may enter activeQ/backoffQ. A pod group's entity
        runs it for every member and is gated when any member is (``runPreEnqueuePlugins``)."""
        if isinstance(qp, QueuedPodGroupInfo):
            st = None
            for m in qp.members:
                mst = self._pre_enqueue(m.pod)
                if mst is not None and not mst.is_success():
                    st = mst
                    m.unschedulable_plugins.add(mst.plugin)
        else:
            st = self._pre_enqueue(qp.pod)
            if st is not None and not st.is_success():
                # the gating plugin joins the pod's rejectors (runPreEnqueuePlugin): with those of
                # its last attempt they decide which events requeue it
                qp.unschedulable_plugins.add(st.plugin)
        if st is None or st.is_success():
            qp.gating_plugin = ""
            qp.gated_status = None
            return True
        changed = qp.gating_plugin != st.plugin
        qp.gating_plugin = st.plugin
        qp.gated_status = st
        if changed and qp.where == GATED:  # held by another plugin now: file it in that group
            self._detach(qp)
            self._to_unschedulable(qp, gated=True)
        return False

    def _move(self, qp: Entity, event: str, *, immediately: bool = False) -> str:
        self._detach(qp)
        if not self._gate(qp):
            self._to_unschedulable(qp, gated=True)
            return GATED
        if not immediately and self.backoff_expiry(qp) > self.clock.now():
            self._to_backoff(qp)
        else:
            self._to_active(qp)
        if self.on_incoming is not None:
            self.on_incoming(qp.where, event)
        return qp.where

    # -- API ----------------------------------------------------------------------------------
    def add(self, pod: PodInfo) -> None:
        """A new pending pod: PreEnqueue, then activeQ (or gated); a pod group's member joins
        its group instead."""
        if pod.uid in self._pods or pod.uid in self.in_flight or pod.uid in self._member_of:
            self.update(pod)
            return
        if self.is_group_member(pod):
            qp = QueuedPodInfo(pod, self.clock.now(), order=next(self._seq))
            if pod.nominated_node_name:
                self.add_nominated(pod, pod.nominated_node_name)
            self._add_member(qp, "PodAdd")
            return
        qp = QueuedPodInfo(pod, self.clock.now(), order=next(self._seq))
        self._pods[pod.uid] = qp
        if self._gate(qp):
            self._to_active(qp)
        else:
            self._to_unschedulable(qp, gated=True)
        if self.on_incoming is not None:  # gated pods sit in upstream's unschedulablePods
            self.on_incoming(ACTIVE if qp.where == ACTIVE else UNSCHEDULABLE, "PodAdd")
        if pod.nominated_node_name:
            self.add_nominated(pod, pod.nominated_node_name)

    def update(self, pod: PodInfo, event: ClusterEvent | None = None, old: PodInfo | None = None) -> None:
        """A pending pod changed: refresh it in place, or move it when the change may help."""
        if pod.uid in self._member_of:
            self.update_member(pod)
            return
        qp = self._pods.get(pod.uid) or self.in_flight.get(pod.uid)
        if qp is None:
            self.add(pod)
            return
        assert isinstance(qp, QueuedPodInfo)
        qp.pod = pod
        self._update_nominated(old, pod)
        if qp.where == ACTIVE:
            self._detach(qp)
            self._to_active(qp)
        elif qp.where == GATED:
            if self._gate(qp):
                self._detach(qp)
                self._to_active(qp)
        elif qp.where == UNSCHEDULABLE and event is not None and self._worth_requeuing(qp, event, old, pod):
            self._move(qp, str(event))

    def _update_nominated(self, old: PodInfo | None, pod: PodInfo) -> None:
        """``UpdateNominatedPod``: the nomination follows the pod's status when it was added,
        changed or removed there; with none before or after, a nomination held in memory only
        (made by this scheduler, not yet written back) is kept, for the new version of the pod."""
        if pod.nominated_node_name:
            self.add_nominated(pod, pod.nominated_node_name)
        elif old is not None and old.nominated_node_name:
            self.delete_nominated(pod.uid)
        else:
            node = self.nominated_node_of(pod.uid)
            if node:
                self.add_nominated(pod, node)

    def delete(self, uid: str) -> None:
        self._take_member(uid)
        qp = self._pods.pop(uid, None)
        if qp is not None:
            self._detach(qp)
        self.in_flight.pop(uid, None)
        self.delete_nominated(uid)

    def pop(self) -> Entity | None:
        """Next pod to schedule (None when activeQ is empty and, with SchedulerPopFromBackoffQ,
        no unschedulable pod backs off); it is in flight until ``done``."""
        while True:
            if self._active:
                _, _, seq, qp = heapq.heappop(self._active)
                if qp.seq != seq or qp.where != ACTIVE:
                    continue
            elif self.pop_from_backoff and _top(self._backoff) is not None:
                qp = heapq.heappop(self._backoff)[3]
                if self.on_incoming is not None:
                    self.on_incoming(ACTIVE, "PopFromBackoffQ")
            else:
                return None
            qp.where = ""
            del self._pods[qp.uid]
            if isinstance(qp, QueuedPodGroupInfo):
                self.scheduling_cycle += 1
                return self.pop_group(qp)
            self.in_flight[qp.uid] = qp
            qp.in_flight_events = []
            self.scheduling_cycle += 1
            qp.attempts += 1
            if qp.initial_attempt_timestamp is None:
                qp.initial_attempt_timestamp = self.clock.now()
            return qp

    def has_active(self) -> bool:
        """Whether ``pop`` has a pod: activeQ's, or (SchedulerPopFromBackoffQ) a backing-off one."""
        while self._active and (self._active[0][3].seq != self._active[0][2] or self._active[0][3].where != ACTIVE):
            heapq.heappop(self._active)
        if self._active:
            return True
        return self.pop_from_backoff and _top(self._backoff) is not None

    def done(self, uid: str) -> None:
        self.in_flight.pop(uid, None)

    def add_unschedulable(self, qp: QueuedPodInfo, *, generation: int = -1) -> None:
        """``AddUnschedulableIfNotPresent``: after a failed attempt."""
        self.in_flight.pop(qp.uid, None)
        if qp.uid in self._pods or qp.uid in self._member_of:
            return
        qp.timestamp = self.clock.now()
        qp.order = next(self._seq)
        qp.failed_at_generation = generation
        if self.is_group_member(qp.pod):
            if qp.unschedulable_plugins or qp.pending_plugins:
                qp.unschedulable_count += 1
                qp.consecutive_errors = 0
            else:
                qp.consecutive_errors += 1
            self.add_unschedulable_member(qp)
            return
        self._pods[qp.uid] = qp
        events, qp.in_flight_events = qp.in_flight_events, []
        if qp.unschedulable_plugins or qp.pending_plugins:
            qp.unschedulable_count += 1
            qp.consecutive_errors = 0
            if any(self._worth_requeuing(qp, ev, old, new) for ev, old, new in events):
                self._to_backoff(qp)
            else:
                self._to_unschedulable(qp)
        else:
            qp.consecutive_errors += 1
            self._to_backoff(qp)
        if self.on_incoming is not None:
            self.on_incoming(qp.where, "ScheduleAttemptFailure")

    def activate(self, uids: Iterable[str]) -> None:
        """``Activate``: a pod in backoffQ or unschedulablePods, where upstream keeps gated pods
        too, moved to activeQ at once, PreEnqueue run again (a preemptor gated while its
        preemption ran is let through once it is over)."""
        for uid in uids:
            qp = self._pods.get(uid) or self.group_of(uid)
            if qp is not None and qp.where in (BACKOFF, UNSCHEDULABLE, GATED):
                self._move(qp, str(FORCE_ACTIVATE), immediately=True)

    def _compiled(self, registered: dict[str, list[ClusterEventWithHint]]) -> dict[str, dict[str, list[Any]]]:
        """The registrations of a profile indexed by plugin and resource, actions as ints, so
        that an event is checked only against the registrations of its resource."""
        if not registered:
            return {}
        key = id(registered)
        hit = self._compiled_cache.get(key)
        if hit is not None and hit[0] is registered:
            return hit[1]
        index: dict[str, dict[str, list[Any]]] = {}
        for plugin, events in registered.items():
            by_resource: dict[str, list[Any]] = {}
            for ev in events:
                by_resource.setdefault(ev.event.resource, []).append((int(ev.event.action), ev.hint))
            index[plugin] = by_resource
        self._compiled_cache[key] = (registered, index)
        return index

    def _worth_requeuing(self, qp: Entity, event: ClusterEvent, old: Any, new: Any) -> bool:
        """``isPodWorthRequeuing``: a plugin that rejected the pod registered an event matching
        this one (``ClusterEvent.Match``) and its hint, if any, says Queue."""
        if event.resource == WILDCARD:
            return True
        if isinstance(qp, QueuedPodGroupInfo):  # any member's (``isEntityWorthRequeuing``)
            gating = qp.gating_plugin if qp.where == GATED else ""
            return any(self._pod_worth_requeuing(m, event, old, new, gating) for m in qp.members)
        return self._pod_worth_requeuing(qp, event, old, new, qp.gating_plugin if qp.where == GATED else "")

    def _pod_worth_requeuing(self, qp: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any, gating: str) -> bool:
        """A gated pod's rejectors are its gating plugin and those of its last attempt (a preemptor
        held by DefaultPreemption, whose hint always skips, is requeued by the plugins that
        rejected it: NodeResourcesFit on its victims' deletion); the gating plugin's registrations
        have already chosen the event (``moveEntitiesToActiveOrBackoffQueue``)."""
        index = self._compiled(self._events(qp.pod))
        plugins = qp.unschedulable_plugins | qp.pending_plugins
        if gating:
            plugins = plugins | {gating}
        for name in plugins:
            for hint in self._matching(index.get(name), event):
                if hint is None:
                    return True
                try:
                    if hint(qp.pod, old, new):
                        return True
                except Exception:  # a failing hint counts as Queue, as upstream does
                    return True
        return False

    def move_all(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        pre_check: Callable[[Entity], bool] | None = None,
    ) -> int:
        """``MoveAllToActiveOrBackoffQueue``: requeue unschedulable pods the event may help."""
        moved = 0
        for qp in self.in_flight.values():
            if pre_check is None or pre_check(qp):
                qp.in_flight_events.append((event, old, new))
        for entity in list(self._unschedulable.values()):
            if pre_check is not None and not pre_check(entity):
                continue
            if self._worth_requeuing(entity, event, old, new):
                pending = entity.pending_plugins & set(self._events(entity.pod))
                self._move(entity, str(event), immediately=bool(pending))
                moved += 1
        # gated pods: only events their gating plugin registered re-run PreEnqueue (k/k#124618)
        for _key, group in list(self._gated.items()):
            first = next(iter(group.values()))
            if not self._may_match(first, event):
                continue
            for gated in list(group.values()):
                if pre_check is not None and not pre_check(gated):
                    continue
                if self._worth_requeuing(gated, event, old, new) and self._move(gated, str(event)) != GATED:
                    moved += 1
        return moved

    @staticmethod
    def _matching(by_resource: dict[str, list[Any]] | None, event: ClusterEvent) -> list[Any]:
        """The hints (None: no hint) of one plugin's registrations that match a non-wildcard
        ``event`` (``ClusterEvent.Match``: same resource, or Pod for either half of it, or a
        wildcard registration; overlapping actions, or the event's action is All)."""
        if not by_resource:
            return []
        action = int(event.action)
        registered = list(by_resource.get(event.resource, ()))
        if event.resource in (ASSIGNED_POD, UNSCHEDULABLE_POD):
            registered += by_resource.get(POD, [])
        out = [hint for a, hint in registered if a & action]
        out += [hint for a, hint in by_resource.get(WILDCARD, ()) if a & action or action == ALL_ACTIONS]
        return out

    def _may_match(self, qp: Entity, event: ClusterEvent) -> bool:
        """Whether any event a gated pod's gating plugin registered matches ``event``, hints aside
        (the same for every pod of its group)."""
        if event.resource == WILDCARD:
            return True
        return bool(self._matching(self._compiled(self._events(qp.pod)).get(qp.gating_plugin), event))

    def flush_backoff_completed(self) -> int:
        now = self.clock.now()
        moved = 0
        for heap in (self._backoff, self._error_backoff):
            while (top := _top(heap)) is not None and top[0] <= now:
                qp = heapq.heappop(heap)[3]
                self._to_active(qp)
                moved += 1
                if self.on_incoming is not None:
                    self.on_incoming(ACTIVE, "BackoffComplete")
        return moved

    def next_backoff_expiry(self, useful: Callable[[Entity], bool] | None = None) -> float | None:
        """When the next backoff ends; with ``useful``, only among the entities it accepts."""
        if useful is None:
            times = [top[0] for heap in (self._backoff, self._error_backoff) if (top := _top(heap)) is not None]
            return min(times) if times else None
        live = (
            expiry
            for heap in (self._backoff, self._error_backoff)
            for expiry, _, seq, entity in heap
            if entity.seq == seq and entity.where == BACKOFF and useful(entity)
        )
        return min(live, default=None)

    def flush_unschedulable_leftover(self) -> int:
        """Move pods that sat unschedulable longer than 5 minutes (``UnschedulableTimeout``)."""
        now = self.clock.now()
        moved = 0
        for qp in list(self._unschedulable.values()):
            if qp.where == UNSCHEDULABLE and now - qp.timestamp > self.max_in_unschedulable:
                self._move(qp, str(UNSCHEDULABLE_TIMEOUT))
                moved += 1
        return moved

    def unschedulable_pods(self) -> list[Entity]:
        return [qp for qp in self._unschedulable.values() if qp.where == UNSCHEDULABLE]

    def gated_pods(self) -> list[Entity]:
        return [qp for group in self._gated.values() for qp in group.values()]


def _top(heap: list[tuple[float, Any, int, Entity]]) -> tuple[float, Any, int, Entity] | None:
    """A backoff heap's first live entry (stale ones dropped), or None."""
    while heap and (heap[0][3].seq != heap[0][2] or heap[0][3].where != BACKOFF):
        heapq.heappop(heap)
    return heap[0] if heap else None
