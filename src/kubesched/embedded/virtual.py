"""The embedded cluster's virtual-time driver: run the scheduler (and the loops beside it) until
quiescent: activeQ and backoffQ empty, nothing waiting at Permit or on a timer, and every
unschedulable pod last tried against the current cluster state (so the 5-minute flush would only
repeat the same verdict). Backoff and the flush cost virtual time only."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from kubesched.clock import VirtualClock
from kubesched.cluster.loader import warn
from kubesched.scheduler.queue import UNSCHEDULABLE_FLUSH_PERIOD
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.scheduler import Scheduler

MAX_VIRTUAL_SECONDS = 7 * 24 * 3600.0


def next_flush_time(sched: Scheduler) -> float | None:
    """The flush tick that would move a pod tried against an older cluster state, if any."""
    best: float | None = None
    for qp in sched.unschedulable_pods():
        if qp.failed_at_generation >= sched.cluster_generation:
            continue
        due = qp.timestamp + sched.max_in_unschedulable
        tick = float((math.floor(due / UNSCHEDULABLE_FLUSH_PERIOD) + 1) * UNSCHEDULABLE_FLUSH_PERIOD)
        best = tick if best is None else min(best, tick)
    return best


def useful_retry(sched: Scheduler) -> Callable[[Any], bool]:
    """Whether an entity's retry after its backoff can turn out otherwise: a pod group (which
    upstream retries after every backoff, forever) whose last cycle saw the cluster as it is now
    would fail again the same way, and so would any pod while the cluster has no node (upstream
    retries a pod that found no nodes after each backoff, forever: ``ErrNoNodesAvailable`` blames
    no plugin), so the simulation does not wait for them."""
    if sched.node_table().n == 0:
        return lambda entity: False

    def useful(entity: Any) -> bool:
        return not isinstance(entity, QueuedPodGroupInfo) or entity.failed_at_generation < sched.cluster_generation

    return useful


Progress = Callable[[Scheduler], None]
PROGRESS_EVERY = 256  # scheduling cycles between two progress reports
# Upstream retries a pod whose attempt ended in an error (an unreachable extender, a failed API
# call) with backoff, forever. A simulation stops once this many attempts in a row erred with no
# other change: nothing on the virtual clock can make the next one different.
MAX_ERROR_STREAK = 100


def run_to_quiescence(
    sched: Scheduler,
    clock: VirtualClock,
    limit: float = MAX_VIRTUAL_SECONDS,
    controllers: list[Any] | None = None,
    progress: Progress | None = None,
) -> None:
    """Drive a started scheduler (and ``controllers``, synced before each step) until quiescent
    or until virtual time passes ``limit``."""
    cycles = 0
    stuck = 0  # consecutive attempts that ended in an error while nothing else changed
    while True:
        for controller in controllers or ():
            controller.sync()
        before = (sched.stats.errors, sched.stats.scheduled, sched.stats.unschedulable, sched.cluster_generation)
        if sched.round(cycles=1):
            after = (sched.stats.errors, sched.stats.scheduled, sched.stats.unschedulable, sched.cluster_generation)
            stuck = stuck + 1 if after[0] > before[0] and after[1:] == before[1:] else 0
            if stuck >= max(MAX_ERROR_STREAK, 10 * sched.pending()):
                warn(
                    f"stopped scheduling at {clock.now():.0f}s of virtual time: the last {stuck} attempts all ended "
                    "in errors and nothing changed (the pods' messages say why)"
                )
                return
            cycles += 1
            if progress is not None and cycles % PROGRESS_EVERY == 0:
                progress(sched)
            continue
        candidates = [
            t
            for t in (clock.next_timer(), sched.next_backoff_expiry(useful_retry(sched)), next_flush_time(sched))
            if t is not None
        ]
        if not candidates:
            return
        when = max(min(candidates), clock.now())
        if when > limit:
            return
        clock.advance_to(when)
        sched.round(flush=True, flush_unschedulable=when % UNSCHEDULABLE_FLUSH_PERIOD == 0, cycles=0)
