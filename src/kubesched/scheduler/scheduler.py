"""The Scheduler: informers feeding cache and queue, ``schedule_one``, the binding cycle, failures.

Follows ``pkg/scheduler/{scheduler.go,eventhandlers.go,schedule_one.go}``. Scheduling cycles run
one at a time; each binding cycle starts after its scheduling cycle (or, when a Permit plugin
parks the pod, once the waiting pod is allowed) and runs its PreBind/Bind through ``binding``:
inline, or on threads so the next scheduling cycle need not wait for the API server, as
upstream's binding goroutines. Its outcome is taken back on the scheduler's thread.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.node import NodeSpecInfo, node_info_from
from kubesched.api.pod import PodInfo, pod_info_from, same_scheduling_inputs, updated_pod_condition
from kubesched.api.watch import ADDED, DELETED, Watch, WatchEvent
from kubesched.client import ClusterClient
from kubesched.clock import Clock
from kubesched.errors import InputError
from kubesched.features import OPPORTUNISTIC_BATCHING
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import (
    ASSIGNED_POD,
    ASSIGNED_POD_DELETE,
    NODE,
    UNSCHEDULABLE_POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code, Status
from kubesched.scheduler.binding import Binding, InlineBinding
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.config import SchedulerConfig
from kubesched.scheduler.extender import ExtenderError, HTTPExtender
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import ERR_NO_NODES_AVAILABLE, FitError
from kubesched.scheduler.framework.waiting_pods import WaitingPod, WaitingPods
from kubesched.scheduler.listers import KINDS as LISTED_KINDS
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.metrics import SchedulerMetrics, instrument
from kubesched.scheduler.plugins import installed_registry
from kubesched.scheduler.queue import QueuedPodInfo, SchedulingQueue
from kubesched.scheduler.schedule_one import Algorithm, PluginError, _NoNodes

log = logging.getLogger("kubesched.scheduler")
# the event of a pod bound (seen on the watch), the same frozen value each time
ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
DRA_KINDS = frozenset({"ResourceClaim", "DeviceClass", "ResourceSlice"})
NO_NODES_PLUGIN = "<no nodes>"  # pods that failed because the cluster had no node wait for a Node add
_NO_NODES_EVENTS = [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD))]


@dataclass(slots=True)
class Stats:
    attempts: int = 0
    scheduled: int = 0
    unschedulable: int = 0
    errors: int = 0
    wall_seconds: float = 0.0


@dataclass(slots=True)
class Explanation:
    """Per-node filter verdicts and scores of one scheduling attempt of a pod (``--explain``;
    kube-scheduler-simulator's ``result-history`` keeps one per attempt)."""

    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    score: dict[str, dict[str, int]] = field(default_factory=dict)
    final_score: dict[str, int] = field(default_factory=dict)
    selected: str | None = None
    weights: dict[str, int] = field(default_factory=dict)
    attempt: int = 0
    time: float = 0.0
    # the node Opportunistic Batching hinted and the pod took: only it was filtered, nothing scored
    hint: str | None = None


class Scheduler:
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
    ) -> None:
        self.client = client
        self.binding: Binding = binding if binding is not None else InlineBinding()
        self.config = config
        self.clock = clock
        self.cache = Cache()
        self.waiting_pods = WaitingPods()
        self.listers = Listers()
        self.handle = Handle(client, self.cache, self.waiting_pods, clock)
        self.handle.listers = self.listers
        self.handle.rng = random.Random(seed)
        self.profiles = build_profiles(config, self.handle, registry)
        self.metrics = SchedulerMetrics(seed)
        self.handle.metrics = self.metrics
        for name, fwk in self.profiles.items():
            instrument(fwk, self.metrics, name)
        first = next(iter(self.profiles.values()))
        sort_plugin = first.queue_sort
        self.queue = SchedulingQueue(
            clock,
            less=sort_plugin.less,
            sort_key=sort_plugin.sort_key if sort_plugin.sort_key(_Probe()) is not None else None,
            pre_enqueue=self._run_pre_enqueue,
            events=self._events_for,
            initial_backoff=config.pod_initial_backoff_seconds,
            max_backoff=config.pod_max_backoff_seconds,
        )
        self._events_by_profile = {
            name: {**f.events_to_register(), NO_NODES_PLUGIN: _NO_NODES_EVENTS} for name, f in self.profiles.items()
        }
        self.handle.queue = self.queue
        self.queue.on_nominated = self.cache.set_nominated
        self.queue.nominated_table = self.cache.nominated_table
        self.extenders = [HTTPExtender(c) for c in config.extenders]
        self.queue.on_incoming = self.metrics.queue_incoming.inc
        self.metrics.pending_source = self.queue.counts
        self.metrics.unschedulable_source = self._unschedulable_by_plugin
        self.metrics.cache_source = self.cache.counts
        self.algorithm = Algorithm(config.percentage_of_nodes_to_score, random.Random(seed))
        self.algorithm.batching = config.feature_gates.enabled(OPPORTUNISTIC_BATCHING)
        self.algorithm.extenders = self.extenders
        self.handle.extenders = self.extenders
        self.algorithm.node_object = self.cache.node_object
        self.stats = Stats()
        self.cluster_generation = 0
        self.explain_keys = explain or set()
        self.explanations: dict[str, list[Explanation]] = {}
        self.last_message: dict[str, str] = {}
        self._watch: Watch | None = None
        self._pod_infos: dict[str, PodInfo] = {}
        self.on_bound: Callable[[PodInfo, str], None] | None = None

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
        current, watch = self.client.list_and_watch(["Node", "Pod", *LISTED_KINDS])
        self._watch = watch
        if notify is not None:
            watch.notify = notify
            self.binding.notify = notify
        for obj in current["Node"]:
            self._on_node_add(obj)
        for kind in LISTED_KINDS:
            for obj in current[kind]:
                self.listers.set(kind, obj)
        for obj in current["Pod"]:
            self._on_pod_add(obj)

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

    def _dispatch(self, ev: WatchEvent) -> None:
        if ev.kind == "Node":
            if ev.type == ADDED:
                self._on_node_add(ev.obj)
            elif ev.type == DELETED:
                self._on_node_delete(ev.obj)
            else:
                self._on_node_update(ev.old or {}, ev.obj)
        elif ev.kind == "Pod":
            if ev.type == ADDED:
                self._on_pod_add(ev.obj)
            elif ev.type == DELETED:
                self._on_pod_delete(ev.obj)
            else:
                self._on_pod_update(ev.old or {}, ev.obj)
        elif ev.kind in LISTED_KINDS:
            if ev.type == DELETED:
                self.listers.delete(ev.kind, ev.obj)
            else:
                self.listers.set(ev.kind, ev.obj)
            if ev.kind in DRA_KINDS:  # claims, classes, slices: DynamicResources' registered events
                verb = {ADDED: "Add", DELETED: "Delete"}.get(ev.type, "Update")
                action = {ADDED: ActionType.ADD, DELETED: ActionType.DELETE}.get(ev.type, ActionType.UPDATE)
                self.cluster_generation += 1
                self.queue.move_all(ClusterEvent(ev.kind, action, f"{ev.kind}{verb}"), ev.old, ev.obj)

    # -- node handlers --------------------------------------------------------------------------
    def _on_node_add(self, obj: dict[str, Any]) -> None:
        spec = node_info_from(obj)
        self.cache.add_node(obj, spec)
        self.cluster_generation += 1
        self.queue.move_all(ClusterEvent(NODE, ActionType.ADD, "NodeAdd"), None, spec)

    def _on_node_update(self, old_obj: dict[str, Any], obj: dict[str, Any]) -> None:
        old = self.cache.node_spec((obj.get("metadata") or {}).get("name", ""))
        spec = node_info_from(obj)
        self.cache.update_node(obj, spec)
        self.cluster_generation += 1
        action = node_update_actions(old, spec, old_obj, obj)
        if action:
            self.queue.move_all(ClusterEvent(NODE, action, f"Node{action.name or 'Update'}"), old, spec)

    def _on_node_delete(self, obj: dict[str, Any]) -> None:
        # ``deleteNodeFromCache``: plugins that care (PodTopologySpread: a domain may be gone) get
        # the event first, with the node as it was
        name = (obj.get("metadata") or {}).get("name", "")
        old = self.cache.node_spec(name) or node_info_from(obj)
        self.queue.move_all(ClusterEvent(NODE, ActionType.DELETE, "NodeDelete"), old, None)
        self.cache.remove_node(name)
        self.cluster_generation += 1

    # -- pod handlers ---------------------------------------------------------------------------
    def _parse_pod(self, obj: dict[str, Any]) -> PodInfo | None:
        """PodInfo for a watched pod. A version whose scheduling inputs are unchanged (a binding,
        a status write) reuses the previous parse; a malformed pod is dropped (None)."""
        uid = (obj.get("metadata") or {}).get("uid", "")
        prev = self._pod_infos.get(uid)
        if prev is not None:
            if prev.obj is obj:
                return prev
            if same_scheduling_inputs(prev.obj, obj):
                info = prev.evolve(
                    obj,
                    (obj.get("spec") or {}).get("nodeName") or "",
                    (obj.get("status") or {}).get("nominatedNodeName") or "",
                )
                self._pod_infos[uid] = info
                return info
        try:
            info = pod_info_from(obj)
        except InputError:
            return None
        self._pod_infos[uid] = info
        return info

    def _on_pod_add(self, obj: dict[str, Any]) -> None:
        pod = self._parse_pod(obj)
        if pod is None:
            return
        if pod.node_name:
            self.cache.add_pod(pod)
            self.cluster_generation += 1
            self.queue.move_all(ASSIGNED_POD_ADD, None, pod)
        elif pod.scheduler_name in self.profiles:
            self.queue.add(pod)

    def _on_pod_update(self, old_obj: dict[str, Any], obj: dict[str, Any]) -> None:
        known = self._pod_infos.get((obj.get("metadata") or {}).get("uid", ""))
        old = known if known is not None and known.obj is old_obj else None
        if old is None and old_obj:
            old = self._parse_pod(old_obj)
        pod = self._parse_pod(obj)
        if pod is None:
            return
        if pod.node_name:
            was_pending = old is not None and not old.node_name
            self.cache.update_pod(pod)
            self.cluster_generation += 1
            if was_pending:
                self.queue.delete(pod.uid)
                self.queue.move_all(ASSIGNED_POD_ADD, None, pod)
            else:
                action = pod_update_actions(old, pod)
                if action:
                    self.queue.move_all(ClusterEvent(ASSIGNED_POD, action, "AssignedPodUpdate"), old, pod)
        elif pod.scheduler_name in self.profiles:
            if pod.deleting:
                return
            action = pod_update_actions(old, pod)
            self.queue.update(
                pod, ClusterEvent(UNSCHEDULABLE_POD, action, "UnschedulablePodUpdate") if action else None, old
            )

    def _on_pod_delete(self, obj: dict[str, Any]) -> None:
        pod = self._parse_pod(obj)
        if pod is None:
            return
        self._pod_infos.pop(pod.uid, None)
        if pod.node_name or self.cache.pod(pod.uid) is not None:
            removed = self.cache.remove_pod(pod.uid)
            self.cluster_generation += 1
            self.waiting_pods.reject(pod.uid)
            self.queue.delete_nominated(pod.uid)
            self.queue.move_all(ASSIGNED_POD_DELETE, removed or pod, None)
        else:
            self.queue.delete(pod.uid)
            self.waiting_pods.reject(pod.uid)

    def _unschedulable_by_plugin(self) -> dict[tuple[str, str], int]:
        """``scheduler_unschedulable_pods``: pods in unschedulablePods per rejecting plugin and profile."""
        out: dict[tuple[str, str], int] = {}
        for qp in self.queue.unschedulable_pods():
            for plugin in qp.unschedulable_plugins | qp.pending_plugins:
                key = (plugin, qp.pod.scheduler_name)
                out[key] = out.get(key, 0) + 1
        return out

    # -- the scheduling cycle ----------------------------------------------------------------------
    def schedule_one(self) -> bool:
        """Pop one pod and run its scheduling cycle (and binding cycle). False if activeQ is empty."""
        qp = self.queue.pop()
        if qp is None:
            return False
        started = time.perf_counter()
        qp.attempt_started = started
        self.metrics.start_cycle()
        pod = qp.pod
        fwk = self._framework_for(pod)
        if fwk is None:
            self.queue.done(pod.uid)
            return True
        if pod.deleting:
            self.client.record_event(
                "Warning", "FailedScheduling", "Scheduling", pod.obj, f"skip schedule deleting pod: {pod.key}"
            )
            self.queue.done(pod.uid)
            return True
        if self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return True
        self.stats.attempts += 1
        state = CycleState()
        explain = bool(self.explain_keys) and pod.key in self.explain_keys
        try:
            result = self.algorithm.schedule_pod(
                fwk, state, pod, self.cache.table, self.queue, explain=explain, cycle=self.queue.scheduling_cycle
            )
        except FitError as err:
            if explain:
                self._record_explanation(pod, fwk, err.diagnosis, None, None)
            self._handle_fit_error(fwk, state, qp, err)
            self.stats.wall_seconds += time.perf_counter() - started
            return True
        except _NoNodes:
            qp.unschedulable_plugins = {NO_NODES_PLUGIN}
            self._handle_failure(
                qp, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_NODES_AVAILABLE), ERR_NO_NODES_AVAILABLE, None
            )
            return True
        except PluginError as err:
            qp.unschedulable_plugins, qp.pending_plugins = set(), set()
            self._handle_failure(qp, err.status, err.status.message(), None)
            return True
        self.metrics.algorithm_duration.observe(time.perf_counter() - started)
        if explain and result.explain is not None:
            self._record_explanation(pod, fwk, result.explain["diagnosis"], result.explain, result.suggested_host)
        host = result.suggested_host
        assumed = self._assume(pod, host)
        st = fwk.run_reserve(state, assumed, host)
        if st is not None:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(pod.uid)
            self._fail_after_assume(qp, st)
            return True
        st, waits = fwk.run_permit(state, assumed, host)
        if st is not None and st.code != Code.WAIT:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(pod.uid)
            self._fail_after_assume(qp, st)
            return True
        if state.pods_to_activate:
            self.queue.activate(state.pods_to_activate)
        if waits:
            self.waiting_pods.add(
                WaitingPod(
                    assumed,
                    waits,
                    self.clock,
                    lambda wp, status: self._resume_binding(fwk, state, qp, assumed, host, status),
                )
            )
        else:
            self._binding_cycle(fwk, state, qp, assumed, host)
        self.stats.wall_seconds += time.perf_counter() - started
        return True

    def _assume(self, pod: PodInfo, host: str) -> PodInfo:
        assumed = _copy_pod(pod, host)
        self.cache.assume_pod(assumed, host)
        self.queue.delete_nominated(pod.uid)
        return assumed

    def _resume_binding(
        self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str, status: Status | None
    ) -> None:
        self.waiting_pods.remove(pod.uid)
        if status is not None:
            fwk.run_unreserve(state, pod, host)
            self.cache.forget_pod(pod.uid)
            self.queue.move_all(ASSIGNED_POD_DELETE, pod, None, pre_check=lambda q: q.uid != pod.uid)
            self._fail_after_assume(qp, status)
            return
        self._binding_cycle(fwk, state, qp, pod, host)

    def _binding_cycle(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str) -> None:
        self.queue.done(pod.uid)

        def done(st: Status | None) -> None:
            self._binding_done(fwk, state, qp, pod, host, st)

        def work() -> Status | None:
            st = fwk.run_pre_bind(state, pod, host)
            if st is None:
                bound, st = self._extenders_binding(pod, host)
                if not bound:
                    st = fwk.run_bind(state, pod, host)
            if st is None and log.isEnabledFor(logging.DEBUG):  # upstream logs it at -v=2, right after Bind
                log.debug('"Successfully bound pod to node" pod="%s" node="%s"', pod.key, host)
            return st

        self.binding.submit(work, done)

    def _extenders_binding(self, pod: PodInfo, host: str) -> tuple[bool, Status | None]:
        """``extendersBinding``: an interested binder extender binds instead of the Bind plugins;
        an ignorable one that fails leaves it to them."""
        for ext in self.extenders:
            if not ext.is_binder() or not ext.is_interested(pod):
                continue
            try:
                ext.bind(pod, host)
            except ExtenderError as err:
                if ext.cfg.ignorable:
                    continue
                return True, Status.error(str(err))
            return True, None
        return False, None

    def _binding_done(
        self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str, st: Status | None
    ) -> None:
        """The end of a binding cycle, on the scheduler's thread: confirm or undo the assumption."""
        if st is not None:
            fwk.run_unreserve(state, pod, host)
            self.cache.forget_pod(pod.uid)
            self.queue.move_all(ASSIGNED_POD_DELETE, pod, None)
            qp.unschedulable_plugins = {st.plugin} if st.is_rejected() and st.plugin else set()
            self._handle_failure(qp, st, st.message(), None)
            return
        self.cache.finish_binding(pod.uid)
        self.stats.scheduled += 1
        self.metrics.pod_scheduled(fwk.profile_name, time.perf_counter() - qp.attempt_started)
        if qp.initial_attempt_timestamp is not None:
            self.metrics.pod_bound(qp.attempts, self.clock.now() - qp.initial_attempt_timestamp)
        if self.last_message:
            self.last_message.pop(pod.key, None)
        self.client.record_event(
            "Normal", "Scheduled", "Binding", pod.obj, f"Successfully assigned {pod.key} to {host}"
        )
        fwk.run_post_bind(state, pod, host)
        if self.on_bound is not None:
            self.on_bound(pod, host)

    def _fail_after_assume(self, qp: QueuedPodInfo, st: Status) -> None:
        if st.is_rejected():
            qp.unschedulable_plugins = {st.plugin} if st.plugin else set()
        else:
            qp.unschedulable_plugins = set()
        self._handle_failure(qp, st, st.message(), None)

    def _handle_fit_error(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, err: FitError) -> None:
        nominated: str | None = None
        if fwk.post_filter:
            result, st = fwk.run_post_filter(state, qp.pod, err.diagnosis)
            if st.reasons:
                err.diagnosis.post_filter_msg = st.message()
            if result is not None:
                nominated = result.nominated_node_name
        qp.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
        qp.pending_plugins = set(err.diagnosis.pending_plugins)
        self._handle_failure(qp, Status(Code.UNSCHEDULABLE, (str(err),)), str(err), nominated)

    def _handle_failure(self, qp: QueuedPodInfo, st: Status, message: str, nominated: str | None) -> None:
        """``handleSchedulingFailure``: requeue, record FailedScheduling, patch PodScheduled=False."""
        pod = qp.pod
        rejected = st.is_rejected()
        seconds = time.perf_counter() - qp.attempt_started
        if rejected:
            self.stats.unschedulable += 1
            self.metrics.pod_unschedulable(pod.scheduler_name, seconds)
        else:
            self.stats.errors += 1
            self.metrics.pod_schedule_error(pod.scheduler_name, seconds)
        reason = "Unschedulable" if rejected else "SchedulerError"
        try:
            current = self.client.get("Pod", pod.namespace, pod.name)
        except ApiError:
            self.queue.done(pod.uid)
            return
        current_info = self._parse_pod(current)
        if current_info is None or current_info.uid != pod.uid or current_info.node_name:
            self.queue.done(pod.uid)
            return
        qp.pod = current_info
        self.queue.add_unschedulable(qp, generation=self.cluster_generation)
        if nominated:
            self.queue.add_nominated(current_info, nominated)
        elif nominated == "":
            self.queue.delete_nominated(current_info.uid)
        self.last_message[pod.key] = message
        self.client.record_event("Warning", "FailedScheduling", "Scheduling", current, message)
        patch_nominated = nominated if nominated is not None and nominated != current_info.nominated_node_name else None
        # updatePod: nothing is written when the condition and the nomination are as they were, so
        # the pod's resourceVersion, and with it the event's key, stays: repeats become a series
        condition = updated_pod_condition(
            current, {"type": "PodScheduled", "status": "False", "reason": reason, "message": message}
        )
        if condition is None and patch_nominated is None:
            return
        try:
            self.client.patch_pod_status(pod.namespace, pod.name, condition, patch_nominated)
        except ApiError as exc:  # logged, as upstream's "Error updating pod"; the pod stays queued
            log.error('"Error updating pod" pod="%s" err="%s"', pod.key, exc.message)

    def _record_explanation(
        self, pod: PodInfo, fwk: Framework, diagnosis: Any, info: dict[str, Any] | None, selected: str | None
    ) -> None:
        nodes = self.cache.table
        history = self.explanations.setdefault(pod.key, [])
        exp = Explanation(selected=selected, weights=dict(fwk.weights), attempt=len(history) + 1, time=self.clock.now())
        if info is not None and info.get("hint"):
            exp.hint = str(info["hint"])
            exp.filter[exp.hint] = dict.fromkeys(fwk.filter_names, "passed")
            history.append(exp)
            return
        for row, name in enumerate(diagnosis.node_names):
            st = diagnosis.status_of(row)
            verdicts: dict[str, str] = {}
            for pname in fwk.filter_names:
                if st is not None and st.plugin == pname:
                    verdicts[pname] = st.message()
                    break
                verdicts[pname] = "passed"
            if st is not None and st.plugin not in fwk.filter_names:
                verdicts = {st.plugin or "PreFilter": st.message()}
            exp.filter[name] = verdicts
        if info is not None:
            rows = info["rows"]
            for i, row in enumerate(rows.tolist()):
                name = nodes.names[row]
                exp.score[name] = {p: int(s[i]) for p, s in info["scores"].items()}
                exp.final_score[name] = int(info["total"][i])
        history.append(exp)


