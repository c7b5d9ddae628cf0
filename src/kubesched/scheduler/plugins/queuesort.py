"""PrioritySort (QueueSort): higher priority first, then earlier queue timestamp."""

from __future__ import annotations

from typing import Any

from kubesched.framework.interface import QueueSortPlugin


class PrioritySort(QueueSortPlugin):
    name = "PrioritySort"

    def less(self, a: Any, b: Any) -> bool:
        pa, pb = a.pod.priority, b.pod.priority
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)

    def sort_key(self, qpod: Any) -> Any:
        return (-qpod.pod.priority, qpod.timestamp)
