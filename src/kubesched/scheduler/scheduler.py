"""The Scheduler (``pkg/scheduler/scheduler.go``): built from a configuration (profiles, queue,
cache, extenders), started from the informers' initial list, then driven by its caller one
``schedule_one`` at a time. Its event handlers are in ``eventhandlers.py``, ScheduleOne and the
cycles in ``schedule_one.py``.

Scheduling cycles run one at a time; each binding cycle starts after its scheduling cycle (or,
when a Permit plugin parks the pod, once the waiting pod is allowed) and runs its PreBind/Bind
through ``binding``: inline, or on threads so the next scheduling cycle need not wait for the API
server, as upstream's binding goroutines. Its outcome is taken back on the scheduler's thread.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kubesched.api.pod import PodInfo, pod_info_from
from kubesched.api.watch import Watch
from kubesched.client import ClusterClient
from kubesched.clock import Clock
from kubesched.features import (
    GENERIC_WORKLOAD,
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    OPPORTUNISTIC_BATCHING,
    SCHEDULER_POP_FROM_BACKOFF_Q,
)
from kubesched.framework.events import ClusterEventWithHint, custom_resource
from kubesched.framework.registry import Registry
from kubesched.framework.status import Status
from kubesched.health import LoopHealth
from kubesched.scheduler.binding import Binding, InlineBinding
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.eventhandlers import EventHandlers
from kubesched.scheduler.extender import HTTPExtender
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.waiting_pods import WaitingPods
from kubesched.scheduler.informers import FIELD_SELECTORS
from kubesched.scheduler.listers import KINDS as LISTED_KINDS
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.metrics import SchedulerMetrics
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.parts import Explanation
from kubesched.scheduler.podgroups import PodGroupStates
from kubesched.scheduler.profile import build_profiles
from kubesched.scheduler.queue import Entity, QueuedPodInfo, SchedulingQueue
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.resultstore import NODE_LIMIT
from kubesched.scheduler.schedule_one_podgroup import ScheduleOnePodGroup
from kubesched.scheduler.schedule_pod import Algorithm


class Scheduler(EventHandlers, ScheduleOnePodGroup):
    """kube-scheduler's Scheduler over one ClusterClient."""

    def __init__(
        self,
        client: ClusterClient,
        config: SchedulerConfig,
        clock: Clock,
        *,
        registry: Registry | None = None,
        seed: int = 0,
        explain: set[str] | None = None,
        binding: Binding | None = None,
        write_results: bool = False,
        results_node_limit: int = NODE_LIMIT,
        health: LoopHealth | None = None,
    ) -> None:
        self.client = client
        self.binding: Binding = binding if binding is not None else InlineBinding()
        self.config = config
        self.clock = clock
        self.cache = Cache()
        self.pod_groups_enabled = config.feature_gates.enabled(GENERIC_WORKLOAD)
        if self.pod_groups_enabled:
            self.cache.pod_groups = PodGroupStates()
        self.waiting_pods = WaitingPods()
        self.listers = Listers()
        # the gauges' sources are read when scraped, by then built (the queue comes after the
        # profiles, which record into these metrics)
        self.metrics = SchedulerMetrics(
            seed,
            pending=lambda: self.queue.counts(),
            unschedulable=lambda: self._unschedulable_by_plugin(),
            cache=lambda: self.cache.counts(),
        )
        self.extenders = [HTTPExtender(c) for c in config.extenders]
        self.handle = Handle(
            client,
            self.cache,
            self.waiting_pods,
            clock,
            listers=self.listers,
            rng=random.Random(seed),
            metrics=self.metrics,
            extenders=self.extenders,
            features=config.feature_gates,
            background=self.binding,
        )
        self.profiles = build_profiles(config, self.handle, registry)  # each records into handle.metrics
        first = next(iter(self.profiles.values()))
        sort_plugin = first.queue_sort
        self.queue = SchedulingQueue(
            clock,
            less=sort_plugin.less,
            sort_key=sort_plugin.sort_key if sort_plugin.sort_key(_PROBE) is not None else None,
            pre_enqueue=self._run_pre_enqueue,
            events=self._events_for,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
            pop_from_backoff=config.feature_gates.enabled(SCHEDULER_POP_FROM_BACKOFF_Q),
            pod_groups=self.pod_groups_enabled,
            on_nominated=self.cache.set_nominated,
            nominated_table=self.cache.nominated_table,
            on_incoming=self.metrics.queue_incoming.inc,
        )
        self._events_by_profile = {name: f.events_to_register() for name, f in self.profiles.items()}
        self.handle.queue = self.queue
        self.algorithm = Algorithm(
            config.percentage_of_nodes_to_score,
            random.Random(seed),
            batching=config.feature_gates.enabled(OPPORTUNISTIC_BATCHING),
            extenders=self.extenders,
            node_object=self.cache.node_object,
        )
        self.nominate_expected = config.feature_gates.enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)
        self.stats = self.metrics.stats  # one tally with the attempt counters
        # the process's loops' health, when it has one (``kubesched up``, ``scheduler``)
        self.health = health if health is not None else LoopHealth()
        self.cluster_generation = 0
        self.explain_keys = explain or set()
        self.write_results = write_results
        self.results_node_limit = results_node_limit
        self.explanations: dict[str, list[Explanation]] = {}
        self.last_message: dict[str, str] = {}
        self._watch: Watch | None = None
        self._pod_infos: dict[str, PodInfo] = {}
        self._custom_events: dict[str, str] = {}  # a watched custom kind -> its event resource

    # -- wiring -------------------------------------------------------------------------------
    def _framework_for(self, pod: PodInfo) -> Framework | None:
        return self.profiles.get(pod.scheduler_name)

    def _run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        fwk = self._framework_for(pod)
        return fwk.run_pre_enqueue(pod) if fwk else None

    def _events_for(self, pod: PodInfo) -> dict[str, list[ClusterEventWithHint]]:
        return self._events_by_profile.get(pod.scheduler_name, {})

    def start(self, notify: Callable[[], None] | None = None) -> None:
        """Initial list of nodes and pods, then a watch from that resourceVersion (informers);
        ``notify`` is called whenever an event arrives (a real-time driver's wake-up)."""
        groups = ["PodGroup"] if self.pod_groups_enabled else []  # served only with the gate
        custom = self.custom_kinds()
        self._custom_events = {k: f"{p}.{v}.{g}" for k, (g, v, p) in self.custom_resources().items()}
        for kind, (group, version, plural) in self.custom_resources().items():
            self.client.watch_custom(kind, group, version, plural)
        current, watch = self.client.list_and_watch(
            ["Node", "Pod", *LISTED_KINDS, *groups, *custom], field_selectors=FIELD_SELECTORS
        )
        self._watch = watch
        if notify is not None:
            watch.notify = notify
            self.binding.notify = notify
        for obj in current["Node"]:
            self._on_node_add(obj)
        for kind in (*LISTED_KINDS, *custom):
            self.listers.add_kind(kind)
            for obj in current[kind]:
                self.listers.set(kind, obj)
        for kind in groups:
            for obj in current[kind]:
                self._on_pod_group(None, obj)
        for obj in current["Pod"]:
            self._on_pod_add(obj)

    def custom_kinds(self) -> list[str]:
        """The custom resources the profiles' plugins register cluster events for, as Store
        kinds (``<plural>.<group>``): the scheduler lists and watches them into the listers."""
        return sorted(self.custom_resources())

    def custom_resources(self) -> dict[str, tuple[str, str, str]]:
        """Each watched custom kind's (group, version, plural)."""
        out: dict[str, tuple[str, str, str]] = {}
        for events in self._events_by_profile.values():
            for registered in events.values():
                for e in registered:
                    named = custom_resource(e.event.resource)
                    if named is not None:
                        plural, version, group = named
                        out[f"{plural}.{group}"] = (group, version, plural)
        return out

    def has_events(self) -> bool:
        return bool(self._watch) or self.binding.pending()

    def process_events(self) -> int:
        """Take finished bindings, then deliver pending watch events to the handlers; returns
        how many were handled."""
        handled = self.binding.drain()
        if self._watch is None:
            return handled
        while (ev := self._watch.pop()) is not None:
            self._dispatch(ev)
            handled += 1
        return handled

    # -- the face: what drivers, planners, the UI and explain read and ask of the scheduler; its
    # parts (queue, cache, algorithm, watch) are its own ---------------------------------------
    def round(
        self,
        *,
        flush: bool = False,
        flush_unschedulable: bool = False,
        cycles: int | None = None,
        go_on: Callable[[], bool] | None = None,
    ) -> int:
        """One round of kube-scheduler's loops at an instant, the step both drivers (real and
        virtual time) take (``scheduler.go`` Run: the informers' handlers, the queue's flush
        goroutines, ``ScheduleOne`` in a loop): the events that have arrived handled; with
        ``flush``, backoffQ's completed pods moved (and, ``flush_unschedulable``, the pods
        unschedulable for too long, the 30 s tick); then scheduling cycles while a pod is ready
        to pop, at most ``cycles``, each only while ``go_on`` says yes. Returns the cycles run."""
        self.process_events()
        if flush:
            self.flush(unschedulable=flush_unschedulable)
        ran = 0
        while (cycles is None or ran < cycles) and (go_on is None or go_on()) and self.has_active():
            self.schedule_one()  # pops only with a pod ready
            ran += 1
        return ran

    def drain(self, sync: Callable[[], None] | None = None) -> int:
        """Rounds at an instant until no pod is ready to pop (no time passes); ``sync`` runs
        before each (the loops beside the scheduler). Returns the scheduling cycles run."""
        cycles = 0
        while True:
            if sync is not None:
                sync()
            ran = self.round(cycles=1)
            if not ran:
                return cycles
            cycles += ran

    def has_active(self) -> bool:
        """Whether a pod (or pod group) is ready to pop: activeQ, or backoffQ where it may pop."""
        return self.queue.has_active()

    def pending(self) -> int:
        """Pods the queue holds (active, backoff, unschedulable, gated)."""
        return len(self.queue)

    def queued(self) -> list[QueuedPodInfo]:
        """Every queued pod, for a view of the queue; ``where`` says which sub-queue holds it."""
        return self.queue.entries()

    def where(self, uid: str) -> str:
        return self.queue.where(uid)

    def group_of(self, uid: str) -> QueuedPodGroupInfo | None:
        return self.queue.group_of(uid)

    def backoff_expiry(self, entity: Entity) -> float:
        """When a backing-off pod (or group) may be tried again."""
        return self.queue.backoff_expiry(entity)

    def gated_pods(self) -> list[Entity]:
        return self.queue.gated_pods()

    def unschedulable_pods(self) -> list[Entity]:
        return self.queue.unschedulable_pods()

    @property
    def max_in_unschedulable(self) -> float:
        """``podMaxInUnschedulablePodsDuration``: how long a pod waits before the flush moves it."""
        return self.queue.max_in_unschedulable

    def next_backoff_expiry(self, useful: Callable[[Entity], bool] | None = None) -> float | None:
        return self.queue.next_backoff_expiry(useful)

    def flush(self, *, unschedulable: bool) -> None:
        """The queue's periodic flushes: backoffQ's completed pods to activeQ, and (the 30 s tick,
        ``unschedulable``) pods unschedulable for longer than ``max_in_unschedulable``."""
        self.queue.flush_backoff_completed()
        if unschedulable:
            self.queue.flush_unschedulable_leftover()

    def node_table(self) -> NodeTable:
        """The cache's columnar node table, read-only to callers (usage reports)."""
        return self.cache.table

    def nominate(self, pod: PodInfo, node: str) -> None:
        """Record a nomination the scheduler did not make (explain replays the cluster's)."""
        self.queue.add_nominated(pod, node)

    def break_ties(self, mode: str, names: dict[str, str] | None = None) -> None:
        """How equal-scored nodes are chosen: upstream's ``random``, ``name``, or ``permutation``
        (by ``names``, a renaming of the nodes)."""
        if names is not None:
            self.algorithm.picker.break_ties_by(names)
        else:
            self.algorithm.picker.tie_break = mode

    def stop_watching(self, stop: Callable[[Watch], None]) -> None:
        """End the informers' watch with ``stop`` (the store's, in process): a restart of the
        scheduler builds a new one."""
        if self._watch is not None:
            stop(self._watch)
            self._watch = None

    def _unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """``scheduler_unschedulable_pods``: queued pods per rejecting plugin and profile. Upstream
        counts a pod under the plugins that rejected its last attempt, or gate it at PreEnqueue, from
        then until it is popped again (``UnschedulableReason``: incremented in
        ``AddUnschedulableIfNotPresent`` and ``runPreEnqueuePlugin``, decremented in the pop), so in
        backoffQ, among the gated and in activeQ too."""
        out: dict[tuple[str, str], int] = {}
        in_flight = self.queue.in_flight
        for qp in self.queue.entries():
            if qp.uid in in_flight:
                continue
            for plugin in qp.unschedulable_plugins | qp.pending_plugins:
                key = (plugin, qp.pod.scheduler_name)
                out[key] = out.get(key, 0) + 1
        return out


# a stand-in queued pod to ask a QueueSort plugin whether it offers a sort key
_PROBE = QueuedPodInfo(pod_info_from({"metadata": {"name": "probe", "uid": "probe"}}), 0.0)
