"""One pod's way through the scheduler (``pkg/scheduler/schedule_one.go``): ``ScheduleOne``
pops it, the scheduling cycle finds its node (``schedule_pod.Algorithm``: schedulePod), Reserve
and Permit hold the node, the binding cycle (PreBind, extenders' bind, Bind, PostBind) runs
through ``binding``, and ``handleSchedulingFailure`` requeues a pod that failed, records
FailedScheduling and writes its PodScheduled condition."""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from mypy_extensions import trait

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo, updated_pod_condition
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD_DELETE
from kubesched.framework.interface import NOMINATION_CLEARED, NOMINATION_KEPT, NominatingInfo
from kubesched.framework.status import Code, Status
from kubesched.scheduler.extender import ExtenderError
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.types import FitError
from kubesched.scheduler.framework.waiting_pods import WaitingPod
from kubesched.scheduler.informers import informed_pod
from kubesched.scheduler.nodesearch import AttemptReport
from kubesched.scheduler.parts import Explanation, SchedulerParts
from kubesched.scheduler.queue import QueuedPodInfo
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.resultstore import PodResults, record_nodes
from kubesched.scheduler.schedule_pod import ScheduleFailure, ScheduleResult


@dataclass(slots=True)
class Failure:
    """A failed attempt as a value. ``unschedulable``/``pending``: the pod's unschedulable and
    pending plugins from now on (``pending`` None: the pod keeps those it had)."""

    status: Status
    unschedulable: set[str]
    pending: set[str] | None = None

    @property
    def message(self) -> str:
        return self.status.message()

    @classmethod
    def error(cls, status: Status) -> Failure:
        """An Error: no plugin to wait on."""
        return cls(status, set(), set())

    @classmethod
    def rejected_by(cls, status: Status) -> Failure:
        """A status from a plugin after the node search (Reserve, Permit, PreBind, Bind): the
        pod waits on that plugin when it rejected the pod."""
        return cls(status, {status.plugin} if status.is_rejected() and status.plugin else set())

    @classmethod
    def no_fit(cls, status: Status, err: FitError) -> Failure:
        """No node fit: the Diagnosis's plugins."""
        diagnosis = err.diagnosis
        return cls(status, set(diagnosis.unschedulable_plugins), set(diagnosis.pending_plugins))


log = logging.getLogger("kubesched.scheduler")
# clearNominatedNode: a failure after the node search (no nodes, an error, anything after assume)
# clears the pod's nomination, in the queue and in its status


