"""DefaultPreemption (PostFilter, PreEnqueue): when no node fits, evict lower-priority pods
somewhere so the pod fits later (``plugins/defaultpreemption/default_preemption.go``); the
work is the evaluator's (``kubesched.scheduler.preemption``)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interface import PostFilterPlugin, PostFilterResult, PreEnqueuePlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.handle import internal
from kubesched.scheduler.preemption.evaluator import Evaluator, PreemptionArgs
from kubesched.scheduler.preemption.podgroup import PodGroupEvaluator

if TYPE_CHECKING:
    from kubesched.scheduler.framework.runtime import Framework

WAITING = "waiting for the preemption for this pod to be finished"


def parse_preemption_args(raw: Any) -> PreemptionArgs:
    """DefaultPreemptionArgs with upstream's defaults and ``ValidateDefaultPreemptionArgs``."""
    if raw is None:
        return PreemptionArgs()
    if not isinstance(raw, Mapping):
        raise InputError("expected an object", field="args")
    pct = raw.get("minCandidateNodesPercentage", 10)
    absolute = raw.get("minCandidateNodesAbsolute", 100)
    if not isinstance(pct, int) or not 0 <= pct <= 100:
        raise InputError(f"Invalid value: {pct!r}: not in valid range [0, 100]", field="minCandidateNodesPercentage")
    if not isinstance(absolute, int) or absolute < 0:
        raise InputError(f"Invalid value: {absolute!r}: not in valid range [0, inf)", field="minCandidateNodesAbsolute")
    if pct == 0 and absolute == 0:
        raise InputError(
            "Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
            field="minCandidateNodesPercentage",
        )
    return PreemptionArgs(pct, absolute)


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin):
    name = "DefaultPreemption"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.args = parse_preemption_args(args)
        self.preempting: set[str] = set()  # preemptors whose victims are still being evicted
        # preemptor -> its last victim, evicted after the cycle: the pod is gated until the cache
        # holds that victim terminating or gone (``isRunningPreemption``'s lastVictimsPendingPreemption)
        self.last_victims: dict[str, str] = {}
        self._evaluator: Evaluator | None = None
        self._group_evaluator: PodGroupEvaluator | None = None

    def set_framework(self, fwk: Framework) -> None:
        rng = self.handle.rng if self.handle is not None else random.Random(0)
        self._evaluator = Evaluator(fwk, internal(self.handle), self.args, rng)
        self._group_evaluator = PodGroupEvaluator(fwk, internal(self.handle))

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.uid in self.preempting:
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING)
        victim_uid = self.last_victims.get(pod.uid)
        if victim_uid is not None:
            cached = internal(self.handle).cache.pod(victim_uid)
            if cached is not None and not cached[0].deleting:
                return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING)
            del self.last_victims[pod.uid]
        return None

    def _evict_last_after_cycle(self, pod: PodInfo, victim: PodInfo, node: str) -> None:
        """``prepareCandidateAsync``'s goroutine deletes the last victim last, after the cycle has
        written the preemptor's nomination (whose update, if it requeues the pod, finds it gated
        by PreEnqueue): here, on the clock as soon as the cycle is over. A failed eviction
        activates the pod, as the goroutine does on an error."""
        handle = internal(self.handle)
        evaluator = self._evaluator
        assert evaluator is not None
        self.last_victims[pod.uid] = victim.uid

        def evict() -> None:
            if not evaluator.preempt_pod(victim, pod, node):
                self.last_victims.pop(pod.uid, None)
                queue = handle.nominator
                if queue is not None:
                    queue.activate([pod.uid])

        handle.clock.call_at(handle.clock.now(), evict)

    def pod_group_post_filter(self, group: Any, reschedule: Any) -> tuple[Any, Status]:
        """``PodGroupPostFilter`` (GenericWorkload): preemption for a pod group that found no
        placement, the whole cluster its domain (``framework/preemption/podgrouppreemption.go``)."""
        result, st = self._pod_group_preempt(group, reschedule)
        if st.reasons:
            return result, Status(st.code, (f"pod group preemption: {st.message()}",))
        return result, st

    def _pod_group_preempt(self, group: Any, reschedule: Any) -> tuple[Any, Status]:
        if self._group_evaluator is None:
            return None, Status.error("DefaultPreemption is not attached to a framework")
        return self._group_evaluator.preempt(group, reschedule)

    def post_filter(
        self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status | None]:
        if self._evaluator is None:
            return None, Status.error("DefaultPreemption is not attached to a framework")
        self.preempting.add(pod.uid)
        try:
            result, st = self._evaluator.preempt(state, pod, diagnosis)
        finally:
            self.preempting.discard(pod.uid)
        last = self._evaluator.last_victim
        if last is not None:
            self._evict_last_after_cycle(pod, last, (result.nominated_node_name or "") if result else "")
        if st.reasons:
            return result, Status(st.code, (f"preemption: {st.message()}",))
        return result, st
