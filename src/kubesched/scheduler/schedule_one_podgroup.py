"""The pod group scheduling cycle (``pkg/scheduler/schedule_one_podgroup.go``, GenericWorkload):
a PodGroup popped from the queue has each of its queued pods scheduled in order on a snapshot
that keeps the earlier ones placed (assumed and reserved), asking PlacementFeasible
(GangScheduling) after each whether ``minCount`` is still reachable. The placements are then
undone; only when the group as a whole succeeded do its placed pods go on to Reserve, Permit and
binding for real, the others returning to the queue with the group's verdict. The PodGroup's
``PodGroupInitiallyScheduled`` condition records the outcome."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mypy_extensions import trait

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.clock import rfc3339
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import NOMINATION_CLEARED, NominatingInfo
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.gangscheduling import PlacementProgress
from kubesched.scheduler.podgroups import PodGroupState
from kubesched.scheduler.queue import QueuedPodInfo
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.schedule_one import Failure, ScheduleOne
from kubesched.scheduler.schedule_pod import ScheduleFailure

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework

log = logging.getLogger("kubesched.scheduler")
ERR_POD_GROUP_UNSCHEDULABLE = "pod group is unschedulable"  # errPodGroupUnschedulable
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


@dataclass(slots=True)
class PodOutcome:
    """``algorithmResult``: one pod's attempt within the group's cycle."""

    qp: QueuedPodInfo
    state: CycleState
    host: str = ""
    status: Status | None = None  # None: placed
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)


@dataclass(slots=True)
class GroupOutcome:
    """``podGroupAlgorithmResult``: the group's verdict and each attempted pod's outcome."""

    status: Status | None
    pods: list[PodOutcome]
    any_scheduled: bool = False
    # PodGroupPostFilter found a placement by preemption: the pods wait for it, nominated
    waiting_on_preemption: bool = False
    nominations: dict[str, str] = field(default_factory=dict)
    # the verdict the pods not attempted keep: the group's before PodGroupPostFilter added to it
    # (``completePodGroupAlgorithmResult`` clones it first)
    unattempted: Status | None = None


def _results(outcome: PodOutcome | None) -> Any:
    """The attempt's recorded results (PodResults), if any were recorded."""
    return None if outcome is None else outcome.state.results


def _unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, (ERR_POD_GROUP_UNSCHEDULABLE, *reasons))


