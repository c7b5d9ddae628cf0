"""The Snapshot (``pkg/scheduler/backend/cache/snapshot.go``): the nodes and their pods as a
scheduling cycle reads them, what upstream's ``SharedLister`` serves plugins.

Upstream copies the NodeInfos that changed from the cache into its Snapshot at the start of each
cycle (``UpdateSnapshot``), because informers write the cache from other goroutines. Here one
thread owns the cache and applies informer events between cycles only, so the cache's columns
(``NodeTable``, ``PodTable``) already are the cycle's snapshot and no copy is taken; this class
is the read-only face of them that plugins get through ``Handle.snapshot``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubesched.api.pod import PodInfo
from kubesched.scheduler.nodetable import NodeTable

if TYPE_CHECKING:
    from kubesched.scheduler.cache import Cache


class Snapshot:
    """The cache's nodes and pods as of the running cycle, read-only (``framework.Snapshot``)."""

    __slots__ = ("__weakref__", "_cache")

    def __init__(self, cache: Cache) -> None:
        self._cache = cache

    @property
    def table(self) -> NodeTable:
        """Every node's columns (``NodeInfoLister().List()`` as arrays)."""
        return self._cache.table

    def pods_on(self, node: str) -> list[PodInfo]:
        """The pods bound or assumed on ``node`` (``NodeInfo.Pods``)."""
        return self._cache.pods_on(node)

    def node_object(self, name: str) -> dict[str, Any] | None:
        """The Node as the scheduler last saw it (``NodeInfo.Node()``)."""
        return self._cache.node_object(name)

    def is_assumed(self, uid: str) -> bool:
        """Assumed by a cycle, its binding not yet seen (``Cache.IsAssumedPod``)."""
        return self._cache.is_assumed(uid)

    def add_pod_listener(self, fn: Callable[[str, PodInfo, str, bool], None]) -> None:
        """Call ``fn(event, pod, node, assumed)`` as pods arrive on and leave nodes."""
        self._cache.add_pod_listener(fn)
