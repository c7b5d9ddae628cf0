"""Preemption's actuation (``framework/preemption/executor.go``): once a candidate is chosen, a
goroutine clears the nominations of lower-priority pods on its node, evicts the victims and the
last one last; PreEnqueue holds the preemptor while it runs (``isRunningPreemption``).

The goroutine starts after the cycle, so the preemptor's nomination is written first, and runs
where the scheduler runs its binding cycles: on their threads against an API server (the cycle
after it does not wait for the patches and deletions, as upstream's does not), inline otherwise."""

from __future__ import annotations

import logging
from typing import Any

from kubesched.api.errors import ApiError, NotFound
from kubesched.api.pod import PodInfo, updated_pod_condition
from kubesched.framework.status import Status
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.preemption.candidates import Candidate

log = logging.getLogger("kubesched.scheduler")


def evict_victim(client: Any, victim: PodInfo, scheduler_name: str, preemptor_type: str) -> bool:
    """``PreemptPod``'s API part: DisruptionTarget (PreemptionByScheduler), then the deletion
    (the victim's UID as precondition). False when the victim is already gone; a failed call
    raises its ApiError."""
    condition = updated_pod_condition(
        victim.obj,
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{scheduler_name}: preempting to accommodate a higher priority {preemptor_type}",
        },
    )
    try:
        if condition is not None:
            client.patch_pod_status(victim.namespace, victim.name, condition, None)
        client.delete("Pod", victim.namespace, victim.name, uid=victim.uid)
    except NotFound:
        return False
    return True


class Executor:
    """``Executor``: the preemptors whose goroutine runs and the last victim each waits for."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self.preempting: set[str] = set()  # ``preempting``: preemptors whose goroutine runs
        # preemptor -> its last victim (``lastVictimsPendingPreemption``); kept after the goroutine
        # until the cache holds that victim deleting, so an update of the preemptor that arrives
        # before the victim's deletion does (as an API server usually orders them) finds it held
        self.last_victims: dict[str, str] = {}

    def is_running(self, uid: str) -> bool:
        """``isRunningPreemption``: the goroutine has not reached its last victim, or the cache
        does not yet hold that victim deleting or gone."""
        victim_uid = self.last_victims.get(uid)
        if victim_uid is None:
            return uid in self.preempting
        cached = self.handle.cache.pod(victim_uid)
        if cached is not None and not cached[0].deleting:
            return True
        if uid not in self.preempting:
            self.last_victims.pop(uid, None)
        return False

    def prepare_async(self, c: Candidate, pod: PodInfo) -> None:
        """``prepareCandidateAsync``: nothing when every victim is already being deleted (no
        call, no event, no nomination cleared); else the goroutine, started after the cycle. A
        victim waiting at Permit is rejected in memory on the scheduler's thread as the goroutine
        starts (a waiting pod is the scheduler's state); the API calls run in the goroutine."""
        to_delete = [v for v in c.victims if not v.deleting]
        if not to_delete:
            return
        nominator = self.handle.nominator
        # getLowerPriorityNominatedPods, as the cycle leaves the nominator
        lower = [
            other
            for other in (nominator.nominated_pods_for_node(c.node) if nominator is not None else ())
            if other.priority < pod.priority and other.uid != pod.uid
        ]
        self.preempting.add(pod.uid)
        in_memory: set[str] = set()

        def start() -> None:
            for victim in to_delete:
                if self._preempt_in_memory(victim, pod, c.node):
                    in_memory.add(victim.uid)

        def goroutine() -> Status | None:
            return self._run(c.node, pod, to_delete, in_memory, lower)

        def done(status: Status | None) -> None:
            # the goroutine's deferred Activate: an API call failed, or the last victim was only
            # rejected in memory (no deletion event will come for it)
            if status is not None and nominator is not None:
                nominator.activate([pod.uid])

        self.handle.go(goroutine, done, start)

    def _run(
        self, node: str, pod: PodInfo, to_delete: list[PodInfo], in_memory: set[str], lower: list[PodInfo]
    ) -> Status | None:
        client = self.handle.client
        failed = False
        # clearNominatedNodeName: one status patch per pod; the nominator forgets each nomination
        # when the informer delivers its update, so a pod retried on its own update still sees the
        # others' nominations, as upstream's does
        for other in lower:
            try:
                client.patch_pod_status(other.namespace, other.name, None, "")
            except ApiError as err:
                log.warning("cannot clear the nomination of %s: %s", other.key, err)
                failed = True
        last = to_delete[-1]
        try:
            for victim in to_delete[:-1]:
                if victim.uid not in in_memory:
                    self._evict(victim, pod, node)
            self.last_victims[pod.uid] = last.uid
            if last.uid not in in_memory:
                try:
                    self._evict(last, pod, node)
                except ApiError:
                    self.last_victims.pop(pod.uid, None)
                    raise
        except ApiError as err:  # the last victim is not tried when another failed
            log.warning("preemption for %s on node %s failed: %s", pod.key, node, err)
            failed = True
        finally:
            self.preempting.discard(pod.uid)
        if failed:
            return Status.error(f"preemption for pod {pod.key} on node {node} failed")
        if last.uid in in_memory:
            return Status.error("the last victim was preempted in memory")
        return None

    def _preempt_in_memory(self, victim: PodInfo, pod: PodInfo, node: str) -> bool:
        """``PreemptPod`` for a victim waiting at Permit: rejected, ``Preempted`` recorded."""
        waiting = self.handle.waiting_pods.get(victim.uid)
        if waiting is None or waiting.done:
            return False
        waiting.reject("DefaultPreemption", "preempted")
        message = f"Preempted by pod {pod.uid} on node {node} (in kube-scheduler memory)."
        self.handle.client.record_event("Normal", "Preempted", "Preempting", victim.obj, message, pod.obj)
        return True

    def _evict(self, victim: PodInfo, pod: PodInfo, node: str) -> None:
        """``PreemptPod`` through the API: evicted, and ``Preempted`` recorded unless it was
        already gone; a failed call raises its ApiError, before any event."""
        if evict_victim(self.handle.client, victim, pod.scheduler_name, "pod"):
            # related: the preemptor (executor.go's Eventf(victim, preemptor, ...))
            message = f"Preempted by pod {pod.uid} on node {node}"
            self.handle.client.record_event("Normal", "Preempted", "Preempting", victim.obj, message, pod.obj)