def build_profiles(
    config: SchedulerConfig, handle: Handle | None = None, registry: Registry | None = None
) -> dict[str, Framework]:
    """Every profile's framework, its plugins built with their args (``profile.NewMap``); with
    no handle, without a cluster, which is what ``kubesched config validate`` checks."""
    registry = registry if registry is not None else installed_registry()
    handle = handle if handle is not None else Handle(None, Cache(), WaitingPods(), None)  # type: ignore[arg-type]
    profiles: dict[str, Framework] = {}
    for profile in config.profiles:
        try:
            profiles[profile.scheduler_name] = Framework(registry, profile, handle)
        except InputError as exc:
            raise exc.located(file=config.source, obj="KubeSchedulerConfiguration") from None
    return profiles


def _copy_pod(pod: PodInfo, host: str) -> PodInfo:
    """The assumed copy: same pod with spec.nodeName set."""
    return pod.evolve(pod.obj, host, pod.nominated_node_name)


class _Probe:
    """A stand-in queued pod to ask a QueueSort plugin whether it offers a sort key."""

    class _P:
        priority = 0

    pod = _P()
    timestamp = 0.0


def node_update_actions(
    old: NodeSpecInfo | None, new: NodeSpecInfo, old_obj: dict[str, Any], new_obj: dict[str, Any]
) -> ActionType:
    """Which Node Update* actions a change amounts to (``framework/events.go`` NodeSchedulingPropertiesChange)."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    if old.allocatable != new.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if dict(old.labels) != dict(new.labels):
        action |= ActionType.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= ActionType.UPDATE_NODE_TAINT
    if (old_obj.get("status") or {}).get("conditions") != (new_obj.get("status") or {}).get("conditions"):
        action |= ActionType.UPDATE_NODE_CONDITION
    if (old_obj.get("metadata") or {}).get("annotations") != (new_obj.get("metadata") or {}).get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return action


def pod_update_actions(old: PodInfo | None, new: PodInfo) -> ActionType:
    """Pod Update* actions (``PodSchedulingPropertiesChange``)."""
    if old is None:
        return ActionType.ADD
    action = ActionType(0)
    if dict(old.labels) != dict(new.labels):
        action |= ActionType.UPDATE_POD_LABEL
    if old.tolerations != new.tolerations:
        action |= ActionType.UPDATE_POD_TOLERATION
    if old.scheduling_gates and not new.scheduling_gates:
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if any(v < old.requests.get(k, 0) for k, v in new.requests.items()) or set(old.requests) - set(new.requests):
        action |= ActionType.UPDATE_POD_SCALE_DOWN
    old_claims = (old.obj.get("status") or {}).get("resourceClaimStatuses")
    if old_claims != (new.obj.get("status") or {}).get("resourceClaimStatuses"):
        action |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    return action