@trait
class ScheduleOne(SchedulerParts):
    """``ScheduleOne`` and the cycles it runs; a part of ``Scheduler``, which holds the state
    (``SchedulerParts``)."""

    # -- the scheduling cycle ----------------------------------------------------------------------
    def schedule_one(self) -> bool:
        """Pop one pod and run its scheduling cycle (and binding cycle). False if activeQ is empty.
        Nothing one pod's cycle raises stops the scheduler: the error is logged with the pod and
        counted in ``health``, and the pod goes back to the queue with a SchedulerError, as a
        plugin's Error status sends it (upstream's loop would restart the process)."""
        qp = self.queue.pop()
        if qp is None:
            return False
        if isinstance(qp, QueuedPodGroupInfo):
            self._pod_group_cycle(qp)
            return True
        try:
            self._scheduling_cycle(qp)
        except Exception as exc:
            self._cycle_failed(qp, exc)
        return True

    def _pod_group_cycle(self, group: QueuedPodGroupInfo) -> None:
        """A pod group's cycle (``schedule_one_podgroup``), kept from stopping the scheduler as
        a pod's is: each member still in the cycle goes back with the error."""
        try:
            self._schedule_pod_group(group)
        except Exception as exc:
            for m in group.members:
                self._cycle_failed(m, exc)
            group.failed_at_generation = self.cluster_generation
            try:
                self.queue.add_attempted_pod_group(group, "error")
            except Exception as again:
                self.health.error("scheduler", f"PodGroup {group.key[0]}/{group.key[1]}", again)

    def _cycle_failed(self, qp: QueuedPodInfo, exc: Exception) -> None:
        """A cycle that raised: the pod's assumption undone and the pod requeued, unless its
        binding cycle already owns it (waiting at Permit, or binding)."""
        pod = qp.pod
        self.health.error("scheduler", f"Pod {pod.key}", exc)
        if pod.uid not in self.queue.in_flight or self.waiting_pods.get(pod.uid) is not None:
            return
        try:
            self.cache.forget_pod(pod.uid)
            self._handle_failure(qp, Failure.error(Status.error(f"{type(exc).__name__}: {exc}")), NOMINATION_KEPT)
        except Exception as again:  # the pod waits for its next update event; the loop goes on
            self.health.error("scheduler", f"Pod {pod.key}", again)
            self.queue.done(pod.uid)

    def _scheduling_cycle(self, qp: QueuedPodInfo) -> None:
        started = time.perf_counter()
        qp.attempt_started = started
        self.metrics.start_cycle()
        pod = qp.pod
        fwk = self._framework_for(pod)
        if fwk is None:
            self.queue.done(pod.uid)
            return
        if pod.deleting:
            self.client.record_event(
                "Warning", "FailedScheduling", "Scheduling", pod.obj, f"skip schedule deleting pod: {pod.key}"
            )
            self.queue.done(pod.uid)
            return
        if self.cache.is_assumed(pod.uid):
            self.queue.done(pod.uid)
            return
        self.stats.attempts += 1
        state, explain = self._new_cycle_state(pod)
        result = self._run_algorithm(fwk, state, pod, explain)
        if isinstance(result, ScheduleFailure):
            self._schedule_failed(fwk, state, qp, result, explain)
            self.stats.wall_seconds += time.perf_counter() - started
            return
        self.metrics.algorithm_duration.observe(time.perf_counter() - started)
        if state.results is not None and result.report is not None:
            self._record_nodes(pod, fwk, state, result.report.diagnosis, result.report, explain, result.suggested_host)
        self._prepare_for_binding(fwk, state, qp, result.suggested_host)
        self.stats.wall_seconds += time.perf_counter() - started

    def _schedule_failed(
        self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, failure: ScheduleFailure, explain: bool
    ) -> None:
        """``schedulingCycle`` after ``schedulePod`` placed no pod: PostFilter (preemption) when no
        node fit, then ``handleSchedulingFailure``; none tried when there are no nodes, nothing
        blamed on a plugin for an Error."""
        if failure.fit is not None:
            if state.results is not None:
                self._record_nodes(qp.pod, fwk, state, failure.fit.diagnosis, None, explain)
            self._handle_fit_error(fwk, state, qp, failure.fit)
            return
        self.metrics.algorithm_duration.observe(time.perf_counter() - qp.attempt_started)
        st = failure.failure_status()
        # no plugin to wait on, for no nodes too (ErrNoNodesAvailable): the pod backs off in the
        # error backoff queue and is retried when its backoff is over, not on an event
        failed = Failure.error(st)
        self._handle_failure(qp, failed, NOMINATION_CLEARED, state.results)

    def _new_cycle_state(self, pod: PodInfo, record: bool = True) -> tuple[CycleState, bool]:
        """A cycle's state, recording the pod's results where they are wanted (``explain``, or
        results written on pods), and whether the pod is explained."""
        state = CycleState()
        state.record_plugin_metrics = self.metrics.sampling  # this cycle is sampled (``start_cycle``)
        explain = record and bool(self.explain_keys) and pod.key in self.explain_keys
        if explain or (record and self.write_results):
            state.results = PodResults(node_limit=self.results_node_limit, write=self.write_results)
        return state, explain

    def _run_algorithm(
        self, fwk: Framework, state: CycleState, pod: PodInfo, explain: bool
    ) -> ScheduleResult | ScheduleFailure:
        """``schedulingAlgorithm`` over the cache's nodes in this scheduling cycle."""
        return self.algorithm.schedule_pod(
            fwk,
            state,
            pod,
            self.cache.table,
            self.queue,
            explain=explain,
            cycle=self.queue.scheduling_cycle,
            record=state.results is not None and self.write_results,
        )

    def _prepare_for_binding(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, host: str) -> None:
        """``prepareForBindingCycle`` and the binding cycle's start: assume, Reserve, Permit,
        then bind (or park the pod at Permit)."""
        pod = qp.pod
        assumed = self._assume(pod, host)
        st = fwk.run_reserve(state, assumed, host)
        waits: dict[str, float] = {}
        if st is None:
            st, waits = fwk.run_permit(state, assumed, host)
            if st is not None and st.code == Code.WAIT:
                st = None
        if st is not None:  # Reserve or Permit refused: the assumption undone, the pod requeued
            self._undo_assume(fwk, state, assumed, host)
            self._handle_failure(qp, Failure.rejected_by(st), NOMINATION_CLEARED, state.results)
            return
        if state.pods_to_activate:
            self.queue.activate(state.pods_to_activate)
        if self.nominate_expected and not self._expect_placement(fwk, state, qp, assumed, host, bool(waits)):
            return
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

    def _expect_placement(
        self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str, waits: bool
    ) -> bool:
        """The binding cycle's start under NominatedNodeNameForExpectation (KEP-5278): the
        PreBind plugins' pre-flights; when PreBind or a Permit wait will take time, the pod's
        nominatedNodeName is set to the node, so that other components (the cluster autoscaler)
        see where it is going. False: a pre-flight failed and the attempt is undone."""
        st = fwk.run_pre_bind_pre_flights(state, pod, host)
        if st is not None and (st.code == Code.ERROR or st.is_rejected()):
            self._binding_cycle_failed(fwk, state, qp, pod, host, st)
            return False
        if (st is None or waits) and pod.nominated_node_name != host:
            try:
                self.client.patch_pod_status(pod.namespace, pod.name, None, host)
            except Exception as exc:  # not critical: the binding goes on (upstream logs it)
                log.warning("Failed to update the nominated node name in the binding cycle: pod=%s %s", pod.key, exc)
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
            self._binding_cycle_failed(fwk, state, qp, pod, host, status)
            return
        self._binding_cycle(fwk, state, qp, pod, host)

    def _binding_cycle(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str) -> None:
        self.queue.done(pod.uid)
        # partials of methods rather than nested functions: a closure that refers to itself would
        # keep the whole cycle's state (pod, CycleState, the request's future) until the cyclic
        # collector finds it, a fifth of the scheduler's CPU over HTTP
        done = functools.partial(self._binding_done, fwk, state, qp, pod, host)
        sent = None if any(ext.is_binder() for ext in self.extenders) else fwk.send_bind(state, pod, host)
        if sent is not None:  # PreBind had nothing to do and Bind is one request, now on its way
            self.binding.submit_sent(sent, done)
            return
        self.binding.submit(functools.partial(self._bind, fwk, state, pod, host), done)

    def _bind(self, fwk: Framework, state: CycleState, pod: PodInfo, host: str) -> Status | None:
        """PreBind, then a binder extender or the Bind plugins (on a binding thread)."""
        st = fwk.run_pre_bind(state, pod, host)
        if st is None:
            bound, st = self._extenders_binding(pod, host)
            if not bound:
                st = fwk.run_bind(state, pod, host)
        return st

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
            self._binding_cycle_failed(fwk, state, qp, pod, host, st)
            return
        if log.isEnabledFor(logging.DEBUG):  # upstream logs it at -v=2 once Bind succeeded
            log.debug('"Successfully bound pod to node" pod="%s" node="%s"', pod.key, host)
        rec: PodResults | None = state.results
        if rec is not None and rec.write and not rec.written:  # bound by another binder: a patch of its own
            self._write_results(pod, rec)
        self.cache.finish_binding(pod.uid)
        try:
            self._bound(fwk, state, qp, pod, host)
        except Exception as exc:  # events, metrics, PostBind, observers: never the scheduler's end
            self.health.error("scheduler", f"Pod {pod.key}", exc)

    def _bound(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str) -> None:
        self.metrics.pod_scheduled(fwk.profile_name, time.perf_counter() - qp.attempt_started)
        if qp.initial_attempt_timestamp is not None:
            self.metrics.pod_bound(qp.attempts, self.clock.now() - qp.initial_attempt_timestamp)
        if self.last_message:
            self.last_message.pop(pod.key, None)
        self.client.record_event(
            "Normal", "Scheduled", "Binding", pod.obj, f"Successfully assigned {pod.key} to {host}"
        )
        fwk.run_post_bind(state, pod, host)

    def _undo_assume(self, fwk: Framework, state: CycleState, pod: PodInfo, host: str) -> None:
        """The assumption undone: Unreserve, then the cache forgets the assumed pod."""
        fwk.run_unreserve(state, pod, host)
        self.cache.forget_pod(pod.uid)

    def _binding_cycle_failed(
        self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, pod: PodInfo, host: str, st: Status
    ) -> None:
        """``handleBindingCycleError`` (PreBind's pre-flights, Permit's wait, PreBind, Bind): the
        assumption undone; its node freed is an AssignedPodDelete for the waiting pods, then the
        failure handled with the nomination cleared. A rejection moves the others after the pod is
        requeued and never the pod itself (upstream defers it: as an in-flight event it would send
        the pod to backoffQ); an Error moves them first."""
        self._undo_assume(fwk, state, pod, host)
        failure = Failure.rejected_by(st)
        if st.is_rejected():
            self._handle_failure(qp, failure, NOMINATION_CLEARED, state.results)
            self.queue.move_all(ASSIGNED_POD_DELETE, pod, None, pre_check=lambda q: q.uid != pod.uid)
            return
        self.queue.move_all(ASSIGNED_POD_DELETE, pod, None)
        self._handle_failure(qp, failure, NOMINATION_CLEARED, state.results)

    def _handle_fit_error(self, fwk: Framework, state: CycleState, qp: QueuedPodInfo, err: FitError) -> None:
        nominating = NOMINATION_KEPT
        nominated: str | None = None
        if fwk.post_filter:
            result, st = fwk.run_post_filter(state, qp.pod, err.diagnosis)
            if st.reasons:
                err.diagnosis.post_filter_msg = st.message()
            if result is not None:
                nominating, nominated = result.nominating_info, result.nominated_node_name
            rec: PodResults | None = state.results
            if rec is not None:
                names = err.diagnosis.node_names
                rows = np.flatnonzero(err.diagnosis.codes != 0)  # the explicit statuses, not the absent ones
                explicit = [names[r] for r in rows.tolist()] if len(rows) <= rec.node_limit else []
                if nominated and nominated not in explicit:
                    explicit.append(nominated)
                rec.post_filter_result(st.plugin or "", nominated or "", explicit)
        # schedulingAlgorithm's deferred observation: filters, scores and PostFilter, a failure too
        self.metrics.algorithm_duration.observe(time.perf_counter() - qp.attempt_started)
        message = str(err)  # counts every node's reasons: formatted once
        failed = Failure.no_fit(Status(Code.UNSCHEDULABLE, (message,)), err)
        self._handle_failure(qp, failed, nominating, state.results)

    def _write_results(self, pod: PodInfo, rec: PodResults, current: dict[str, Any] | None = None) -> None:
        """The simulator's storereflector: the attempt's results and history in one patch."""
        obj = current if current is not None else pod.obj
        try:
            self.client.annotate_pod(pod.namespace, pod.name, rec.pod_annotations(obj["metadata"].get("annotations")))
        except ApiError as exc:
            log.error('"Error writing the scheduling results" pod="%s" err="%s"', pod.key, exc.message)
        rec.written = True

    def _handle_failure(
        self,
        qp: QueuedPodInfo,
        failure: Failure,
        nominating: NominatingInfo,
        results: PodResults | None = None,
    ) -> None:
        """``handleSchedulingFailure``: the plugins the pod waits on taken from ``failure``,
        requeue, record FailedScheduling, patch PodScheduled=False and the nomination as
        ``nominating`` says."""
        pod = qp.pod
        qp.unschedulable_plugins = failure.unschedulable
        if failure.pending is not None:
            qp.pending_plugins = failure.pending
        message = failure.message
        rejected = failure.status.is_rejected()
        seconds = time.perf_counter() - qp.attempt_started
        if rejected:
            self.metrics.pod_unschedulable(pod.scheduler_name, seconds)
        else:
            self.metrics.pod_schedule_error(pod.scheduler_name, seconds)
        reason = "Unschedulable" if rejected else "SchedulerError"
        try:
            current = self.client.get("Pod", pod.namespace, pod.name)
        except ApiError:
            current = None
        if current is None or not informed_pod(current):  # gone from the pod informer: not requeued
            self.queue.done(pod.uid)
            return
        current_info = self._parse_pod(current)
        if current_info is None or current_info.uid != pod.uid or current_info.node_name:
            self.queue.done(pod.uid)
            return
        qp.pod = current_info
        self.queue.add_unschedulable(qp, generation=self.cluster_generation)
        if nominating.overrides() and nominating.node:
            self.queue.add_nominated(current_info, nominating.node)
        elif nominating.overrides():
            self.queue.delete_nominated(current_info.uid)
        self.last_message[pod.key] = message
        self.client.record_event("Warning", "FailedScheduling", "Scheduling", current, message)
        if results is not None and results.write:
            self._write_results(current_info, results, current)
        changed = nominating.overrides() and nominating.node != current_info.nominated_node_name
        patch_nominated = nominating.node if changed else None
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

    def _record_nodes(
        self,
        pod: PodInfo,
        fwk: Framework,
        state: CycleState,
        diagnosis: Any,
        info: AttemptReport | None,
        explain: bool,
        selected: str | None = None,
    ) -> None:
        """The attempt's Filter verdicts and scores into its PodResults, and ``--explain``'s
        history of attempts."""
        rec: PodResults = state.results
        nodes = self.cache.table
        hint = info.hint if info is not None else None
        total: dict[str, int] = {}
        if hint is not None:
            rec.filter[hint] = dict.fromkeys((p for p in fwk.filter_names if p not in state.skip_filter), "passed")
        elif info is not None and info.rows is not None and info.total is not None:
            rows, raw, norm = info.rows, info.raw, info.scores
            scores = {p: (raw[p], norm[p], fwk.weights[p]) for p in norm}
            picked = nodes.index.get(selected) if selected else None
            record_nodes(
                rec, nodes.names, fwk.filter_names, state.skip_filter, diagnosis, rows, scores, info.total, picked
            )
            if explain:
                total = {n: int(t) for n, t in zip((nodes.names[r] for r in rows.tolist()), info.total, strict=True)}
        else:
            feasible = info.feasible if info is not None and info.feasible is not None else np.zeros(0, np.int64)
            record_nodes(rec, nodes.names, fwk.filter_names, state.skip_filter, diagnosis, feasible, None, None)
        if explain:
            history = self.explanations.setdefault(pod.key, [])
            history.append(Explanation(rec, len(history) + 1, self.clock.now(), total, hint))


def _copy_pod(pod: PodInfo, host: str) -> PodInfo:
    """The assumed copy: same pod with spec.nodeName set."""
    return pod.evolve(pod.obj, host, pod.nominated_node_name)
