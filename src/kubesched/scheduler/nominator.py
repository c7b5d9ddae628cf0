"""The nominator (``pkg/scheduler/backend/queue/nominator.go``): pods that preemption nominated
to a node and that are not bound yet, which Filter accounts for on that node (a nominated pod of
equal or higher priority is added there first)."""

from __future__ import annotations

from collections.abc import Callable

from mypy_extensions import trait

from kubesched.api.pod import PodInfo
from kubesched.scheduler.podtable import PodTable


@trait
class Nominator:
    """Nominated pods by node; a part of the scheduling queue (a mypyc trait: the queue compiles)."""

    nominated: dict[str, list[PodInfo]]
    # told of every nomination change: (pod, node) when added, (uid, None) when removed
    on_nominated: Callable[[PodInfo | str, str | None], None] | None
    nominated_table: PodTable | None  # the cache's PodTable of nominated pods, when wired
    _nominated_node: dict[str, str]

    def _init_nominator(
        self,
        on_nominated: Callable[[PodInfo | str, str | None], None] | None,
        nominated_table: PodTable | None,
    ) -> None:
        self.nominated = {}
        self.on_nominated = on_nominated
        self.nominated_table = nominated_table
        self._nominated_node = {}

    def add_nominated(self, pod: PodInfo, node: str) -> None:
        self.delete_nominated(pod.uid)
        if not node:
            return
        self._nominated_node[pod.uid] = node
        self.nominated.setdefault(node, []).append(pod)
        if self.on_nominated is not None:
            self.on_nominated(pod, node)

    def delete_nominated(self, uid: str) -> None:
        node = self._nominated_node.pop(uid, None)
        if node is None:
            return
        if self.on_nominated is not None:
            self.on_nominated(uid, None)
        pods = [p for p in self.nominated.get(node, []) if p.uid != uid]
        if pods:
            self.nominated[node] = pods
        else:
            self.nominated.pop(node, None)

    def nominated_node_of(self, uid: str) -> str:
        return self._nominated_node.get(uid, "")

    def nominated_pods_for_node(self, node: str) -> list[PodInfo]:
        return list(self.nominated.get(node, ()))
