"""A pod in the scheduling queue (``framework.QueuedPodInfo``): the pod and its attempt
bookkeeping, as the queue and its pod groups hold it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.events import ClusterEvent
from kubesched.framework.status import Status


@dataclass(init=False, slots=True, eq=False)
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

    def __init__(
        self,
        pod: PodInfo,
        timestamp: float,
        initial_attempt_timestamp: float | None = None,
        attempts: int = 0,
        unschedulable_count: int = 0,
        consecutive_errors: int = 0,
        unschedulable_plugins: set[str] | None = None,
        pending_plugins: set[str] | None = None,
        gating_plugin: str = "",
        gated_status: Status | None = None,
        where: str = "",
        seq: int = 0,
        failed_at_generation: int = -1,
        attempt_started: float = 0.0,
        order: int = 0,
        in_flight_events: list[tuple[ClusterEvent, Any, Any]] | None = None,
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.pod = pod
        self.timestamp = timestamp
        self.initial_attempt_timestamp = initial_attempt_timestamp
        self.attempts = attempts
        self.unschedulable_count = unschedulable_count
        self.consecutive_errors = consecutive_errors
        self.unschedulable_plugins = set() if unschedulable_plugins is None else unschedulable_plugins
        self.pending_plugins = set() if pending_plugins is None else pending_plugins
        self.gating_plugin = gating_plugin
        self.gated_status = gated_status
        self.where = where
        self.seq = seq
        self.failed_at_generation = failed_at_generation
        self.attempt_started = attempt_started
        self.order = order
        self.in_flight_events = [] if in_flight_events is None else in_flight_events

    @property
    def uid(self) -> str:
        return self.pod.uid

    @property
    def priority(self) -> int:
        return self.pod.priority
