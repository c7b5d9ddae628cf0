"""``Handle``: what a plugin may reach beyond its arguments (upstream's ``fwk.Handle``): the
cluster client and its event recorder, a snapshot of the nodes and their pods, listers of the
other objects the scheduler watches, the pods waiting at Permit, the nominator, the clock.

These are Protocols: the scheduler passes its own implementations, a test may pass any object
with these members.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kubesched.api.pod import PodInfo
from kubesched.client.interface import ClusterClient
from kubesched.clock import Clock
from kubesched.framework.nodes import NodeInfo, NodeTableView


class Snapshot(Protocol):
    """``SharedLister``: the nodes and their pods as this cycle sees them."""

    @property
    def table(self) -> NodeTableView: ...

    def pods_on(self, node: str) -> list[PodInfo]: ...

    def node_object(self, name: str) -> dict[str, Any] | None:
        """The Node as the scheduler last saw it."""
        ...

    def is_assumed(self, uid: str) -> bool:
        """Whether the pod is on its node by a scheduling cycle's assumption, not yet seen bound."""
        ...

    def add_pod_listener(self, fn: Callable[[str, PodInfo, str, bool], None]) -> None:
        """Call ``fn(event, pod, node, assumed)`` when a pod arrives on a node (``"add"``: assumed
        by a cycle, or seen bound) or leaves it (``"remove"``): for plugins that keep per-node
        state of their own beside the node table."""
        ...


class Listers(Protocol):
    """The informer listers of the objects plugins read that are not nodes or pods (Namespace,
    Service, ReplicaSet, StatefulSet, ReplicationController, PodDisruptionBudget,
    PriorityClass, ResourceClaim, DeviceClass, ResourceSlice...)."""

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None: ...

    def all(self, kind: str) -> list[dict[str, Any]]: ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None: ...


class WaitingPod(Protocol):
    """A pod parked at Permit (``fwk.WaitingPod``)."""

    pod: PodInfo

    def get_pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class WaitingPods(Protocol):
    """``IterateOverWaitingPods`` / ``GetWaitingPod`` / ``RejectWaitingPod``."""

    def get(self, uid: str) -> WaitingPod | None: ...

    def reject(self, uid: str, plugin: str = "", message: str = "removed") -> bool: ...


class Extender(Protocol):
    """``fwk.Extender``: one configured HTTP extender, as preemption consults it."""

    @property
    def name(self) -> str: ...

    def is_interested(self, pod: PodInfo) -> bool: ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    def process_preemption(
        self, pod: PodInfo, victims: dict[str, tuple[list[dict[str, Any]], int]]
    ) -> dict[str, tuple[list[str], int]]:
        """Node → (victim pods, PDB violations) in; node → (victim UIDs, PDB violations) out."""
        ...


class Counter(Protocol):
    def inc(self, *labels: str, by: float = 1.0) -> None: ...


class Observer(Protocol):
    def observe(self, value: float, *labels: str) -> None: ...


class MetricsRecorder(Protocol):
    """The scheduler's metrics a plugin adds to (DefaultPreemption counts its attempts and
    victims, Opportunistic Batching its attempts and flushes); upstream's ``MetricsRecorder``."""

    @property
    def preemption_attempts(self) -> Counter: ...

    @property
    def preemption_victims(self) -> Observer: ...

    @property
    def batch_attempts(self) -> Counter: ...

    @property
    def batch_cache_flushed(self) -> Counter: ...


class Nominator(Protocol):
    """``PodNominator``: pods nominated to a node by preemption, not yet bound."""

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]: ...


class Handle(Protocol):
    """``fwk.Handle`` as a plugin's factory receives it."""

    @property
    def client(self) -> ClusterClient:
        """The ClientSet, and the EventRecorder through ``client.record_event``."""
        ...

    @property
    def listers(self) -> Listers: ...

    @property
    def waiting_pods(self) -> WaitingPods: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def rng(self) -> random.Random:
        """Seeded by the scheduler: random choices a run can repeat."""
        ...

    @property
    def extenders(self) -> Sequence[Extender]:
        """The configured HTTP extenders (preemption asks them)."""
        ...

    @property
    def metrics(self) -> MetricsRecorder | None:
        """The scheduler's metrics, for plugins that add to them (None when not recorded)."""
        ...

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def nominator(self) -> Nominator | None: ...

    def node_info(self, nodes: NodeTableView, row: int) -> NodeInfo:
        """The per-node view of one row of ``nodes``."""
        ...
