"""The state the Scheduler's parts share (``EventHandlers``, ``ScheduleOne``, ``ScheduleOnePodGroup``),
and the methods one part calls in another, as one mypyc trait: ``Scheduler`` holds the state and
the parts implement the methods, so that every part compiles (a trait may declare attributes; a
mixin with type-only stubs does not compile)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import trait

from kubesched.api.pod import PodInfo
from kubesched.client import ClusterClient
from kubesched.clock import Clock
from kubesched.health import LoopHealth
from kubesched.scheduler.binding import Binding
from kubesched.scheduler.cache import Cache
from kubesched.scheduler.extender import HTTPExtender
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.waiting_pods import WaitingPods
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.metrics import SchedulerMetrics, Stats
from kubesched.scheduler.queue import SchedulingQueue
from kubesched.scheduler.queue_podgroups import QueuedPodGroupInfo
from kubesched.scheduler.resultstore import PodResults
from kubesched.scheduler.schedule_pod import Algorithm


@dataclass(slots=True)
class Explanation:
    """One scheduling attempt of a pod as ``--explain`` shows it: its results in
    kube-scheduler-simulator's shapes (kube-scheduler-simulator's ``result-history`` keeps one
    per attempt), when it ran, and its total score per node."""

    results: PodResults
    attempt: int = 0
    time: float = 0.0
    total: dict[str, int] = field(default_factory=dict)
    # the node Opportunistic Batching hinted and the pod took: only it was filtered, nothing scored
    hint: str | None = None


@trait
class SchedulerParts:
    """What ``Scheduler`` holds for its parts, and what each part calls in another."""

    client: ClusterClient
    clock: Clock
    cache: Cache
    queue: SchedulingQueue
    listers: Listers
    profiles: dict[str, Framework]
    binding: Binding
    waiting_pods: WaitingPods
    metrics: SchedulerMetrics
    algorithm: Algorithm
    extenders: list[HTTPExtender]
    stats: Stats
    cluster_generation: int
    explain_keys: set[str]
    explanations: dict[str, list[Explanation]]
    health: LoopHealth
    write_results: bool  # kube-scheduler-simulator's annotations on every pod (scheduler/resultstore.py)
    nominate_expected: bool  # NominatedNodeNameForExpectation: nominatedNodeName before a slow binding
    results_node_limit: int
    last_message: dict[str, str]
    _pod_infos: dict[str, PodInfo]
    _custom_events: dict[str, str]

    def _framework_for(self, pod: PodInfo) -> Framework | None:
        raise NotImplementedError  # Scheduler's

    def _parse_pod(self, obj: dict[str, Any]) -> PodInfo | None:
        raise NotImplementedError  # EventHandlers'

    def _schedule_pod_group(self, group: QueuedPodGroupInfo) -> None:
        raise NotImplementedError  # ScheduleOnePodGroup's