@trait
class ScheduleOnePodGroup(ScheduleOne):
    """``scheduleOnePodGroup`` and its cycle; a part of ``Scheduler``, on ``ScheduleOne``'s
    helpers."""

    def _schedule_pod_group(self, group: QueuedPodGroupInfo) -> None:
        started = time.perf_counter()
        for m in group.members:
            m.attempt_started = started
        groups = self.cache.pod_groups
        state = groups.get(group.key) if groups is not None else None
        if state is None or state.pod_group is None:  # reconcilePodGroupWithSnapshot
            reason = f'podgroups.scheduling.k8s.io "{group.name}" not found'
            self._group_failed_before(group, Status.error(reason), update_condition=False)
            return
        group.pod_group = state.pod_group
        problem = self._validate_pod_group(group, state)
        if problem:
            self._group_failed_before(group, Status.error(problem))
            return
        fwk = self.profiles[group.members[0].pod.scheduler_name]
        kept = []
        for m in group.members:  # skipPodGroupPodSchedule
            if m.pod.deleting:
                self.client.record_event(
                    "Warning", "FailedScheduling", "Scheduling", m.pod.obj, f"skip schedule deleting pod: {m.pod.key}"
                )
                self.queue.done(m.uid)
            elif self.cache.is_assumed(m.uid):
                self.queue.done(m.uid)
            else:
                kept.append(m)
        group.members = kept
        if not kept:
            self.queue.add_attempted_pod_group(group, "success")
            return
        self.stats.attempts += len(kept)
        outcome = self._pod_group_algorithm(fwk, group, state)
        if outcome.status is None and not outcome.any_scheduled:
            outcome.status = _unschedulable()
        outcome.unattempted = outcome.status
        if outcome.status is not None and outcome.status.code == Code.UNSCHEDULABLE:
            self._pod_group_post_filter(fwk, group, state, outcome)
        self._submit_pod_group(fwk, group, outcome, started)

    def _pod_group_post_filter(
        self, fwk: Framework, group: QueuedPodGroupInfo, state: PodGroupState, outcome: GroupOutcome
    ) -> None:
        """The PodGroupPostFilter plugins (preemption for the group); their verdict is added to
        the group's (``applyPodGroupPostFilterResult``), an error replaces it."""

        # bound methods, not closures: compiled, a closure and its environment hold each other
        reschedule = functools.partial(self._pod_group_algorithm, fwk, group, state, record=False)
        result, st = fwk.run_pod_group_post_filter(group, reschedule)
        assert outcome.status is not None
        if st.code == Code.SUCCESS:
            outcome.waiting_on_preemption = True
            outcome.nominations = dict(getattr(result, "nominations", None) or {})
        if st.code == Code.ERROR:
            outcome.status = st
        else:
            outcome.status = Status(outcome.status.code, (*outcome.status.reasons, st.message()), outcome.status.plugin)

    def _validate_pod_group(self, group: QueuedPodGroupInfo, state: PodGroupState) -> str:
        """``validatePodGroup``: one scheduler name, the group's priority and one preemption
        policy across its pods, queued and scheduled; a profile for that scheduler name."""
        scheduler_name = group.members[0].pod.scheduler_name
        priority = group.priority
        policy = ""
        for pod in [m.pod for m in group.members] + state.scheduled_pods():
            if pod.scheduler_name != scheduler_name:
                return (
                    "all pods in a single pod group should have the same .spec.schedulerName set, "
                    f'got: "{pod.scheduler_name}" and "{scheduler_name}"'
                )
            if pod.priority != priority:
                return (
                    "all pods in a single pod group should have the same priority as the pod group's priority, "
                    f"got {pod.priority} and {priority}"
                )
            if not policy:
                policy = pod.preemption_policy
            elif pod.preemption_policy != policy:
                return (
                    "all pods in a single pod group should have the same preemption policy, "
                    f"got {pod.preemption_policy} and {policy}"
                )
        if scheduler_name not in self.profiles:
            return f'profile not found for scheduler name "{scheduler_name}"'
        return ""

    def _pod_group_algorithm(
        self, fwk: Framework, group: QueuedPodGroupInfo, state: PodGroupState, record: bool = True
    ) -> GroupOutcome:
        """``podGroupSchedulingDefaultAlgorithm``: the pods in order, each placed on the cluster
        as the earlier ones left it; every placement undone at the end (``revertFns``)."""
        outcome = GroupOutcome(_unschedulable(), [])
        reverts: list[Callable[[], None]] = []
        progress = PlacementProgress(len(state.unscheduled), state.scheduled_pods_count())
        st = fwk.run_placement_feasible(group.pod_group, progress)
        try:
            if st is not None and st.code == Code.ERROR:
                outcome.status = Status.error(f"failed to evaluate placement feasibility: {st.message()}")
                return outcome
            outcome.status = st
            if st is not None and st.code == Code.UNSCHEDULABLE:
                outcome.status = _unschedulable(*st.reasons)
                return outcome
            any_scheduled = False
            for m in group.members:
                pod_outcome, revert = self._pod_group_pod(fwk, m, record)
                outcome.pods.append(pod_outcome)
                if revert is not None:
                    reverts.append(revert)
                pst = pod_outcome.status
                if pst is not None and not pst.is_rejected():
                    outcome.status = Status.error(f"failed to schedule other pod from a pod group: {pst.message()}")
                    break
                placed = pst is None
                progress = PlacementProgress(progress.remaining - 1, progress.scheduled + placed)
                st = fwk.run_placement_feasible(group.pod_group, progress)
                if st is not None and st.code == Code.ERROR:
                    outcome.status = Status.error(f"failed to evaluate placement feasibility: {st.message()}")
                    break
                outcome.status = st
                if st is not None and st.code == Code.UNSCHEDULABLE:
                    break
                any_scheduled = any_scheduled or placed
            if outcome.status is not None and outcome.status.code == Code.WAIT:
                outcome.status = _unschedulable(*outcome.status.reasons)
            outcome.any_scheduled = any_scheduled and (outcome.status is None)
            return outcome
        finally:
            for revert in reversed(reverts):
                revert()

    def _pod_group_pod(
        self, fwk: Framework, qp: QueuedPodInfo, record: bool = True
    ) -> tuple[PodOutcome, Callable[[], None] | None]:
        """``podGroupPodSchedulingAlgorithm``: one pod's Filter and Score (no PostFilter: the
        group's preemption comes after the cycle), then assume and Reserve, with their undoing.
        Its results are recorded (``explain``, the results on the pod) as a pod's cycle's are."""
        pod = qp.pod
        state, explain = self._new_cycle_state(pod, record)
        result = self._run_algorithm(fwk, state, pod, explain)
        if isinstance(result, ScheduleFailure):
            out = PodOutcome(qp, state, status=result.failure_status())
            if result.fit is not None:
                if state.results is not None:
                    self._record_nodes(pod, fwk, state, result.fit.diagnosis, None, explain)
                out.unschedulable_plugins = set(result.fit.diagnosis.unschedulable_plugins)
                out.pending_plugins = set(result.fit.diagnosis.pending_plugins)
            return out, None
        host = result.suggested_host
        if state.results is not None and result.report is not None:
            self._record_nodes(pod, fwk, state, result.report.diagnosis, result.report, explain, host)
        assumed = self._assume(pod, host)
        st = fwk.run_reserve(state, assumed, host)
        if st is not None:
            fwk.run_unreserve(state, assumed, host)
            self._forget(pod)
            return PodOutcome(qp, state, status=st), None

        return PodOutcome(qp, state, host), functools.partial(self._revert, fwk, state, assumed, pod, host)

    def _revert(self, fwk: Framework, state: CycleState, assumed: PodInfo, pod: PodInfo, host: str) -> None:
        """A placed pod of a group that failed: Unreserve, and the assumption forgotten."""
        fwk.run_unreserve(state, assumed, host)
        self._forget(pod)

    def _forget(self, pod: PodInfo) -> None:
        """``unreserveAndForget`` in a pod group cycle: the assumption goes, and the nomination
        the assumption removed comes back."""
        self.cache.forget_pod(pod.uid)
        if pod.nominated_node_name:
            self.queue.add_nominated(pod, pod.nominated_node_name)

    def _submit_pod_group(
        self, fwk: Framework, group: QueuedPodGroupInfo, outcome: GroupOutcome, started: float
    ) -> None:
        """``submitPodGroupAlgorithmResult``: the placed pods to binding when the group
        succeeded, every other pod back to the queue with its own or the group's verdict."""
        status = outcome.status
        attempted = {o.qp.uid: o for o in outcome.pods}
        for qp in group.members:
            pod_outcome = attempted.get(qp.uid)
            pst = pod_outcome.status if pod_outcome is not None else outcome.unattempted
            if status is not None and status.code == Code.ERROR:
                st = pst if pst is not None and pst.code == Code.ERROR else status
                self._handle_failure(qp, Failure.error(st), NOMINATION_CLEARED, _results(pod_outcome))
            elif pod_outcome is not None and pst is None:
                if status is None:
                    qp.unschedulable_plugins, qp.pending_plugins = set(), set()
                    self._prepare_for_binding(fwk, pod_outcome.state, qp, pod_outcome.host)
                elif outcome.waiting_on_preemption:  # back to wait for the victims to go
                    nominated = outcome.nominations.get(qp.uid)
                    self._handle_failure(
                        qp, Failure(status, set(), set()), NominatingInfo.of(nominated), _results(pod_outcome)
                    )
                else:
                    failed = Failure(_unschedulable(status.message()), set(), set())
                    self._handle_failure(qp, failed, NOMINATION_CLEARED, _results(pod_outcome))
            else:
                st = pst if pst is not None else _unschedulable()
                if pod_outcome is not None:
                    failed = Failure(st, pod_outcome.unschedulable_plugins, pod_outcome.pending_plugins)
                else:
                    failed = Failure(st, set(), set())
                self._handle_failure(
                    qp, failed, NominatingInfo.of(outcome.nominations.get(qp.uid)), _results(pod_outcome)
                )
        seconds = time.perf_counter() - started
        if status is None:
            self._update_pod_group_condition(group, "True", "Scheduled", "")
            self.metrics.pod_group_attempt("scheduled", fwk.profile_name, seconds)
            code = "success"
        elif status.is_rejected():
            self._update_pod_group_condition(group, "False", "Unschedulable", status.message())
            result = "waiting_on_preemption" if outcome.waiting_on_preemption else "unschedulable"
            self.metrics.pod_group_attempt(result, fwk.profile_name, seconds)
            code = "unschedulable"
        else:
            self._update_pod_group_condition(group, "False", "SchedulerError", status.message())
            self.metrics.pod_group_attempt("error", fwk.profile_name, seconds)
            code = "error"
        group.failed_at_generation = self.cluster_generation
        self.queue.add_attempted_pod_group(group, code)

    def _group_failed_before(self, group: QueuedPodGroupInfo, st: Status, *, update_condition: bool = True) -> None:
        """``handlePodGroupFailureBeforeScheduling``: every pod back with the error."""
        for qp in group.members:
            if qp.pod.scheduler_name not in self.profiles:
                self.queue.done(qp.uid)
                continue
            self._handle_failure(qp, Failure.error(st), NOMINATION_CLEARED)
        if update_condition:
            self._update_pod_group_condition(group, "False", "SchedulerError", st.message())
        group.failed_at_generation = self.cluster_generation
        self.queue.add_attempted_pod_group(group, "error")

    def _update_pod_group_condition(self, group: QueuedPodGroupInfo, status: str, reason: str, message: str) -> None:
        """``updatePodGroupCondition``: PodGroupInitiallyScheduled set (never back from True),
        written only when it changed (``apimeta.SetStatusCondition``)."""
        obj = group.pod_group
        conditions = list((obj.get("status") or {}).get("conditions") or [])
        existing = next((c for c in conditions if c.get("type") == INITIALLY_SCHEDULED), None)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return
        generation = int((obj.get("metadata") or {}).get("generation") or 0)
        condition: dict[str, Any] = {"type": INITIALLY_SCHEDULED, "status": status}
        if generation:  # omitempty
            condition["observedGeneration"] = generation
        condition.update(lastTransitionTime=rfc3339(self.clock.now()), reason=reason, message=message)
        if existing is not None:
            if all(existing.get(k) == condition.get(k) for k in ("status", "reason", "message", "observedGeneration")):
                return
            if existing.get("status") == status:
                condition["lastTransitionTime"] = existing.get("lastTransitionTime") or condition["lastTransitionTime"]
        conditions = [c for c in conditions if c.get("type") != INITIALLY_SCHEDULED] + [condition]
        meta = obj.get("metadata") or {}
        try:
            self.client.patch_pod_group_status(
                meta.get("namespace") or "default", meta.get("name") or "", {"conditions": conditions}
            )
        except ApiError as exc:
            log.error('"Failed to update PodGroup status" podGroup="%s/%s" err="%s"', *group.key, exc.message)
