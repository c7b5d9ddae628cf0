"""A pod in the scheduling queue (``framework.QueuedPodInfo``): the pod and its attempt
bookkeeping, as the queue and its pod groups hold it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.events import ClusterEvent
from kubesched.framework.status import Status


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the queue with its attempt bookkeeping (``framework.QueuedPodInfo``)."""

    pod: PodInfo
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_count: int = 0
    consecutive_errors: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    gated_status: Status | None = None
    where: str = ""
    seq: int = 0
    failed_at_generation: int = -1
    attempt_started: float = 0.0  # wall time the current attempt began (attempt duration metrics)
    # the order the queue first saw it in: breaks ties between equal timestamps (a virtual clock
    # standing still) as distinct creation times would in a cluster
    order: int = 0
    # cluster events seen while the pod was in flight (``inFlightEvents``): checked against its
    # queueing hints when the attempt fails, so a change made during the cycle is not lost
    in_flight_events: list[tuple[ClusterEvent, Any, Any]] = field(default_factory=list)

    @property
    def uid(self) -> str:
        return self.pod.uid

    @property
    def priority(self) -> int:
        return self.pod.priority
