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
from kubesched.scheduler.preemption.executor import Executor
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
        self.executor: Executor | None = None  # preemption's goroutines, once attached
        self._evaluator: Evaluator | None = None
        self._group_evaluator: PodGroupEvaluator | None = None

    def set_framework(self, fwk: Framework) -> None:
        rng = self.handle.rng if self.handle is not None else random.Random(0)
        self.executor = Executor(internal(self.handle))
        self._evaluator = Evaluator(fwk, internal(self.handle), self.args, rng, self.executor)
        self._group_evaluator = PodGroupEvaluator(fwk, internal(self.handle))

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if self.executor is not None and self.executor.is_running(pod.uid):
            return Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, WAITING)
        return None

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
        result, st = self._evaluator.preempt(state, pod, diagnosis)
        if st.reasons:
            return result, Status(st.code, (f"preemption: {st.message()}",))
        return result, st
