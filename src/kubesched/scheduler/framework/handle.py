"""The scheduler's implementation of the public ``kubesched.framework.Handle``; in-tree plugins
also reach the mutable cache and the queue through it."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubesched.features import FeatureGates
from kubesched.framework.nodes import NodeInfo, NodeTableView
from kubesched.scheduler.binding import Binding, Done, InlineBinding, Work
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from kubesched.client import ClusterClient
    from kubesched.clock import Clock
    from kubesched.scheduler.cache import Cache
    from kubesched.scheduler.extender import HTTPExtender
    from kubesched.scheduler.framework.waiting_pods import WaitingPods
    from kubesched.scheduler.metrics import SchedulerMetrics
    from kubesched.scheduler.queue import SchedulingQueue


class Handle:
    """``frameworkImpl``'s Handle side: shared services for the plugins of one scheduler, complete
    when plugins are built (``NewFramework``'s options: client, listers, metrics recorder,
    extenders, features); only the nominator, the queue, comes after them, as upstream's
    ``SetPodNominator``."""

    def __init__(
        self,
        client: ClusterClient,
        cache: Cache,
        waiting_pods: WaitingPods,
        clock: Clock,
        *,
        listers: Listers | None = None,
        rng: random.Random | None = None,
        metrics: SchedulerMetrics | None = None,
        extenders: list[HTTPExtender] | None = None,
        features: FeatureGates | None = None,
        background: Binding | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self._snapshot = Snapshot(cache)
        self.waiting_pods = waiting_pods
        self.clock = clock
        self.queue: SchedulingQueue | None = None  # the nominator (``SetPodNominator``)
        self.rng = rng if rng is not None else random.Random(0)  # preemption's candidate offset
        self.listers = listers if listers is not None else Listers()  # namespaces, services, controllers
        self.metrics = metrics  # DefaultPreemption counts its attempts; frameworks record into it
        self.extenders = extenders if extenders is not None else []  # for preemption's ProcessPreemption
        # what in-tree plugins' factories get as feature.Features
        self.features = features if features is not None else FeatureGates()
        self._background: Binding = background if background is not None else InlineBinding()

    def go(self, work: Work, done: Done, start: Callable[[], None] | None = None) -> None:
        """Run ``work`` as upstream starts a goroutine from a cycle (preemption's): once the
        cycle is over, where binding cycles run (threads against an API server, else inline);
        ``start`` first and ``done`` with its status run on the scheduler's thread (what touches
        the scheduler's state: waiting pods, the queue)."""
        self.clock.call_at(self.clock.now(), functools.partial(_begin, self._background, work, done, start))

    @property
    def snapshot(self) -> Snapshot:
        """The nodes and pods plugins read (``SnapshotSharedLister``)."""
        return self._snapshot

    @property
    def nominator(self) -> SchedulingQueue | None:
        return self.queue

    def node_info(self, nodes: NodeTableView, row: int) -> NodeInfo:
        """A per-node view of one row (for per-node plugins)."""
        name = nodes.names[row]
        spec = nodes.specs[row]
        requested = {r: int(nodes.requested[c, row]) for r, c in nodes.res_index.items() if nodes.requested[c, row]}
        allocatable = {r: int(nodes.alloc[c, row]) for r, c in nodes.res_index.items()}
        allocatable["pods"] = int(nodes.alloc_pods[row])
        node = self.cache.node_object(name) or {"metadata": {"name": name}}
        return NodeInfo(node, name, dict(spec.labels), list(self.cache.pods_on(name)), allocatable, requested)


def internal(handle: object) -> Handle:
    """The scheduler's own Handle behind the public Protocol, for in-tree plugins that read the
    cache's internals (the pod table)."""
    assert isinstance(handle, Handle), "an in-tree plugin needs the scheduler's Handle"
    return handle


def _begin(background: Binding, work: Work, done: Done, start: Callable[[], None] | None) -> None:
    """``Handle.go``'s work started once the cycle is over (a function of the module with its
    arguments bound, not a closure: compiled, a closure and its environment hold each other)."""
    if start is not None:
        start()
    background.submit(work, done)
