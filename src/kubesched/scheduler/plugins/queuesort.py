"""PrioritySort (QueueSort): higher priority first, then earlier queue timestamp; a pod group's
entity sorts by its PodGroup's priority."""

from __future__ import annotations

from kubesched.framework.interface import QueuedPodInfo, QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    name = "PrioritySort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = a.priority, b.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qpod: QueuedPodInfo) -> tuple[int, float]:
        return (-qpod.priority, qpod.timestamp)
